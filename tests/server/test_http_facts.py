"""A user's facts over HTTP (a real uvicorn server, httpx): GET/PUT/DELETE
/v1/users/{user_id}/facts[/{key}], a user's token reaching that user's facts only (issue 43)."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from benchmarks._served import Served
from session_migrator.server._auth import Scope, Tokens
from tests.server.test_http_api import ADMIN, ALICE, BOB, _as, serve  # noqa: F401

ACME = "acme-token-0123456789abc"


def test_a_user_lists_sets_and_deletes_their_facts(serve: Callable[..., Served]) -> None:  # noqa: F811
    api = serve()
    with httpx.Client(base_url=api.url, headers=_as(ALICE), timeout=30) as client:
        assert client.get("/v1/users/alice/facts").json() == {
            "user_id": "alice",
            "count": 0,
            "facts": [],
        }
        put = client.put("/v1/users/alice/facts/i%20am%20vegetarian", json={"text": "I'm vegan."})
        assert put.status_code == 200, put.text
        assert put.json()["fact"]["key"] == "i am vegetarian"
        assert put.json()["fact"]["source_id"] is None
        again = client.put(
            "/v1/users/alice/facts/i%20am%20vegetarian", json={"text": "I eat fish."}
        )
        assert again.json()["fact"]["text"] == "I eat fish."
        listed = client.get("/v1/users/alice/facts").json()
        assert [(f["key"], f["text"]) for f in listed["facts"]] == [
            ("i am vegetarian", "I eat fish.")
        ]
        assert listed["facts"][0]["stated_at"]

        empty = client.put("/v1/users/alice/facts/diet", json={"text": " "})
        assert empty.status_code == 400
        assert empty.headers["content-type"] == "application/problem+json"
        assert '{"text"' in empty.json()["detail"]

        # another user's facts: 404, as if they had none
        for response in (
            client.get("/v1/users/bob/facts"),
            client.put("/v1/users/bob/facts/diet", json={"text": "I'm vegan."}),
            client.delete("/v1/users/bob/facts/diet"),
        ):
            assert response.status_code == 404, response.text
            assert response.json()["kind"] == "FactNotFoundError"

    with httpx.Client(base_url=api.url, headers=_as(BOB), timeout=30) as client:
        assert client.get("/v1/users/alice/facts").status_code == 404
        assert client.delete("/v1/users/alice/facts/i%20am%20vegetarian").status_code == 404
    with httpx.Client(base_url=api.url, headers=_as(ADMIN), timeout=30) as client:
        assert client.get("/v1/users/alice/facts").json()["count"] == 1  # an unscoped token
    with httpx.Client(base_url=api.url, headers=_as(ALICE), timeout=30) as client:
        gone = client.delete("/v1/users/alice/facts/i%20am%20vegetarian")
        assert gone.json() == {"user_id": "alice", "key": "i am vegetarian", "deleted": True}
        missing = client.delete("/v1/users/alice/facts/i%20am%20vegetarian")
        assert missing.status_code == 404
        assert "GET /v1/users/alice/facts" in missing.json()["detail"]
        assert client.get("/v1/users/alice/facts").json()["count"] == 0


def test_a_workspace_token_reaches_no_users_facts(serve: Callable[..., Served]) -> None:  # noqa: F811
    api = serve(Tokens({ACME: Scope(workspace="acme")}))
    with httpx.Client(base_url=api.url, headers=_as(ACME), timeout=30) as client:
        assert client.get("/v1/users/alice/facts").status_code == 404
    with httpx.Client(base_url=api.url, timeout=30) as client:
        assert client.get("/v1/users/alice/facts").status_code == 401
