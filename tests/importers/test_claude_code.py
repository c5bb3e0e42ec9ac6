"""Claude Code session files: merged responses, branches, tool pairing, damaged files."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from session_migrator import ImportFormatError, Message
from session_migrator.importers import import_claude_code

Check = Callable[[Sequence[Message]], None]
SID = "5b1c9e2a-7d4f-4c3b-9a8e-1f2d3c4b5a69"
DAMAGED_SID = "9d8e7f60-aaaa-4bbb-8ccc-ddddeeeeffff"


def _file(fixtures: Path, sid: str) -> Path:
    return fixtures / "claude_code" / "-home-dev-shop" / f"{sid}.jsonl"


def test_session_follows_the_active_branch(fixtures: Path, check_paired: Check) -> None:
    result = import_claude_code(_file(fixtures, SID))
    msgs = result.session.messages
    check_paired(msgs)
    assert [m.role for m in msgs] == [
        "user", "assistant", "tool", "assistant", "tool", "tool", "user", "assistant", "tool",
        "assistant",
    ]  # fmt: skip
    # Three entries of one response (thinking, text, tool_use) are one message.
    assert msgs[1].text == "I'll search for the coupon logic."
    assert [(c.id, c.name) for c in msgs[1].tool_calls] == [("toolu_01Grep", "Grep")]
    assert json.loads(msgs[1].tool_calls[0].arguments) == {"pattern": "coupon", "path": "src"}
    # Two parallel calls; the Read result was written on a side branch and is still kept.
    assert [c.id for c in msgs[3].tool_calls] == ["toolu_01Read", "toolu_01Bash"]
    assert msgs[4].text.endswith("coupon.amount * 100")
    assert msgs[5].text.startswith("[tool error] FAILED")
    # The rewound question and its answer are not part of the conversation.
    texts = {m.text for m in msgs}
    assert "Actually, just explain it." not in texts
    assert "The coupon is scaled by 100." not in texts
    parts = msgs[6].content
    assert isinstance(parts, tuple)
    assert [p.type for p in parts] == ["text", "image"]
    assert parts[1].data["image_url"]["url"].startswith("data:image/png;base64,")
    # the thinking block's text and the model stay with the message (not its signature)
    assert msgs[1].extra["reasoning"] == "Let me find the cart code."
    assert msgs[1].extra["source_model"] == "claude-sonnet-4-5-20250929"
    assert msgs[1].timestamp is not None
    assert result.skipped == {
        "off_branch": 2,
        "system": 1,
        "file-history-snapshot": 1,
    }
    meta = result.session.metadata
    assert result.session.id == SID
    assert meta["source_format"] == "claude-code"
    assert meta["source_model"] == "claude-sonnet-4-5-20250929"
    assert meta["observed_input_tokens"] == 6 + 420 + 15_873
    assert meta["title"] == "Fix coupon total in cart"
    assert meta["cwd"] == "/home/dev/shop"
    assert meta["git_branch"] == "main"
    json.dumps(result.summary())


def test_ids_are_stable(fixtures: Path) -> None:
    a = import_claude_code(_file(fixtures, SID)).session.messages
    b = import_claude_code(_file(fixtures, SID)).session.messages
    assert a == b
    assert len({m.id for m in a}) == len(a)


def test_damaged_file_is_read_with_counts(fixtures: Path, check_paired: Check) -> None:
    result = import_claude_code(_file(fixtures, DAMAGED_SID))
    msgs = result.session.messages
    check_paired(msgs)
    assert result.skipped == {
        "truncated_last_line": 1,
        "unknown:mystery-entry": 1,
        "sidechain": 1,
        "api_error_message": 1,
        "orphan_tool_output": 1,
    }
    assert result.repaired == {"non_utf8_line": 1, "placeholder_result": 2}
    assert "caf\ufffd is fine?" in {m.text for m in msgs}
    assert "API Error: 529 overloaded" not in {m.text for m in msgs}
    assert "sub-agent task" not in {m.text for m in msgs}
    assert result.source_model == "claude-opus-4-1-20250805"  # "<synthetic>" is not a model
    placeholders = [m for m in msgs if m.marker == {"kind": "placeholder_result"}]
    assert [m.tool_call_id for m in placeholders] == ["toolu_02Lint", "toolu_02Cut"]


def test_entries_without_uuids_are_read_in_file_order(fixtures: Path) -> None:
    result = import_claude_code(fixtures / "claude_code" / "plain.jsonl")
    assert [(m.role, m.text) for m in result.session.messages] == [
        ("user", "hi"),
        ("assistant", "Hello! How can I help?"),
    ]
    assert result.session.id == "plain"
    assert result.source_model == "claude-haiku-4-5"


def test_a_codex_file_is_refused_with_a_hint(fixtures: Path) -> None:
    (codex,) = (fixtures / "codex").glob("rollout-*legacy.jsonl")
    with pytest.raises(ImportFormatError, match="import codex"):
        import_claude_code(codex)


def test_a_sidechain_only_file_is_a_sub_agent_session(tmp_path: Path) -> None:
    entry = {
        "type": "user",
        "isSidechain": True,
        "uuid": "a",
        "parentUuid": None,
        "sessionId": "s",
        "message": {"role": "user", "content": "task"},
    }
    path = tmp_path / "agent-1.jsonl"
    path.write_text(json.dumps(entry) + "\n")
    result = import_claude_code(path)
    assert [m.text for m in result.session.messages] == ["task"]
    assert result.session.id == "s/agent-1"  # no agentId: the file name's
    assert result.session.metadata["parent_session_id"] == "s"
    assert result.skipped == {}


def test_compaction_boundary_keeps_the_history_before_it(tmp_path: Path) -> None:
    def msg(uuid: str, parent: str | None, role: str, text: str, **kw: object) -> dict[str, object]:
        return {
            "type": role,
            "uuid": uuid,
            "parentUuid": parent,
            "message": {"role": role, "content": [{"type": "text", "text": text}]},
            **kw,
        }

    entries = [
        msg("1", None, "user", "first question"),
        msg("2", "1", "assistant", "first answer"),
        {"type": "system", "subtype": "compact_boundary", "uuid": "3", "parentUuid": None,
         "logicalParentUuid": "2", "content": "Conversation compacted"},
        msg("4", "3", "user", "This session is being continued...", isCompactSummary=True),
        msg("5", "4", "assistant", "ok"),
    ]  # fmt: skip
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    result = import_claude_code(path)
    assert [m.text for m in result.session.messages] == [
        "first question",
        "first answer",
        "This session is being continued...",
        "ok",
    ]
    assert "off_branch" not in result.skipped


def test_tool_result_blocks_and_text_in_one_user_entry(tmp_path: Path, check_paired: Check) -> None:
    entries = [
        {"type": "user", "message": {"role": "user", "content": "go"}},
        {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": 1}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": "line"},
                {"type": "image", "source": {"type": "base64", "data": "AA"}}]},
            {"type": "text", "text": "and also this"},
            {"type": "document", "source": {}}]}},
    ]  # fmt: skip
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    result = import_claude_code(path)
    msgs = result.session.messages
    check_paired(msgs)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "user"]
    assert msgs[2].text == "line\n[image omitted]"
    assert msgs[3].text == "and also this"
    assert result.skipped == {"content:document": 1}
