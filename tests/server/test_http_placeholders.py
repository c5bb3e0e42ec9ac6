"""The placeholder routes over HTTP (a real uvicorn server, httpx): compress a range, list the
placeholders in force, restore one; owner-checked; problem documents on bad input (issue 44)."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx

from benchmarks._served import Served
from tests.server.test_http_api import ALICE, BOB, _as, _turns, serve  # noqa: F401


def test_compress_list_restore_over_http(serve: Callable[..., Served]) -> None:  # noqa: F811
    api = serve()
    turns = [*_turns(6), {"role": "user", "content": "And the last day?", "id": "now"}]
    with httpx.Client(base_url=api.url, headers=_as(ALICE), timeout=30) as client:
        assert client.post("/v1/sessions/trip/append", json={"messages": turns}).status_code == 200
        put = client.post(
            "/v1/sessions/trip/compress",
            json={"first_id": "u0", "last_id": "a2", "summary": "museums 0-2 open at nine"},
        )
        assert put.status_code == 200, put.text
        assert put.json()["placeholder"]["id"] == "p1"
        listed = client.get("/v1/sessions/trip/placeholders")
        assert [p["id"] for p in listed.json()["placeholders"]] == ["p1"]
        assert len(listed.text) <= 2_000
        fitted = client.post("/v1/sessions/trip/build_outbound", json={"model": "gpt-4o"}).json()
        texts = [m["content"] for m in fitted["messages"]]
        assert len(texts) == len(turns) - 5
        assert any('restore_context(id="p1")' in t and "museums 0-2" in t for t in texts)
        tool = {"type": "function", "function": {"name": "book", "parameters": {"type": "object"}}}
        whole_request = client.post(
            "/v1/sessions/trip/build_outbound", json={"model": "gpt-4o", "tools": [tool]}
        ).json()
        assert [m["content"] for m in whole_request["messages"]] == texts  # honoured there too

        # bad input: problem documents saying what to do
        overlap = client.post(
            "/v1/sessions/trip/compress", json={"first_id": "a1", "last_id": "u3"}
        )
        assert overlap.status_code == 400
        assert overlap.headers["content-type"] == "application/problem+json"
        assert "overlaps placeholder 'p1'" in overlap.json()["detail"]
        wrong = client.post("/v1/sessions/trip/compress", json={"first_id": 3})
        assert wrong.status_code == 400
        assert "first_id is a non-empty string" in wrong.json()["detail"]
        missing = client.post("/v1/sessions/trip/placeholders/p9/restore")
        assert missing.status_code == 404
        assert missing.json()["kind"] == "PlaceholderNotFoundError"
        assert "in force: p1" in missing.json()["detail"]

        back = client.post("/v1/sessions/trip/placeholders/p1/restore")
        assert back.status_code == 200, back.text
        assert back.json()["placeholder"]["restored"]
        assert client.get("/v1/sessions/trip/placeholders").json()["placeholders"] == []
        whole = client.post("/v1/sessions/trip/build_outbound", json={"model": "gpt-4o"}).json()
        assert len(whole["messages"]) == len(turns)

    # another user's token does not reach the session: 404, as if it did not exist
    with httpx.Client(base_url=api.url, headers=_as(BOB), timeout=30) as client:
        for response in (
            client.get("/v1/sessions/trip/placeholders"),
            client.post("/v1/sessions/trip/compress", json={"first_id": "u0", "last_id": "a0"}),
            client.post("/v1/sessions/trip/placeholders/p1/restore"),
        ):
            assert response.status_code == 404
            assert json.loads(response.text)["kind"] == "SessionNotFoundError"
