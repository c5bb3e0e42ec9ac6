"""The MCP server over stdio, driven by the ``mcp`` SDK's stdio client in a subprocess."""

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

Connect = Callable[..., AbstractAsyncContextManager[ClientSession]]

TOOLS = {
    "model_context_window",
    "list_known_models",
    "migrate_session",
    "session_append",
    "session_context",
    "session_usage",
    "session_list",
    "handoff_session",
    "import_session",
    "read_context",
    "compress_context",
    "list_placeholders",
    "restore_context",
    "user_facts_list",
    "user_fact_set",
    "user_fact_delete",
}


def _ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, _text(result)
    data = result.structured_content
    assert isinstance(data, dict)
    # one text block for the clients that read only text: a line saying what the answer holds,
    # then the answer's JSON (what structuredContent holds), compact
    assert len(result.content) == 1
    line, body = _text(result).split("\n", 1)
    assert len(line) < 400
    assert json.loads(body) == data
    assert "\n" not in body
    return data


def _error(result: CallToolResult) -> str:
    assert result.is_error
    return _text(result)


def _text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def _conversation(turns: int, size: int = 1) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    for i in range(turns):
        messages += [
            {"role": "user", "content": f"question {i} " + "words " * size},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": "search", "arguments": json.dumps({"q": i})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"call_{i}", "content": "result " * size},
            {"role": "assistant", "content": f"answer {i}"},
        ]
    return messages


async def test_lists_every_tool_with_typed_described_parameters(connect: Connect) -> None:
    async with connect() as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description, tool.name
        assert "\n    " not in tool.description  # docstrings are dedented
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    migrate = tools["migrate_session"].input_schema
    assert set(migrate["required"]) == {"messages_json", "target_model"}
    assert migrate["properties"]["strategy"]["enum"] == ["auto", "trim", "summarize", "recall"]
    assert tools["model_context_window"].annotations is not None
    assert tools["model_context_window"].annotations.read_only_hint is True


async def test_model_tools(connect: Connect) -> None:
    async with connect() as session:
        window = _ok(await session.call_tool("model_context_window", {"model": "openai/gpt-5"}))
        listed = _ok(
            await session.call_tool(
                "list_known_models", {"query": "gpt-4o", "provider": "openai", "limit": 2}
            )
        )
        unknown = _error(await session.call_tool("model_context_window", {"model": "gpt-4oo"}))
        empty = _error(await session.call_tool("model_context_window", {"model": ""}))
        missing = _error(await session.call_tool("model_context_window", {}))
        still = _ok(await session.call_tool("model_context_window", {"model": "gpt-4o"}))
    assert window["name"] == "gpt-5"
    assert (window["max_input_tokens"], window["context_window"]) == (272_000, 400_000)
    assert {"max_output_tokens", "tokenizer", "source", "provider"} <= set(window)
    assert listed["returned"] == 2
    assert listed["truncated"] is (listed["count"] > 2)
    assert all("gpt-4o" in m["name"] for m in listed["models"])
    assert "Unknown model 'gpt-4oo'" in unknown
    assert "'gpt-4o'" in unknown  # a close match is suggested
    assert "model" in empty
    assert "model" in missing
    assert still["context_window"] == 128_000  # the server kept serving


async def test_migrate_session_fits_and_compresses(connect: Connect) -> None:
    small = _conversation(2)
    big = _conversation(40, size=400)
    async with connect() as session:
        fits = _ok(
            await session.call_tool(
                "migrate_session", {"messages_json": json.dumps(small), "target_model": "gpt-4o"}
            )
        )
        as_array = _ok(
            await session.call_tool(
                "migrate_session", {"messages_json": small, "target_model": "gpt-4o"}
            )
        )
        squeezed = _ok(
            await session.call_tool(
                "migrate_session",
                {
                    "messages_json": json.dumps(big),
                    "target_model": "gpt-4",
                    "strategy": "trim",
                    "reserve_output_tokens": 1000,
                },
            )
        )
    assert fits["decision"] == "fits"
    assert fits["tokens_before"] == fits["tokens_after"] > 0
    assert fits["messages"] == small  # untouched, ids left out
    assert as_array["tokens_before"] == fits["tokens_before"]
    assert squeezed["decision"] == "compressed"
    report = squeezed["report"]
    assert report["tokens_after"] <= report["budget"] < report["tokens_before"]
    assert report["reserved_output"] == 1000
    assert report["strategy"] == "trim"
    assert report["dropped_ids"]
    out = squeezed["messages"]
    assert out[0]["role"] == "system"
    called = {c["id"] for m in out for c in m.get("tool_calls", ())}
    answered = {m["tool_call_id"] for m in out if m["role"] == "tool"}
    assert called == answered


async def test_migrate_session_bad_arguments_are_tool_errors(
    connect: Connect, server_log: Path
) -> None:
    ok = json.dumps(_conversation(1))
    cases: list[tuple[dict[str, Any], str]] = [
        ({"messages_json": "[{", "target_model": "gpt-4o"}, "not valid JSON (line 1, column 3"),
        ({"messages_json": '{"a": 1}', "target_model": "gpt-4o"}, "expected a JSON list"),
        ({"messages_json": '[{"role": "robot"}]', "target_model": "gpt-4o"}, "message 0"),
        (
            {"messages_json": '[{"role": "tool", "content": "x"}]', "target_model": "gpt-4o"},
            "tool_call_id",
        ),
        ({"messages_json": ok, "target_model": "no-such-model"}, "Unknown model"),
        ({"messages_json": ok, "target_model": "gpt-4o", "strategy": "magic"}, "strategy"),
        (
            {"messages_json": ok, "target_model": "gpt-4o", "reserve_output_tokens": -5},
            "reserve_output_tokens",
        ),
        ({"target_model": "gpt-4o"}, "messages_json"),
    ]
    async with connect() as session:
        for args, needle in cases:
            message = _error(await session.call_tool("migrate_session", args))
            assert needle in message, (args, message)
        custom = _ok(
            await session.call_tool(
                "migrate_session",
                {"messages_json": ok, "target_model": "my-local-llm", "context_window": 8192},
            )
        )
    assert custom["report"]["context_window"] == 8192
    assert "Traceback" not in server_log.read_text()


async def test_store_backed_session_tools(connect: Connect, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'mcp.db'}"
    first, rest = _conversation(3)[:5], _conversation(3)[5:]
    async with connect("--store", store) as session:
        a = _ok(
            await session.call_tool(
                "session_append",
                {"session_id": "chat-1", "messages_json": json.dumps(first), "workspace": "team"},
            )
        )
        b, again = [
            _ok(
                await session.call_tool(
                    "session_append",
                    {
                        "session_id": "chat-1",
                        "messages_json": json.dumps(rest),
                        "idempotency_key": "turn-2",
                    },
                )
            )
            for _ in range(2)
        ]
        context = _ok(
            await session.call_tool("session_context", {"session_id": "chat-1", "model": "gpt-4o"})
        )
        usage = _ok(
            await session.call_tool("session_usage", {"session_id": "chat-1", "model": "gpt-4o"})
        )
        listed = _ok(await session.call_tool("session_list", {}))
        team = _ok(await session.call_tool("session_list", {"workspace": "team"}))
        other = _ok(await session.call_tool("session_list", {"workspace": "elsewhere"}))
        unknown = [
            _error(await session.call_tool(tool, {"session_id": "nope", "model": "gpt-4o"}))
            for tool in ("session_context", "session_usage")
        ]
        bad_model = _error(
            await session.call_tool("session_context", {"session_id": "chat-1", "model": "zzz"})
        )
        bad_json = _error(
            await session.call_tool("session_append", {"session_id": "x", "messages_json": "nope"})
        )
    assert (a["appended"], a["message_count"], a["workspace"]) == (5, 5, "team")
    assert (b["appended"], b["message_count"]) == (8, 13)
    assert (again["appended"], again["already_stored"]) == (0, 8)  # the same key: a retry
    assert context["session_id"] == "chat-1"
    assert context["decision"] == "fits"
    assert len(context["messages"]) == 13
    assert usage["session_tokens"] == context["tokens_before"]
    assert usage["fits"] is True
    assert usage["messages"] == 13
    assert [s["id"] for s in listed["sessions"]] == ["chat-1"]
    assert listed["sessions"][0]["message_count"] == 13
    assert team["count"] == 1
    assert other["count"] == 0
    for message in unknown:
        assert "No session 'nope'" in message
        assert "session_list lists the stored sessions" in message
        assert "session-migrator" not in message  # no CLI advice to an MCP client
    assert "Unknown model 'zzz'" in bad_model
    assert "not valid JSON" in bad_json
    # the store outlives the server
    async with connect("--store", store) as session:
        assert _ok(await session.call_tool("session_list", {"workspace": "team"}))["count"] == 1


async def test_an_unknown_model_error_names_the_argument_that_describes_it(
    connect: Connect, tmp_path: Path
) -> None:
    messages = json.dumps(_conversation(2))
    async with connect("--store", f"sqlite:///{tmp_path / 'mcp.db'}") as session:
        _ok(
            await session.call_tool(
                "session_append", {"session_id": "s", "messages_json": messages}
            )
        )
        calls = {
            "migrate_session": {"messages_json": messages, "target_model": "acme-llm"},
            "session_context": {"session_id": "s", "model": "acme-llm"},
            "session_usage": {"session_id": "s", "model": "acme-llm"},
        }
        errors = [_error(await session.call_tool(tool, args)) for tool, args in calls.items()]
        described = [
            _ok(await session.call_tool(tool, {**args, "context_window": 8_000}))
            for tool, args in calls.items()
        ]
        window = _error(await session.call_tool("model_context_window", {"model": "acme-llm"}))
    for message in [*errors, window]:
        assert "Unknown model 'acme-llm'" in message
        assert "take context_window" in message
        assert "register_model" not in message  # not something an MCP client can call
    assert described[0]["budget"] < 8_000
    assert described[1]["decision"] == "fits"
    assert described[2]["budget"] == described[0]["budget"]


async def test_imported_session_is_served(connect: Connect, tmp_path: Path) -> None:
    from session_migrator.cli import main

    fixture = Path(__file__).parents[1] / "importers" / "fixtures" / "claude_code" / "plain.jsonl"
    store = f"sqlite:///{tmp_path / 'imported.db'}"
    assert main(["import", "claude-code", str(fixture), "--store", store, "--json"]) == 0
    async with connect("--store", store) as session:
        listed = _ok(await session.call_tool("session_list", {}))
        context = _ok(
            await session.call_tool("session_context", {"session_id": "plain", "model": "gpt-4o"})
        )
    assert listed["sessions"][0]["metadata"]["source_format"] == "claude-code"
    assert [m["content"] for m in context["messages"]] == ["hi", "Hello! How can I help?"]


async def test_lone_surrogates_are_served_as_replacement_characters(
    connect: Connect, tmp_path: Path
) -> None:
    """JSON text can carry a lone surrogate, UTF-8 (and so the protocol's encoder) cannot: the
    tools answer with U+FFFD in its place, and the store keeps the original.
    """
    big = _conversation(40, size=400)
    big[5]["content"] = "the lockers code is 4412 \ud800 " + big[5]["content"]
    big.append({"role": "user", "content": "What is the lockers code? \udfff"})
    store = f"sqlite:///{tmp_path / 'mcp.db'}"
    async with connect("--store", store) as session:
        fitted = _ok(
            await session.call_tool(
                "migrate_session", {"messages_json": json.dumps(big), "target_model": "gpt-4"}
            )
        )
        _ok(
            await session.call_tool(
                "session_append", {"session_id": "s", "messages_json": json.dumps(big)}
            )
        )
        context = _ok(
            await session.call_tool("session_context", {"session_id": "s", "model": "gpt-4"})
        )
    for data in (fitted, context):
        assert data["decision"] == "compressed"
        texts = [m.get("content") or "" for m in data["messages"]]
        assert texts[-1] == "What is the lockers code? \ufffd"
        assert any(t.startswith("the lockers code is 4412 \ufffd") for t in texts)  # recalled
    from session_migrator.store import open_store

    with open_store(store) as opened:
        stored = opened.load("s")
    assert stored[-1].text == "What is the lockers code? \udfff"


async def test_handoff_session_writes_a_claude_code_session(
    connect: Connect, tmp_path: Path
) -> None:
    codex = next(
        (Path(__file__).resolve().parents[1] / "importers" / "fixtures" / "codex_current").rglob(
            "rollout-*.jsonl"
        )
    )
    async with connect() as session:
        done = _ok(
            await session.call_tool(
                "handoff_session",
                {"path": str(codex), "to": "claude-code", "model": "claude-sonnet-4-5",
                 "home": str(tmp_path)},
            )
        )  # fmt: skip
        missing = _error(
            await session.call_tool(
                "handoff_session",
                {"path": str(tmp_path / "nope.jsonl"), "to": "claude-code", "model": "gpt-4o"},
            )
        )
    assert Path(done["path"]).is_file()
    assert Path(done["path"]).is_relative_to(tmp_path / ".claude" / "projects")
    assert done["command"].endswith(
        f"claude --resume {done['session_id']} --model claude-sonnet-4-5"
    )
    # all but Codex's own <permissions instructions>: Claude Code states its own
    assert done["messages"] == done["source_messages"] - 1
    assert "no session file" in missing


async def test_handoff_session_writes_a_codex_rollout(connect: Connect, tmp_path: Path) -> None:
    claude = (
        Path(__file__).resolve().parents[1]
        / "importers" / "fixtures" / "claude_code_2x" / "-home-dev-api"
        / "7e1f3a20-5c4b-4d8e-9f10-2a3b4c5d6e7f.jsonl"
    )  # fmt: skip
    async with connect() as session:
        done = _ok(
            await session.call_tool(
                "handoff_session",
                {"path": str(claude), "to": "codex", "model": "gpt-5-codex",
                 "home": str(tmp_path)},
            )
        )  # fmt: skip
    path = Path(done["path"])
    assert path.is_relative_to(tmp_path / ".codex" / "sessions")
    assert path.name.endswith(f"-{done['session_id']}.jsonl")
    sid = done["session_id"]
    assert done["commands"] == [
        f"cd /home/dev/api && codex resume {sid} -m gpt-5-codex",
        f"cd /home/dev/api && codex exec resume -m gpt-5-codex {sid} "
        "'Where were we? Continue from the last state.'",
    ]
    assert done["command"] == done["commands"][0]
    assert done["messages"] == done["source_messages"]
    assert done["brief"].startswith("# Why does login fail for users with a plus sign")


async def test_read_context_reads_back_a_shrunk_output(connect: Connect) -> None:
    # an agent's turn in progress: its big tool output is shrunk, and the marker names its id
    output = "\n".join(f"row {k}: value {k * 7}" for k in range(3_000))
    messages = [
        {"role": "user", "content": "Dump the table.", "id": "u1"},
        {"role": "assistant", "content": "", "id": "a1", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "dump", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": output, "id": "t1"},
    ]  # fmt: skip
    async with connect() as session:
        _ok(
            await session.call_tool(
                "session_append", {"session_id": "dump", "messages_json": messages}
            )
        )
        fitted = _ok(
            await session.call_tool("session_context", {"session_id": "dump", "model": "gpt-4"})
        )
        page = _ok(
            await session.call_tool(
                "read_context", {"session_id": "dump", "id": "t1", "offset": 20_000, "limit": 2_000}
            )
        )
        last = _ok(
            await session.call_tool(
                "read_context", {"session_id": "dump", "id": "t1", "offset": len(output) - 10}
            )
        )
        wrong = _error(
            await session.call_tool("read_context", {"session_id": "dump", "id": "nope"})
        )
    shrunk = next(m for m in fitted["messages"] if m["role"] == "tool")
    assert 'read_context(id="t1")' in shrunk["content"]
    assert len(shrunk["content"]) < len(output) / 2
    assert page["text"].startswith(output[20_000:22_000])
    assert f'read_context(id="t1", offset={22_000})' in page["text"]
    assert last["text"] == output[-10:]  # the last page says nothing more
    assert "marker names" in wrong
