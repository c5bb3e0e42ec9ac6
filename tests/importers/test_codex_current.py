"""Structures current Codex versions (CLI and Desktop) write: prompts only as
``event_msg``/``user_message`` events, ``ghost_snapshot`` items, rollouts not named rollout-*."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from session_migrator import Message
from session_migrator.importers import find_session_files, import_codex

Check = Callable[[Sequence[Message]], None]
DESKTOP_SID = "019c4e2a-8b71-7d30-a5f2-6c1e9d0b3a47"
PROMPTS = [
    "Invoice totals are off by a cent. Find where we round.",
    "Yes, round once at the end and keep two decimals.",
    "Add a test for three lines of 0.333.",
]


def _desktop(fixtures: Path) -> Path:
    (path,) = (fixtures / "codex_current").rglob(f"rollout-*{DESKTOP_SID}.jsonl")
    return path


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2026-03-02T09:14:05.000Z", "type": kind, "payload": payload}


def _user_item(text: str) -> dict[str, Any]:
    content = [{"type": "input_text", "text": text}]
    return _line("response_item", {"type": "message", "role": "user", "content": content})


def _event(text: str) -> dict[str, Any]:
    return _line("event_msg", {"type": "user_message", "message": text, "images": []})


def _answer(text: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text}]
    return _line("response_item", {"type": "message", "role": "assistant", "content": content})


def test_prompts_written_only_as_events_start_their_turns(
    fixtures: Path, check_paired: Check
) -> None:
    result = import_codex(_desktop(fixtures))
    msgs = result.session.messages
    check_paired(msgs)
    assert [m.role for m in msgs] == [
        "system", "user", "assistant", "tool", "assistant", "user", "assistant", "user",
        "assistant",
    ]  # fmt: skip
    assert [m.text for m in msgs if m.role == "user"] == PROMPTS
    assert msgs[4].text.startswith("src/totals.py rounds each line")
    assert "event_msg:user_message" not in result.skipped
    assert result.session.metadata["originator"] == "Codex Desktop"
    assert result.source_model == "gpt-5.3-codex"


def test_a_prompt_in_both_forms_is_one_message_whichever_comes_first(tmp_path: Path) -> None:
    meta = _line("session_meta", {"id": "s-both"})
    lines = [
        meta,
        _user_item("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
        _user_item("first question"),  # the CLI: the item, then the event
        _event("first question"),
        _answer("first answer"),
        _event("second question"),  # the other order
        _user_item("second question"),
        _answer("second answer"),
        _event("third question"),  # the IDE wraps the prompt in context
        _user_item("# Context from my IDE setup:\n## My request for Codex:\nthird question"),
        _answer("third answer"),
        _event("first question"),  # asked again, only as an event this time
        _answer("fourth answer"),
        _user_item("<user_instructions>\nSay yes when you are done.\n</user_instructions>"),
        _event("yes"),  # a short prompt inside another user item's text is still a prompt
        _answer("fifth answer"),
    ]
    result = import_codex(_write(tmp_path / "rollout-both.jsonl", lines))
    users = [m.text for m in result.session.messages if m.role == "user"]
    assert users == [
        "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>",
        "first question",
        "second question",
        "# Context from my IDE setup:\n## My request for Codex:\nthird question",
        "first question",
        "<user_instructions>\nSay yes when you are done.\n</user_instructions>",
        "yes",
    ]
    assert result.skipped["event_msg:user_message"] == 3


def test_an_event_prompt_keeps_its_images(tmp_path: Path) -> None:
    url = "data:image/png;base64,iVBORw0KGgo="
    prompt = {"type": "user_message", "message": "what is this?", "images": [url]}
    event = _line("event_msg", prompt)
    result = import_codex(_write(tmp_path / "r.jsonl", [event, _answer("a chart")]))
    first = result.session.messages[0]
    assert first.role == "user"
    assert isinstance(first.content, tuple)
    assert [p.type for p in first.content] == ["text", "image"]
    assert first.content[1].data["image_url"]["url"] == url


def test_a_session_without_a_prompt_still_starts_with_the_user(
    tmp_path: Path, check_paired: Check
) -> None:
    lines = [
        _line("session_meta", {"id": "s-resumed"}),
        _line("response_item", {"type": "message", "role": "developer", "content": "be brief"}),
        _answer("Picking up where we left off."),
    ]
    result = import_codex(_write(tmp_path / "r.jsonl", lines))
    msgs = result.session.messages
    check_paired(msgs)
    assert [m.role for m in msgs] == ["system", "user", "assistant"]
    assert msgs[1].marker == {"kind": "leading_user_note"}
    assert result.repaired == {"leading_user_note": 1}
    assert any("starts with an answer" in w for w in result.warnings)


def test_ghost_snapshots_and_compaction_items_are_known(fixtures: Path, tmp_path: Path) -> None:
    result = import_codex(_desktop(fixtures))
    assert result.skipped["ghost_snapshot"] == 3
    assert result.warnings == []
    lines = [
        _line("session_meta", {"id": "s-compact"}),
        _user_item("hello"),
        _line("response_item", {"type": "compaction", "encrypted_content": "gAAA..."}),
        _line("response_item", {"type": "compaction_summary", "encrypted_content": "gAAA..."}),
        _line("response_item", {"type": "image_generation_call", "id": "ig_1", "result": "iVBO"}),
        _answer("hi"),
    ]
    other = import_codex(_write(tmp_path / "r.jsonl", lines))
    assert other.warnings == []
    assert other.skipped == {"compaction": 2, "image_generation_call": 1}


def test_a_directory_import_takes_rollouts_by_their_first_line(fixtures: Path) -> None:
    # an exported rollout named after its id is taken; Codex's prompt history is not
    found = find_session_files("codex", fixtures / "codex_current")
    assert [p.name for p in found] == [  # sorted by path: 2026/... before exported/...
        "rollout-2026-03-02T09-14-05-019c4e2a-8b71-7d30-a5f2-6c1e9d0b3a47.jsonl",
        "019c5a10-2f3e-7b4c-9d8e-7f6a5b4c3d2e.jsonl",
    ]
    exported = import_codex(next(p for p in found if not p.name.startswith("rollout-")))
    assert [m.role for m in exported.session.messages] == ["user", "assistant"]
    assert exported.source_model == "gpt-5.2-codex"


def test_messages_keep_their_source_times(fixtures: Path) -> None:
    result = import_codex(_desktop(fixtures))
    times = result.session.metadata["source_timestamps"]
    msgs = result.session.messages
    assert set(times) == {m.id for m in msgs}
    first_prompt = next(m for m in msgs if m.role == "user")
    assert times[first_prompt.id] == "2026-03-02T09:14:11Z"  # the event's line
    assert list(times.values()) == sorted(times.values())
    # each message carries its time: the store keeps when it was said, not the import's
    assert first_prompt.timestamp is not None
    assert first_prompt.timestamp.isoformat() == "2026-03-02T09:14:11+00:00"
    assert all(m.timestamp is not None for m in msgs)
