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
