"""A session file imported while it is still being written, then again after it grew: the store
ends up holding what a fresh import of the final file gives (the real tool result, not the
placeholder; a response's later tool calls), and importing it once more adds nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from session_migrator.importers import import_file
from session_migrator.store import open_store

SID = "11111111-2222-4333-8444-555555555555"
BASE = {"sessionId": SID, "cwd": "/w", "version": "2.0.0"}


def _claude(
    uuid: str, parent: str | None, role: str, content: Any, mid: str = ""
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": content}
    if role == "assistant":
        message.update(id=mid, model="claude-sonnet-4-5")
    return {**BASE, "type": role, "uuid": uuid, "parentUuid": parent, "message": message}


CLAUDE = [
    _claude("u1", None, "user", "run the tests"),
    _claude("a1", "u1", "assistant", [{"type": "text", "text": "Running them."}], "m1"),
    _claude(
        "a2",
        "a1",
        "assistant",
        [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "pytest"}}],
        "m1",
    ),
    _claude(
        "u2",
        "a2",
        "user",
        [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "42 passed in 3.1s"}],
    ),
    _claude("a3", "u2", "assistant", [{"type": "text", "text": "All 42 tests pass."}], "m2"),
]

# each entry a second after the one before, as Claude Code stamps them
CLAUDE = [{**x, "timestamp": f"2025-09-01T12:00:{i:02d}.000Z"} for i, x in enumerate(CLAUDE)]


def _codex_item(payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2025-09-01T12:00:00Z", "type": "response_item", "payload": payload}


CODEX = [
    {"timestamp": "2025-09-01T12:00:00Z", "type": "session_meta", "payload": {"id": SID}},
    _codex_item(
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    ),
    _codex_item(
        {
            "type": "function_call",
            "name": "shell",
            "arguments": '{"command":["pytest"]}',
            "call_id": "call_1",
        }
    ),
    _codex_item({"type": "function_call_output", "call_id": "call_1", "output": "42 passed"}),
    _codex_item(
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "All 42 pass."}],
        }
    ),
]


@pytest.mark.parametrize(
    ("fmt", "lines", "cut"),
    [
        ("claude-code", CLAUDE, 3),  # the call is written, its result not yet
        ("claude-code", CLAUDE, 2),  # only the first block of the response is written
        ("codex", CODEX, 3),
    ],
)
@pytest.mark.parametrize("offload", [None, 8])
def test_a_grown_file_imported_again_is_stored_as_a_fresh_import_gives_it(
    fmt: str, lines: list[dict[str, Any]], cut: int, offload: int | None, tmp_path: Path
) -> None:
    path = tmp_path / ("rollout-2025-09-01T12-00-00-x.jsonl" if fmt == "codex" else "s.jsonl")
    store = open_store(f"sqlite:///{tmp_path / 's.db'}", offload_threshold=offload)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines[:cut]))
    import_file(fmt, path).save(store)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    final = import_file(fmt, path)
    assert final.save(store) > 0
    want = [store.stored_form(m) for m in final.session.messages]
    assert store.load(SID) == want
    assert final.save(store) == 0  # idempotent
    assert store.load(SID) == want
    tool = next(m for m in store.load(SID, full=True) if m.role == "tool")
    assert tool.text.startswith("42 passed")
    store.close()


@pytest.mark.parametrize(
    ("fmt", "lines", "cut"),
    [
        ("claude-code", CLAUDE, 3),  # the older copy has a placeholder for the real result
        ("claude-code", CLAUDE, 4),  # the older copy ends before the final answer
        ("claude-code", CLAUDE, 2),  # the older copy has the response without its tool call
        ("codex", CODEX, 3),
    ],
)
@pytest.mark.parametrize("offload", [None, 8])
def test_an_older_copy_imported_after_a_newer_one_adds_and_replaces_nothing(
    fmt: str, lines: list[dict[str, Any]], cut: int, offload: int | None, tmp_path: Path
) -> None:
    newer = tmp_path / ("rollout-2025-09-01T12-00-00-x.jsonl" if fmt == "codex" else "s.jsonl")
    older = tmp_path / ("rollout-2025-09-01T12-00-00-y.jsonl" if fmt == "codex" else "o.jsonl")
    newer.write_text("".join(json.dumps(x) + "\n" for x in lines))
    older.write_text("".join(json.dumps(x) + "\n" for x in lines[:cut]))
    store = open_store(f"sqlite:///{tmp_path / 's.db'}", offload_threshold=offload)
    assert import_file(fmt, newer).save(store) > 0
    want = store.load(SID, full=True)
    info = store.get_session(SID)
    assert info is not None
    assert import_file(fmt, older).save(store) == 0
    assert store.load(SID, full=True) == want
    assert store.get_session(SID) == info
    tool = next(m for m in want if m.role == "tool")
    assert tool.text.startswith("42 passed")
    store.close()


def test_an_older_copy_with_a_message_the_store_lacks_loses_nothing(tmp_path: Path) -> None:
    newer, other = tmp_path / "s.jsonl", tmp_path / "o.jsonl"
    newer.write_text("".join(json.dumps(x) + "\n" for x in CLAUDE))
    side = {**_claude("u9", "a1", "user", "and the docs?"), "timestamp": CLAUDE[1]["timestamp"]}
    other.write_text("".join(json.dumps(x) + "\n" for x in [*CLAUDE[:2], side]))
    store = open_store("memory://")
    import_file("claude-code", newer).save(store)
    assert import_file("claude-code", other).save(store) == 1
    assert "and the docs?" in [m.text for m in store.load(SID)]
    store.close()
    # the newer file's metadata stays; the new message's source time joins the others
    store = open_store("memory://")
    import_file("claude-code", newer).save(store)
    import_file("claude-code", other).save(store)
    info = store.get_session(SID)
    assert info is not None
    assert info.metadata["source_path"] == str(newer)
    assert info.metadata["last_entry_at"] == CLAUDE[-1]["timestamp"]
    assert len(info.metadata["source_timestamps"]) == len(store.load(SID))
    store.close()
