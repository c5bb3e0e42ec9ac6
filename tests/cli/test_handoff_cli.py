"""``session-migrator handoff``: a Codex session continued in Claude Code, written where Claude
Code looks for its sessions, fitted to the target model, read back by the Claude Code importer
with its messages, tool pairs, times, working directory and branch."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from session_migrator import register_model
from session_migrator.cli import main
from session_migrator.importers import claude_project_dir, import_claude_code, import_codex

FIXTURES = Path(__file__).resolve().parents[1] / "importers" / "fixtures"
CODEX = next((FIXTURES / "codex_current" / "2026").rglob("rollout-*.jsonl"))


def test_a_codex_session_continues_in_claude_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = import_codex(CODEX)
    code = main(
        ["handoff", str(CODEX), "--to", "claude-code", "--model", "claude-sonnet-4-5",
         "--home", str(tmp_path), "--session-id", "handed-off"]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr()
    cwd = source.session.metadata["cwd"]
    assert out.out.strip() == f"cd {cwd} && claude --resume handed-off --model claude-sonnet-4-5"
    written = claude_project_dir(tmp_path, cwd) / "handed-off.jsonl"
    entries = [json.loads(line) for line in written.read_text().splitlines()]
    assert {e["sessionId"] for e in entries} == {"handed-off"}
    assert all(e["cwd"] == cwd for e in entries)
    # one chain from the first entry to the last, as Claude Code resumes it
    assert entries[0]["parentUuid"] is None
    assert all(b["parentUuid"] == a["uuid"] for a, b in itertools.pairwise(entries))
    back = import_claude_code(written)
    assert back.warnings == []
    original = [m for m in source.session.messages if m.role != "system"]
    read = [m for m in back.session.messages if m.role != "system"]
    assert [(m.role, m.text) for m in read[-len(original) :]] == [
        (m.role, m.text) for m in original
    ]
    calls = [c.id for m in read for c in m.tool_calls]
    assert calls == [c.id for m in original for c in m.tool_calls]
    assert [m.tool_call_id for m in read if m.role == "tool"] == [
        m.tool_call_id for m in original if m.role == "tool"
    ]
    assert [m.timestamp for m in read[-len(original) :]] == [m.timestamp for m in original]


def test_the_handoff_is_fitted_to_the_target_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    register_model("tiny-claude-handoff", context_window=400, max_output_tokens=100)
    assert main(["handoff", str(CODEX), "--to", "claude-code", "--model", "tiny-claude-handoff",
                 "--home", str(tmp_path), "--session-id", "small"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "compressed" in err
    source = import_codex(CODEX)
    written = next(tmp_path.rglob("small.jsonl"))
    back = import_claude_code(written)
    assert len(back.session.messages) < len(source.session.messages)


def test_a_file_that_is_no_session_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "notes.jsonl"
    bad.write_text("not json\n")
    code = main(["handoff", str(bad), "--to", "claude-code", "--model", "claude-sonnet-4-5",
                 "--home", str(tmp_path)])  # fmt: skip
    assert code == 2
    assert "cannot read" in capsys.readouterr().err
