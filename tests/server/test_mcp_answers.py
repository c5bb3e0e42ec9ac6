"""What the MCP tools answer, over stdio with the SDK's own client: structuredContent and, for the
clients that read only text, a text block (a line saying what it holds, then the same JSON), under
a size clients accept (paged), typed, annotated, with argument errors that say what to fix."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

from mcp.client.session import ClientSession
from mcp_types import CallToolResult, TextContent

from session_migrator import Message
from session_migrator.mcp._tools import SESSIONS_PAGE
from session_migrator.store import open_store

Connect = Callable[..., AbstractAsyncContextManager[ClientSession]]
READ_ONLY = {"model_context_window", "list_known_models", "migrate_session", "session_usage"}


def _data(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def _text(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


def _long_session(messages: int = 300) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    for i in range(messages // 2):
        out.append({"role": "user", "content": f"question {i}: " + "lorem ipsum dolor " * 90})
        out.append({"role": "assistant", "content": f"answer {i}: " + "sit amet " * 60})
    return out


async def test_every_tool_publishes_a_typed_output_schema_and_honest_annotations(
    connect: Connect,
) -> None:
    async with connect() as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    for name, tool in tools.items():
        schema = tool.output_schema
        assert schema is not None, name
        assert schema.get("type") == "object", name
        assert schema.get("properties"), name
        annotations = tool.annotations
        assert annotations is not None, name
        assert annotations.read_only_hint is (
            name
            in READ_ONLY | {"session_list", "read_context", "list_placeholders", "user_facts_list"}
        ), name
        if annotations.read_only_hint:
            assert annotations.idempotent_hint is True, name
    assert tools["session_append"].annotations.destructive_hint is False  # type: ignore[union-attr]
    context = tools["session_context"].output_schema or {}
    assert {"decision", "report", "messages", "page"} <= set(context["properties"])


async def test_a_big_answer_is_text_too_for_clients_that_read_only_text(connect: Connect) -> None:
    big = _long_session(300)
    async with connect() as session:
        result = await session.call_tool(
            "migrate_session",
            {"messages_json": big, "target_model": "gpt-4", "max_answer_tokens": 200_000},
        )
    data = _data(result)
    assert data["decision"] == "compressed"
    line, body = _text(result).split("\n", 1)
    assert len(line) < 400
    assert line.startswith("compressed: ")
    # the text carries the answer's JSON, compact: a client reading only text gets everything
    assert json.loads(body) == data
    assert len(body) <= len(json.dumps(data))
    wire = len(result.model_dump_json(by_alias=True, exclude_none=True))
    assert wire < len(json.dumps(data)) * 2.1  # the payload twice at most, nothing more


async def test_session_context_is_paged_under_the_cap_and_offers_the_report_alone(
    connect: Connect, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'mcp.db'}"
    log = _long_session(300)
    async with connect("--store", store) as session:
        _data(
            await session.call_tool("session_append", {"session_id": "big", "messages_json": log})
        )
        first = _data(
            await session.call_tool("session_context", {"session_id": "big", "model": "gpt-4o"})
        )
        pages = [first]
        while pages[-1]["page"]["next_offset"] is not None:
            offset = pages[-1]["page"]["next_offset"]
            pages.append(
                _data(
                    await session.call_tool(
                        "session_context",
                        {"session_id": "big", "model": "gpt-4o", "offset": offset},
                    )
                )
            )
        alone = _data(
            await session.call_tool(
                "session_context",
                {"session_id": "big", "model": "gpt-4o", "include_messages": False},
            )
        )
        limited = _data(
            await session.call_tool(
                "session_context", {"session_id": "big", "model": "gpt-4o", "limit": 5}
            )
        )
    assert first["decision"] == "fits"
    assert len(json.dumps(first)) < 25_000 * 3  # under ~25k tokens, what Claude Code accepts
    page = first["page"]
    assert page["complete"] is False
    assert page["total"] == len(log)
    assert f"offset={page['next_offset']}" in page["hint"]
    assert len(pages) > 1
    assert [m for p in pages for m in p["messages"]] == log  # every message, once, in order
    assert pages[-1]["page"]["complete"] is True
    assert alone["messages"] == []
    assert alone["report"]["decision"] == "fits"
    assert len(json.dumps(alone)) < 5_000
    assert [m["content"] for m in limited["messages"]] == [m["content"] for m in log[:5]]
    assert limited["page"]["next_offset"] == 5


async def test_wrong_argument_types_say_what_to_pass(connect: Connect) -> None:
    ok = [{"role": "user", "content": "hi"}]
    async with connect() as session:
        bad_limit = await session.call_tool("list_known_models", {"limit": "many"})
        bad_offset = await session.call_tool(
            "migrate_session", {"messages_json": ok, "target_model": "gpt-4o", "offset": -1}
        )
        bad_strategy = await session.call_tool(
            "migrate_session", {"messages_json": ok, "target_model": "gpt-4o", "strategy": 3}
        )
        missing = await session.call_tool("migrate_session", {"messages_json": ok})
    for result, needle in [
        (bad_limit, "'limit' must be a whole number"),
        (bad_offset, "'offset' must be a number (at least 0), got -1"),
        (bad_strategy, "'strategy' must be one of 'auto', 'trim', 'summarize' or 'recall'"),
        (missing, "'target_model' is required"),
    ]:
        assert result.is_error
        text = _text(result)
        assert needle in text, text
        assert "pydantic" not in text
        assert "validation error" not in text


async def test_session_append_refuses_another_workspace(connect: Connect, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'mcp.db'}"
    first = [{"role": "user", "content": "hello", "id": "m1"}]
    more = [{"role": "assistant", "content": "hi", "id": "m2"}]
    async with connect("--store", store) as session:
        made = _data(
            await session.call_tool(
                "session_append", {"session_id": "s", "messages_json": first, "workspace": "team"}
            )
        )
        refused = await session.call_tool(
            "session_append", {"session_id": "s", "messages_json": more, "workspace": "other"}
        )
        same = _data(
            await session.call_tool(
                "session_append", {"session_id": "s", "messages_json": more, "workspace": "team"}
            )
        )
        listed = _data(await session.call_tool("session_list", {"workspace": "other"}))
    assert made["workspace"] == "team"
    assert refused.is_error
    assert "in workspace 'team', not 'other'" in _text(refused)
    assert same["message_count"] == 2  # the refused call stored nothing
    assert listed["count"] == 0


def test_the_server_keeps_the_fitted_views_of_a_few_sessions_only() -> None:
    from session_migrator.mcp_server import SessionTools

    tools = SessionTools(store="memory://", max_sessions=2)
    try:
        for i in range(6):
            tools.session_append(f"s{i}", [{"role": "user", "content": f"hello {i}"}])
            tools.session_context(f"s{i}", "gpt-4o")
        tools.session_context("s4", "gpt-4o")  # the newest stay
        held = {key[0] for key in tools._fitters}
        assert held == {"s4", "s5"}
        assert tools.session_context("s0", "gpt-4o")["messages"][0]["content"] == "hello 0"
    finally:
        tools.close()


def test_a_message_larger_than_the_cap_is_cut_and_says_how_to_get_it_whole() -> None:
    from session_migrator.mcp_server import SessionTools

    huge = "alpha beta gamma delta " * 8_000  # about 32,000 tokens: fits gpt-4o, not the cap
    tools = SessionTools(store="memory://")
    try:
        tools.session_append("s", [{"role": "user", "content": huge}])
        cut = tools.session_context("s", "gpt-4o")
        assert len(json.dumps(cut)) < 25_000 * 3
        assert cut["messages"][0]["content"].endswith("[... cut here]")
        assert cut["page"]["complete"] is False
        raised = int(cut["page"]["hint"].split("max_answer_tokens=")[1].split()[0])
        whole = tools.session_context("s", "gpt-4o", max_answer_tokens=raised)
        assert whole["messages"][0]["content"] == huge
        assert whole["page"]["complete"] is True
    finally:
        tools.close()


async def test_session_list_is_paged(connect: Connect, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'many.db'}"
    with open_store(store) as opened:
        for i in range(SESSIONS_PAGE + 30):
            opened.append(f"s{i:04d}", [Message("user", f"hello {i}", id="m")])
    async with connect("--store", store) as session:
        first = _data(await session.call_tool("session_list", {}))
        rest = _data(await session.call_tool("session_list", {"offset": first["next_offset"]}))
        small = _data(await session.call_tool("session_list", {"limit": 7, "offset": 3}))
        refused = await session.call_tool("session_list", {"limit": 0})
    assert first["count"] == SESSIONS_PAGE + 30
    assert first["returned"] == len(first["sessions"]) == SESSIONS_PAGE
    assert first["next_offset"] == SESSIONS_PAGE
    assert rest["returned"] == 30
    assert rest["next_offset"] is None
    ids = [s["id"] for s in first["sessions"] + rest["sessions"]]
    assert sorted(ids) == [f"s{i:04d}" for i in range(SESSIONS_PAGE + 30)]
    assert [s["id"] for s in small["sessions"]] == ids[3:10]
    assert small["next_offset"] == 10
    assert refused.is_error


def test_anthropic_tool_blocks_in_openai_messages_are_refused_with_the_way_out() -> None:
    from session_migrator.mcp_server import ArgumentError, SessionTools
    from session_migrator.store import open_store

    tools = SessionTools(open_store("memory://"))
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    messages = [{"role": "user", "content": "list"}, {"role": "assistant", "content": [call]}]
    with pytest.raises(ArgumentError, match=r"Anthropic-style 'tool_use' block") as caught:
        tools.migrate_session(messages, "gpt-4")
    assert "tool_calls" in str(caught.value)
    assert "role" in str(caught.value)
