"""The HTTP API under a real uvicorn server, called by real clients: httpx (TCP and a Unix
socket) and node's built-in fetch, as a JavaScript agent would."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks._served import Served
from session_migrator.cli import main
from session_migrator.server import ROUTES, Scope, Tokens, TokensError, create_app, openapi

ROOT = Path(__file__).resolve().parents[2]
ALICE, BOB, ADMIN = "alice-token-0123456789", "bob-token-0123456789ab", "admin-token-0123456789"
TOKENS = Tokens({ALICE: Scope(user="alice"), BOB: Scope(user="bob"), ADMIN: Scope()})


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def start(tokens: Tokens | None = TOKENS, socket: str | None = None, **kw: Any) -> Served:
        served = Served(create_app("memory://", tokens=tokens, **kw), socket)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()


def _turns(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You plan trips.", "id": "sys"}]
    for k in range(n):
        out.append({"role": "user", "content": f"Day {k}: what about the museum {k}? " * 8,
                    "id": f"u{k}"})  # fmt: skip
        out.append({"role": "assistant", "content": f"Museum {k} opens at nine. " * 8,
                    "id": f"a{k}"})  # fmt: skip
    return out


def _as(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_append_fit_usage_list_as_a_user(serve: Callable[..., Served]) -> None:
    api = serve()
    with httpx.Client(base_url=api.url, headers=_as(ALICE), timeout=30) as client:
        assert client.get("/v1/healthz").json()["status"] == "ok"
        first = client.post("/v1/sessions/trip/append", json={"messages": _turns(200)})
        assert first.status_code == 200, first.text
        assert first.json()["appended"] == 401
        again = client.post("/v1/sessions/trip/append", json={"messages": _turns(200)[-2:]})
        assert again.json() == {
            "session_id": "trip",
            "received": 2,
            "appended": 0,
            "already_stored": 2,
            "message_count": 401,
        }  # fmt: skip (idempotent by message id)
        fitted = client.post(
            "/v1/sessions/trip/build_outbound", json={"model": "gpt-4", "query": "museum 3?"}
        ).json()
        assert fitted["decision"] == "compressed"
        assert fitted["tokens_after"] <= fitted["budget"]
        with_tools = client.post(
            "/v1/sessions/trip/build_outbound",
            json={
                "model": "gpt-4",
                "max_output_tokens": 1_000,
                "tools": [{"type": "function", "function": {"name": "book", "parameters": {}}}],
            },
        ).json()
        assert with_tools["decision"] == "compressed"
        assert with_tools["report"]["reserved_output"] == 1_000
        migrated = client.post("/v1/migrate", json={"model": "gpt-4", "messages": _turns(200)})
        assert migrated.json()["decision"] == "compressed"
        assert client.get("/v1/sessions").json()["count"] == 1  # (nothing stored)
        usage = client.get("/v1/sessions/trip/usage", params={"model": "gpt-4o"}).json()
        assert usage["messages"] == 401
        assert usage["fits"] is True
        listed = client.get("/v1/sessions").json()
        assert [s["id"] for s in listed["sessions"]] == ["trip"]
        assert listed["sessions"][0]["metadata"] == {"user_id": "alice"}
        page = client.get("/v1/sessions/trip/messages", params={"offset": 400}).json()
        assert page["count"] == 401
        assert page["messages"][0]["content"].startswith("Museum 199")


def test_a_session_is_reachable_by_its_owners_tokens_only(serve: Callable[..., Served]) -> None:
    api = serve()
    with httpx.Client(base_url=api.url, timeout=30) as client:
        ok = client.post("/v1/sessions/s/append", json={"messages": _turns(1)}, headers=_as(ALICE))
        assert ok.status_code == 200
        for method, path in (
            ("GET", "/v1/sessions/s"),
            ("GET", "/v1/sessions/s/messages"),
            ("POST", "/v1/sessions/s/build_outbound"),
            ("GET", "/v1/sessions/s/usage?model=gpt-4o"),
            ("GET", "/v1/sessions/s/messages/u0/context"),
            ("DELETE", "/v1/sessions/s"),
        ):
            answer = client.request(method, path, json={"model": "gpt-4o"}, headers=_as(BOB))
            assert answer.status_code == 404, (method, path, answer.text)
            assert answer.headers["content-type"] == "application/problem+json"
        taken = client.post("/v1/sessions/s/append", json={"messages": _turns(1)}, headers=_as(BOB))
        assert taken.status_code == 404  # (not even appended to)
        assert client.get("/v1/sessions", headers=_as(BOB)).json()["count"] == 0
        assert client.get("/v1/sessions", headers=_as(ADMIN)).json()["count"] == 1
        for headers in ({}, _as("not-a-token-0123456789"), {"Authorization": "Basic x"}):
            refused = client.get("/v1/sessions", headers=headers)
            assert refused.status_code == 401
            assert "Bearer" in refused.json()["detail"]
        assert client.get("/v1/healthz").status_code == 200  # (no token needed)
        erased = client.post("/v1/erase", json={}, headers=_as(ALICE)).json()
        assert erased == {"user_id": "alice", "erased": 1}


def test_an_agent_reads_back_a_shrunk_tool_output(serve: Callable[..., Served]) -> None:
    output = "\n".join(f"row {k}: value {k * 7}" for k in range(3_000))
    turn = [
        {"role": "user", "content": "Dump the table.", "id": "u1"},
        {"role": "assistant", "content": "", "id": "a1", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "dump", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": output, "id": "t1"},
    ]  # fmt: skip
    api = serve()
    with httpx.Client(base_url=api.url, headers=_as(ALICE), timeout=30) as client:
        client.post("/v1/sessions/dump/append", json={"messages": turn}).raise_for_status()
        fitted = client.post("/v1/sessions/dump/build_outbound", json={"model": "gpt-4"}).json()
        shrunk = next(m for m in fitted["messages"] if m["role"] == "tool")
        assert 'read_context(id="t1")' in shrunk["content"]  # the marker names what to read
        page = client.get("/v1/sessions/dump/messages/t1/context?offset=20000&limit=2000")
        missing = client.get("/v1/sessions/dump/messages/nope/context")
        bad = client.get("/v1/sessions/dump/messages/t1/context?offset=-1")
    assert page.status_code == 200, page.text
    assert page.json()["text"].startswith(output[20_000:22_000])
    assert 'read_context(id="t1", offset=22000)' in page.json()["text"]
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert "marker names" in missing.json()["detail"]
    assert bad.status_code == 400


def test_errors_are_problem_documents(serve: Callable[..., Served]) -> None:
    api = serve(max_body=10_000)
    with httpx.Client(base_url=api.url, headers=_as(ALICE), timeout=30) as client:
        client.post("/v1/sessions/p/append", json={"messages": _turns(2)})
        unknown = client.post("/v1/sessions/p/build_outbound", json={"model": "no-such-model-x"})
        assert unknown.status_code == 422
        problem = unknown.json()
        assert problem["kind"] == "UnknownModelError"
        assert problem["status"] == 422
        assert "context_window" in problem["detail"]
        given = client.post(
            "/v1/sessions/p/build_outbound",
            json={"model": "no-such-model-x", "context_window": 100_000},
        )
        assert given.status_code == 200, given.text
        big = client.post("/v1/sessions/p/append", json={"messages": _turns(60)})
        assert big.status_code == 413
        assert big.json()["title"] == "Body too large"
        bad = client.post("/v1/sessions/p/append", content=b"{not json", headers=_as(ALICE))
        assert bad.status_code == 400
        shape = client.post("/v1/sessions/p/append", json={"messages": [{"role": "wizard"}]})
        assert shape.status_code == 400
        assert shape.json()["kind"]
        missing = client.get("/v1/sessions/nope/usage", params={"model": "gpt-4o"})
        assert missing.status_code == 404
        # nothing was lost on the way
        assert client.get("/v1/sessions/p").json()["message_count"] == 5


def test_a_unix_socket(serve: Callable[..., Served], tmp_path: Path) -> None:
    socket = str(tmp_path / "api.sock")
    api = serve(tokens=None, socket=socket)
    transport = httpx.HTTPTransport(uds=socket)
    with httpx.Client(transport=transport, base_url=api.url, timeout=30) as client:
        assert client.get("/v1/healthz").json()["status"] == "ok"
        client.post("/v1/sessions/u/append", json={"messages": _turns(3)})
        assert client.get("/v1/sessions/u").json()["message_count"] == 7


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_javascript_agent_appends_and_fits_with_fetch(serve: Callable[..., Served]) -> None:
    api = serve()
    script = ROOT / "tests" / "server" / "client.mjs"
    done = subprocess.run(
        ["node", str(script), api.url, ALICE],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["appended"] == 121
    assert answer["decision"] == "compressed"
    assert answer["sent"] < 121
    assert answer["last"] == "And the museum?"


def test_the_openapi_document_is_the_apps() -> None:
    document = json.loads((ROOT / "docs" / "openapi.json").read_text(encoding="utf-8"))
    assert document == openapi(), (
        "regenerate: python -m session_migrator.server > docs/openapi.json"
    )
    app = create_app("memory://")
    served = {(m, r.path) for r in app.routes for m in getattr(r, "methods", ()) if m != "HEAD"}
    assert served == {(spec.method, spec.path) for spec in ROUTES}


def test_serve_refuses_a_public_address_without_a_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SESSION_MIGRATOR_API_TOKEN", raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--store", "memory://"]) == 2
    assert "refusing to serve 0.0.0.0 with no token" in capsys.readouterr().err


def test_tokens_from_the_environment_and_a_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"file-token-0123456789": {"workspace": "acme"}}))
    monkeypatch.setenv("SESSION_MIGRATOR_API_TOKEN", "env-token-0123456789ab:user:carol")
    tokens = Tokens.load(path)
    assert tokens.scope_of("file-token-0123456789") == Scope(workspace="acme")
    assert tokens.scope_of("env-token-0123456789ab") == Scope(user="carol")
    assert tokens.scope_of("nope") is None
    monkeypatch.setenv("SESSION_MIGRATOR_API_TOKEN", "short")
    with pytest.raises(TokensError, match="at least 16 characters"):
        Tokens.load()
    path.write_text("[1, 2]")
    monkeypatch.delenv("SESSION_MIGRATOR_API_TOKEN")
    with pytest.raises(TokensError, match="a tokens file is a JSON object"):
        Tokens.load(path)


async def test_mcp_over_streamable_http_behind_the_tokens(serve: Callable[..., Served]) -> None:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    api = serve(mcp=True)
    with httpx.Client(base_url=api.url, headers=_as(ALICE), timeout=30) as client:
        client.post("/v1/sessions/via-http/append", json={"messages": _turns(2)})
        # a user's token does not reach the MCP tools (they reach every session)
        assert client.post("/mcp/", json={}).status_code == 403
        assert client.post("/mcp/", json={}, headers={"Authorization": ""}).status_code == 401
    async with (
        httpx2.AsyncClient(headers=_as(ADMIN), timeout=30) as http,
        streamable_http_client(f"{api.url}/mcp/", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"session_append", "session_context", "session_list"} <= names
        listed = await session.call_tool("session_list", {})
        assert not listed.is_error
        assert listed.structured_content is not None
        assert [s["id"] for s in listed.structured_content["sessions"]] == ["via-http"]
