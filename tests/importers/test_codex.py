"""Codex rollout files: pairing, metadata, the older layout, and damaged files."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from session_migrator import ImportFormatError, Message, messages_from_openai, messages_to_openai
from session_migrator.importers import PLACEHOLDER_RESULT, find_session_files, import_codex

Check = Callable[[Sequence[Message]], None]
SID = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
DAMAGED_SID = "0199b7c0-1111-7222-8333-944455556666"


def _file(fixtures: Path, sid: str) -> Path:
    (path,) = (fixtures / "codex").rglob(f"rollout-*{sid}.jsonl")
    return path


def test_full_session_pairs_calls_and_records_the_source(
    fixtures: Path, check_paired: Check
) -> None:
    result = import_codex(_file(fixtures, SID))
    msgs = result.session.messages
    check_paired(msgs)
    assert [m.role for m in msgs] == [
        "user", "user", "assistant", "tool", "assistant", "tool", "tool", "assistant", "tool",
        "assistant",
    ]  # fmt: skip
    # The preamble and the call it precedes are one model response.
    assert msgs[2].text == "I'll look at the cart module first."
    assert [c.id for c in msgs[2].tool_calls] == ["call_Rk3cA1"]
    assert json.loads(msgs[2].tool_calls[0].arguments)["command"][-1] == "rg -n coupon src/"
    # Parallel calls share one assistant message.
    assert [c.id for c in msgs[4].tool_calls] == ["call_Sx81pQ", "call_Tz09mW"]
    assert msgs[6].text.startswith("def test_coupon")  # an output object's content
    patch = msgs[7].tool_calls[0]
    assert patch.name == "apply_patch"
    assert json.loads(patch.arguments)["input"].startswith("*** Begin Patch")
    assert result.session.id == SID
    meta = result.session.metadata
    assert meta["source_format"] == "codex"
    assert meta["source_model"] == "gpt-5-codex"
    assert meta["observed_input_tokens"] == 6321  # the last request's input, not the running total
    assert meta["observed_context_window"] == 272_000
    assert meta["cwd"] == "/home/dev/shop"
    assert meta["source_session_id"] == SID
    assert meta["git_branch"] == "main"
    assert meta["git_commit"] == "4f2a9c1"
    assert meta["git_repository_url"] == "git@github.com:dev/shop.git"
    # a reasoning summary goes with the response it precedes; the one without a summary is skipped
    assert msgs[2].extra["reasoning"] == "**Locating the cart code**"
    assert all(m.extra.get("source_model") == "gpt-5-codex" for m in msgs if m.role == "assistant")
    assert "reasoning" not in messages_to_openai(msgs)[2]  # never sent as a message key
    assert result.skipped == {
        "reasoning": 1,
        "event_msg:user_message": 1,
        "event_msg:exec_command_end": 1,
        "event_msg:agent_message": 1,
    }
    assert result.warnings == []
    assert result.repaired == {}
    json.dumps(result.summary())  # JSON-serialisable
    json.dumps(dict(meta))


def test_ids_are_stable_and_round_trip_through_openai(fixtures: Path) -> None:
    first = import_codex(_file(fixtures, SID)).session.messages
    second = import_codex(_file(fixtures, SID)).session.messages
    assert [m.id for m in first] == [m.id for m in second]
    assert first == second
    back = messages_from_openai(messages_to_openai(first))
    # (what only the store keeps, the source model, reasoning and a tool's structured result, is
    # not an OpenAI message key)
    private = {"source_model", "reasoning", "source_result"}
    bare = [m.replace(extra={k: v for k, v in m.extra.items() if k not in private}) for m in first]
    assert back == bare
    other = import_codex(_file(fixtures, SID), session_id="copy").session.messages
    assert {m.id for m in other}.isdisjoint(m.id for m in first)


def test_damaged_file_is_read_with_counts(fixtures: Path, check_paired: Check) -> None:
    result = import_codex(_file(fixtures, DAMAGED_SID))
    msgs = result.session.messages
    check_paired(msgs)
    assert result.skipped == {
        "truncated_last_line": 1,
        "unknown:future_line_kind": 1,
        "ghost_snapshot": 1,  # a known item, skipped on purpose
        "orphan_tool_output": 1,
    }
    assert result.repaired == {"non_utf8_line": 1, "placeholder_result": 2}
    assert msgs[0].role == "system"  # the developer message
    assert msgs[1].content[1].type == "image"  # type: ignore[union-attr]
    assert any("\ufffd" in m.text for m in msgs)
    placeholders = [m for m in msgs if m.marker == {"kind": "placeholder_result"}]
    assert [m.tool_call_id for m in placeholders] == ["call_Va11", "call_Wb22"]
    assert all(m.text == PLACEHOLDER_RESULT for m in placeholders)
    assert "stale output" not in {m.text for m in msgs}
    assert result.session.metadata["source_models"] == ["gpt-5", "gpt-5-codex"]
    assert result.source_model == "gpt-5-codex"
    assert result.observed_input_tokens == 2048
    text = "\n".join(result.warnings)
    for needle in ("line 13", "cut short", "U+FFFD", "future_line_kind", "placeholder"):
        assert needle in text


def test_older_layout(fixtures: Path, check_paired: Check) -> None:
    result = import_codex(fixtures / "codex" / "rollout-2025-05-20T09-15-00-legacy.jsonl")
    check_paired(result.session.messages)
    assert [m.role for m in result.session.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.session.id == "7c1f2a90-0000-4000-8000-00000000beef"
    assert result.skipped == {"record_type": 2, "base_instructions": 1}
    assert result.source_model is None


def test_find_session_files_walks_the_date_tree(fixtures: Path) -> None:
    found = find_session_files("codex", fixtures / "codex")
    assert [p.name[:19] for p in found] == [
        "rollout-2025-09-01T",
        "rollout-2025-09-02T",
        "rollout-2025-05-20T",
    ]
    single = _file(fixtures, SID)
    assert find_session_files("codex", single) == [single]
    with pytest.raises(ImportFormatError, match="no such file"):
        find_session_files("codex", fixtures / "nowhere")


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", r"line 1: empty file"),
        (b"\n  \n", r"line 1: empty file"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", r"line 3: binary data \(NUL byte at offset 8\)"),
        (b"\x00\x01\x02", r"line 1: binary data"),
        (b"\x00\x00\n\x00", r"line 1: binary data"),
        (b"not json at all\n", r"line 1: not JSON"),
        (b"[1, 2]\n", r"line 1: a JSON list"),
        (b'{"timestamp":"x","type":"session_me', r"line 1: not JSON"),
        (b'{"a": 1}\n{"b": 2}\n', r"line 1: no Codex rollout lines"),
    ],
)
def test_unreadable_files_raise_with_path_and_line(tmp_path: Path, data: bytes, match: str) -> None:
    path = tmp_path / "rollout-bad.jsonl"
    path.write_bytes(data)
    with pytest.raises(ImportFormatError, match=match) as info:
        import_codex(path)
    assert str(path) in str(info.value)


def test_a_claude_code_file_is_refused_with_a_hint(fixtures: Path) -> None:
    with pytest.raises(ImportFormatError, match="claude-code"):
        import_codex(fixtures / "claude_code" / "plain.jsonl")


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ImportFormatError, match="no such file"):
        import_codex(tmp_path / "absent.jsonl")
    with pytest.raises(ImportFormatError, match="is a directory"):
        import_codex(tmp_path)


def test_a_broken_line_in_the_middle_is_skipped(tmp_path: Path, check_paired: Check) -> None:
    lines = [
        {"type": "session_meta", "payload": {"id": "s"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": "hi"}},
    ]
    text = "\n".join(json.dumps(x) for x in lines)
    path = tmp_path / "r.jsonl"
    path.write_text(text.replace("\n", "\n{oops\n") + "\n")
    result = import_codex(path)
    assert result.skipped == {"invalid_json": 1}
    assert result.warnings == ["line 2: not valid JSON; skipped"]
    assert [m.text for m in result.session.messages] == ["hi"]


def _big_rollout(path: Path, turns: int) -> None:
    out = [json.dumps({"type": "session_meta", "payload": {"id": "big", "cwd": "/x"}})]
    for i in range(turns):
        items = [
            {"type": "message", "role": "user", "content": f"q{i}"},
            {"type": "reasoning", "summary": [], "encrypted_content": "x" * 200},
            {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": f"c{i}"},
            {"type": "function_call_output", "call_id": f"c{i}", "output": "out " * 50},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "a"}],
            },
        ]
        out.extend(json.dumps({"type": "response_item", "payload": p}) for p in items)
    path.write_text("\n".join(out) + "\n")


def test_large_file_imports_whole_and_paired(tmp_path: Path, check_paired: Check) -> None:
    big = tmp_path / "b.jsonl"
    _big_rollout(big, 2_000)
    result = import_codex(big)
    assert len(result.session.messages) == 2_000 * 4
    check_paired(result.session.messages)
