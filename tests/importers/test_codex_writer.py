"""The Codex rollout writer: a session written where Codex looks for it
(``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``), read back by the project's
own Codex importer to the same messages: texts, tool calls paired by ``call_id``, times, working
directory and branch; other agents' shell and edit calls in Codex's own vocabulary; a fit's
summary recorded as Codex records its own compaction (a ``compacted`` line)."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from session_migrator import Message, ToolCall, migrate, register_model
from session_migrator.importers import (
    find_session_files,
    import_claude_code,
    import_codex,
    write_codex,
)
from session_migrator.importers._common import image_part, text_part

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CODEX = next((FIXTURES / "codex_current" / "2026").rglob("rollout-*.jsonl"))
CLAUDE = (
    FIXTURES / "claude_code_2x" / "-home-dev-api" / "7e1f3a20-5c4b-4d8e-9f10-2a3b4c5d6e7f.jsonl"
)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _items(path: Path) -> list[dict[str, Any]]:
    return [line["payload"] for line in _lines(path) if line["type"] == "response_item"]


def _shape(messages: Any) -> list[tuple[Any, ...]]:
    return [
        (m.role, m.text, tuple((c.id, c.name, c.arguments) for c in m.tool_calls), m.tool_call_id)
        for m in messages
    ]


def test_a_codex_session_round_trips(tmp_path: Path) -> None:
    source = import_codex(CODEX).session
    sid, path = write_codex(
        source.messages,
        codex_home=tmp_path / ".codex",
        cwd="/work/invoices",
        git_branch="main",
        model="gpt-5-codex",
    )
    # where Codex looks for it: sessions/YYYY/MM/DD/rollout-<local time>-<id>.jsonl
    assert uuid.UUID(sid)
    rel = path.relative_to(tmp_path / ".codex" / "sessions")
    assert re.fullmatch(
        rf"\d{{4}}/\d\d/\d\d/rollout-\d{{4}}-\d\d-\d\dT\d\d-\d\d-\d\d-{sid}\.jsonl", rel.as_posix()
    )
    assert find_session_files("codex", tmp_path / ".codex") == [path]
    lines = _lines(path)
    meta = lines[0]
    assert meta["type"] == "session_meta"
    assert meta["payload"]["id"] == sid
    assert meta["payload"]["cwd"] == "/work/invoices"
    assert meta["payload"]["git"] == {"branch": "main"}
    assert {"originator", "cli_version", "timestamp", "source"} <= set(meta["payload"])
    # no provider (the configured one runs it) and no harness prompt (Codex's own is sent)
    assert "model_provider" not in meta["payload"]
    assert "base_instructions" not in meta["payload"]
    assert lines[1]["type"] == "turn_context"
    assert lines[1]["payload"]["model"] == "gpt-5-codex"

    back = import_codex(path)
    assert back.warnings == []
    assert back.skipped == {}
    assert _shape(back.session.messages) == _shape(source.messages)
    assert [m.timestamp for m in back.session.messages] == [m.timestamp for m in source.messages]
    assert back.session.metadata["cwd"] == "/work/invoices"
    assert back.session.metadata["git_branch"] == "main"
    assert back.session.metadata["source_model"] == "gpt-5-codex"
    assert back.session.id == sid


def test_a_claude_code_session_keeps_its_pairs(tmp_path: Path) -> None:
    source = import_claude_code(CLAUDE).session
    _, path = write_codex(source.messages, codex_home=tmp_path, cwd="/home/dev/api")
    items = _items(path)
    calls = [i["call_id"] for i in items if i["type"] == "function_call"]
    outputs = [i["call_id"] for i in items if i["type"] == "function_call_output"]
    assert calls == outputs == ["toolu_01ReadValidator", "toolu_01GrepRoute", "toolu_01ReadTests"]
    # each output after its call
    order = [(i["type"], i.get("call_id")) for i in items if "call_id" in i]
    for k, (kind, call_id) in enumerate(order):
        if kind == "function_call_output":
            assert ("function_call", call_id) in order[:k]
    back = import_codex(path).session
    assert _shape(back.messages) == _shape(source.messages)


def test_shell_and_edit_calls_take_codex_tools(tmp_path: Path) -> None:
    session = [
        Message("user", "Fix the greeting and run the tests."),
        Message(
            "assistant",
            "",
            tool_calls=(
                ToolCall("toolu_1", "Bash", '{"command": "pytest -q", "description": "tests"}'),
                ToolCall(
                    "toolu_2",
                    "Edit",
                    json.dumps({"file_path": "app.py", "old_string": "hi", "new_string": "hello"}),
                ),
                ToolCall("toolu_3", "Write", json.dumps({"file_path": "b.txt", "content": "b\n"})),
                ToolCall("toolu_4", "WebFetch", '{"url": "https://example.com"}'),
            ),
        ),
        Message("tool", "1 failed", tool_call_id="toolu_1"),
        Message("tool", "edited", tool_call_id="toolu_2"),
        Message("tool", "written", tool_call_id="toolu_3"),
        Message("tool", "<html/>", tool_call_id="toolu_4"),
        Message("assistant", "Fixed; the test still fails on the date."),
    ]
    _, path = write_codex(session, codex_home=tmp_path, cwd="/srv/app")
    items = {i.get("call_id"): i for i in _items(path) if "call_id" in i and "output" not in i}
    assert items["toolu_1"]["type"] == "function_call"
    assert items["toolu_1"]["name"] == "shell_command"
    assert json.loads(items["toolu_1"]["arguments"]) == {
        "command": "pytest -q",
        "workdir": "/srv/app",
    }
    assert items["toolu_2"]["type"] == "custom_tool_call"
    assert items["toolu_2"]["name"] == "apply_patch"
    assert items["toolu_2"]["input"] == (
        "*** Begin Patch\n*** Update File: app.py\n@@\n-hi\n+hello\n*** End Patch"
    )
    assert items["toolu_3"]["input"] == "*** Begin Patch\n*** Add File: b.txt\n+b\n+\n*** End Patch"
    assert items["toolu_4"] == {
        "type": "function_call", "name": "WebFetch",
        "arguments": '{"url": "https://example.com"}', "call_id": "toolu_4",
    }  # fmt: skip
    outputs = {i["call_id"]: i["type"] for i in _items(path) if "output" in i}
    assert outputs == {
        "toolu_1": "function_call_output",
        "toolu_2": "custom_tool_call_output",
        "toolu_3": "custom_tool_call_output",
        "toolu_4": "function_call_output",
    }
    back = import_codex(path).session.messages
    assert [c.name for c in back[1].tool_calls] == [
        "shell_command", "apply_patch", "apply_patch", "WebFetch",
    ]  # fmt: skip
    assert [m.tool_call_id for m in back if m.role == "tool"] == [
        "toolu_1", "toolu_2", "toolu_3", "toolu_4",
    ]  # fmt: skip
    assert [m.text for m in back if m.role == "tool"] == [
        "1 failed",
        "edited",
        "written",
        "<html/>",
    ]


def test_codex_own_calls_keep_their_shape(tmp_path: Path) -> None:
    action = {"type": "exec", "command": ["bash", "-lc", "ls"]}
    session = [
        Message("user", "List and patch."),
        Message(
            "assistant",
            "On it.",
            tool_calls=(
                ToolCall("c1", "local_shell", json.dumps(action)),
                ToolCall(
                    "c2", "apply_patch", json.dumps({"input": "*** Begin Patch\n*** End Patch"})
                ),
            ),
        ),
        Message("tool", "a.py", tool_call_id="c1"),
        Message("tool", "Done!", tool_call_id="c2"),
    ]
    _, path = write_codex(session, codex_home=tmp_path, cwd="/srv")
    kinds = [i["type"] for i in _items(path)]
    assert kinds == [
        "message", "message", "local_shell_call", "custom_tool_call",
        "function_call_output", "custom_tool_call_output",
    ]  # fmt: skip
    back = import_codex(path).session
    assert _shape(back.messages) == _shape(session)


def test_a_fitted_session_records_its_summary_as_a_compaction(tmp_path: Path) -> None:
    register_model("tiny-codex-writer", context_window=400, max_output_tokens=100)
    source = import_codex(CODEX).session
    fitted = migrate(list(source.messages), "tiny-codex-writer").messages
    summary = next(m for m in fitted if m.role == "system" and "summary" in m.text)
    _, path = write_codex(fitted, codex_home=tmp_path, cwd="/work")
    lines = _lines(path)
    compacted = [line for line in lines if line["type"] == "compacted"]
    assert [c["payload"] for c in compacted] == [{"message": summary.text}]
    # first after the meta: Codex rebuilds a compacted history from what comes before it
    assert lines.index(compacted[0]) == 1
    back = import_codex(path).session.messages
    assert (back[0].role, back[0].text) == ("user", summary.text)  # as Codex sends it
    kept = [m for m in fitted if m is not summary]
    assert _shape(back[1:]) == _shape(kept)


def test_images_times_and_system_messages(tmp_path: Path) -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    session = [
        Message("system", "Answer in French.", timestamp=when),
        Message(
            "user",
            (text_part("What is on this picture?"), image_part("data:image/png;base64,AAAA")),
            timestamp=when,
        ),
        Message("assistant", "Un chat.", timestamp=when),
    ]
    _, path = write_codex(session, codex_home=tmp_path, cwd="/srv")
    items = _items(path)
    assert items[0] == {
        "type": "message", "role": "developer",
        "content": [{"type": "input_text", "text": "Answer in French."}],
    }  # fmt: skip
    assert items[1]["content"][1] == {
        "type": "input_image",
        "image_url": "data:image/png;base64,AAAA",
    }
    assert items[2]["content"] == [{"type": "output_text", "text": "Un chat."}]
    back = import_codex(path).session.messages
    assert [m.role for m in back] == ["system", "user", "assistant"]
    assert [p.type for p in back[1].content] == ["text", "image"]
    assert all(m.timestamp == when for m in back)


def test_a_session_id_must_be_a_uuid(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="UUID"):
        write_codex([Message("user", "hi")], codex_home=tmp_path, cwd="/srv", session_id="x")
    sid = "019c4e2a-8b71-7d30-a5f2-6c1e9d0b3a47"
    got, path = write_codex(
        [Message("user", "hi")], codex_home=tmp_path, cwd="/srv", session_id=sid
    )
    assert got == sid
    assert path.name.endswith(f"-{sid}.jsonl")
