"""Structures Claude Code 2.x writes: parallel tool calls on sibling branches, sub-agent
transcripts, and the entry types of current versions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from session_migrator import Message
from session_migrator.importers import PLACEHOLDER_RESULT, import_claude_code

Check = Callable[[Sequence[Message]], None]
PARALLEL_SID = "7e1f3a20-5c4b-4d8e-9f10-2a3b4c5d6e7f"


def _project(fixtures: Path, name: str) -> Path:
    return fixtures / "claude_code_2x" / name


def test_a_result_on_a_sibling_branch_answers_its_parallel_call(
    fixtures: Path, check_paired: Check
) -> None:
    # The last of three parallel tool_use entries hangs off the first one (a sibling of the
    # second), and its result hangs off it: the result is found by tool_use_id.
    result = import_claude_code(_project(fixtures, "-home-dev-api") / f"{PARALLEL_SID}.jsonl")
    msgs = result.session.messages
    check_paired(msgs)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "tool", "tool", "assistant"]
    assert [c.id for c in msgs[1].tool_calls] == [
        "toolu_01ReadValidator",
        "toolu_01GrepRoute",
        "toolu_01ReadTests",
    ]
    tests = next(m for m in msgs if m.tool_call_id == "toolu_01ReadTests")
    assert tests.text.startswith("1\tdef test_login_plus_address():")
    assert all(m.text != PLACEHOLDER_RESULT for m in msgs)
    assert "placeholder_result" not in result.repaired
    assert "off_branch" not in result.skipped
    assert not [w for w in result.warnings if "placeholder" in w or "abandoned" in w]


def test_a_sub_agent_transcript_is_its_own_session_linked_to_its_parent(
    fixtures: Path, check_paired: Check
) -> None:
    folder = _project(fixtures, "-home-dev-api") / PARALLEL_SID / "subagents"
    result = import_claude_code(folder / "agent-a4e80a2.jsonl")
    msgs = result.session.messages
    check_paired(msgs)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert msgs[0].text.startswith("Find every place that validates an email")
    assert msgs[-1].text.startswith("Two validators:")
    assert result.session.id == f"{PARALLEL_SID}/agent-a4e80a2"
    meta = result.session.metadata
    assert meta["parent_session_id"] == PARALLEL_SID
    assert meta["agent_id"] == "a4e80a2"
    assert meta["source_model"] == "claude-haiku-4-5-20251001"
    assert "sidechain" not in result.skipped
    assert "no messages in this session" not in result.warnings
    other = import_claude_code(folder / "agent-b71c9d0.jsonl")
    assert other.session.id == f"{PARALLEL_SID}/agent-b71c9d0"
    parent = import_claude_code(_project(fixtures, "-home-dev-api") / f"{PARALLEL_SID}.jsonl")
    assert parent.session.id == PARALLEL_SID
    assert "parent_session_id" not in parent.session.metadata
    assert not {m.id for m in parent.session.messages} & {m.id for m in msgs}


def test_entry_types_of_current_versions_are_known(fixtures: Path, check_paired: Check) -> None:
    sid = "3c5d7e9f-1a2b-4c3d-8e4f-5a6b7c8d9e0f"
    result = import_claude_code(_project(fixtures, "-home-dev-web") / f"{sid}.jsonl")
    check_paired(result.session.messages)
    assert [m.role for m in result.session.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.warnings == []
    assert not [k for k in result.skipped if k.startswith("unknown")]
    # progress, permission modes, queue operations...: ignored on purpose, counted
    assert result.skipped == {
        "progress": 2,
        "queue-operation": 2,
        "file-history-snapshot": 1,
        "system": 1,
        "permission-mode": 1,
    }
    meta = result.session.metadata
    assert meta["title"] == "Sticky header for the landing page"  # the summary entry
    assert meta["last_prompt"] == "Make the header sticky on the landing page."


def test_titles_written_by_current_versions(tmp_path: Path) -> None:
    import json

    entries = [
        {"type": "ai-title", "aiTitle": "Debug the opacity flicker", "sessionId": "s"},
        {"type": "user", "uuid": "u", "parentUuid": None, "sessionId": "s",
         "message": {"role": "user", "content": "why does it flicker?"}},
        {"type": "custom-title", "customTitle": "flicker", "sessionId": "s"},
        {"type": "mode", "mode": "default", "sessionId": "s"},
    ]  # fmt: skip
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    result = import_claude_code(path)
    assert result.warnings == []
    assert result.session.metadata["title"] == "flicker"  # the user's own title wins
    assert result.session.metadata["ai_title"] == "Debug the opacity flicker"
    assert result.skipped == {"mode": 1}


def test_messages_keep_their_source_times(fixtures: Path) -> None:
    result = import_claude_code(_project(fixtures, "-home-dev-api") / f"{PARALLEL_SID}.jsonl")
    times = result.session.metadata["source_timestamps"]
    msgs = result.session.messages
    assert [times[m.id] for m in msgs] == [
        "2026-02-18T11:30:21.796Z",
        "2026-02-18T11:30:24.575Z",  # a merged response: its first entry's time
        "2026-02-18T11:30:25.612Z",
        "2026-02-18T11:30:25.700Z",
        "2026-02-18T11:30:25.811Z",
        "2026-02-18T11:30:31.004Z",
    ]
    # and each message carries its time, which the store keeps (not the import's)
    from session_migrator.store import open_store

    assert [m.timestamp.isoformat() if m.timestamp else None for m in msgs][:2] == [
        "2026-02-18T11:30:21.796000+00:00",
        "2026-02-18T11:30:24.575000+00:00",
    ]
    store = open_store("memory://")
    store.append(result.session.id, msgs)
    stored = store.load(result.session.id)
    assert [m.timestamp for m in stored] == [m.timestamp for m in msgs]


def test_the_chain_may_run_through_the_sibling_branch(
    fixtures: Path, tmp_path: Path, check_paired: Check
) -> None:
    # the same session, but the final answer hangs off the sibling branch's result: the first
    # two results now sit off the chain, and are still found by their tool_use_id
    import json

    source = _project(fixtures, "-home-dev-api") / f"{PARALLEL_SID}.jsonl"
    entries = [json.loads(line) for line in source.read_text().splitlines()]
    entries[-1]["parentUuid"] = "c1000009-0000-4000-8000-000000000009"
    path = tmp_path / f"{PARALLEL_SID}.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    result = import_claude_code(path)
    msgs = result.session.messages
    check_paired(msgs)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "tool", "tool", "assistant"]
    assert all(m.text != PLACEHOLDER_RESULT for m in msgs)
    assert "off_branch" not in result.skipped


def test_a_sub_agent_names_the_parent_call_that_started_it(tmp_path: Path) -> None:
    import json

    sid = "p-1"
    parent = [
        {"type": "user", "uuid": "u", "parentUuid": None, "sessionId": sid,
         "message": {"role": "user", "content": "explore the repo"}},
        {"type": "assistant", "uuid": "a", "parentUuid": "u", "sessionId": sid,
         "message": {"id": "m", "role": "assistant", "content": [
             {"type": "tool_use", "id": "toolu_Task1", "name": "Task",
              "input": {"subagent_type": "Explore", "prompt": "map the repo"}}]}},
        {"type": "user", "uuid": "r", "parentUuid": "a", "sessionId": sid,
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_Task1", "content": [
                 {"type": "text", "text": "Three packages.\\nagentId: ab12cd3 (for resuming)"}]}]}},
    ]  # fmt: skip
    agent = [
        {"type": "user", "uuid": "x", "parentUuid": None, "sessionId": sid, "isSidechain": True,
         "agentId": "ab12cd3", "message": {"role": "user", "content": "map the repo"}},
    ]  # fmt: skip
    (tmp_path / f"{sid}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in parent))
    folder = tmp_path / sid / "subagents"
    folder.mkdir(parents=True)
    (folder / "agent-ab12cd3.jsonl").write_text(json.dumps(agent[0]) + "\n")
    meta = import_claude_code(folder / "agent-ab12cd3.jsonl").session.metadata
    assert meta["parent_tool_call_id"] == "toolu_Task1"
    (tmp_path / f"{sid}.jsonl").unlink()
    assert (
        "parent_tool_call_id"
        not in import_claude_code(folder / "agent-ab12cd3.jsonl").session.metadata
    )
