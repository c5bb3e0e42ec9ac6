"""The placeholder tools over MCP (stdio, the ``mcp`` SDK's client): compress a range, list the
placeholders in force, restore one; session_context honours them (issue 44)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

from tests.server.test_mcp_stdio import Connect, _conversation, _error, _ok


def _ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for k, m in enumerate(messages):
        out.append({**m, "id": f"m{k}"})
    return [*out, {"role": "user", "content": "and now?", "id": "now"}]


async def test_compress_list_restore_over_mcp(connect: Connect) -> None:
    messages = _ids(_conversation(3, size=50))
    async with connect() as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        _ok(
            await session.call_tool(
                "session_append", {"session_id": "s", "messages_json": messages}
            )
        )
        # m1..m5: the first turn and the second's question: widened to keep call_1 with its result
        put = _ok(
            await session.call_tool(
                "compress_context",
                {"session_id": "s", "first_id": "m1", "last_id": "m6", "summary": "two searches"},
            )
        )
        listed = _ok(await session.call_tool("list_placeholders", {"session_id": "s"}))
        fitted = _ok(
            await session.call_tool("session_context", {"session_id": "s", "model": "gpt-4o"})
        )
        overlap = _error(
            await session.call_tool(
                "compress_context", {"session_id": "s", "first_id": "m2", "last_id": "m3"}
            )
        )
        reversed_ = _error(
            await session.call_tool(
                "compress_context", {"session_id": "s", "first_id": "m9", "last_id": "m1"}
            )
        )
        unknown = _error(
            await session.call_tool("restore_context", {"session_id": "s", "id": "p9"})
        )
        nosession = _error(await session.call_tool("list_placeholders", {"session_id": "nope"}))
        back = _ok(await session.call_tool("restore_context", {"session_id": "s", "id": "p1"}))
        whole = _ok(
            await session.call_tool("session_context", {"session_id": "s", "model": "gpt-4o"})
        )
        empty = _ok(await session.call_tool("list_placeholders", {"session_id": "s"}))
    for name in ("compress_context", "list_placeholders", "restore_context"):
        assert len(tools[name].description or "") < 250
        assert "500 tokens" in (tools[name].description or "")
    assert tools["list_placeholders"].annotations.read_only_hint is True  # type: ignore[union-attr]
    p = put["placeholder"]
    assert (p["id"], p["first_message_id"], p["last_message_id"]) == ("p1", "m1", "m7")
    assert [x["id"] for x in listed["placeholders"]] == ["p1"]
    assert len(json.dumps(listed)) <= 2_000
    texts = [m["content"] for m in fitted["messages"]]
    assert any("two searches" in (t or "") and 'restore_context(id="p1")' in t for t in texts)
    assert len(fitted["messages"]) == len(messages) - 6
    assert "overlaps placeholder 'p1'" in overlap
    assert "swap them" in reversed_
    assert "no placeholder 'p9' in force" in unknown
    assert "nope" in nosession
    assert back["placeholder"]["restored"]
    assert len(whole["messages"]) == len(messages)
    assert empty["placeholders"] == []
