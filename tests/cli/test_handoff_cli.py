"""``session-migrator handoff``: a Codex session continued in Claude Code and a Claude Code
session continued in Codex, each written where the target looks for its sessions, fitted to the
target model, read back by the target's importer with its messages, tool pairs, times, working
directory and branch."""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path

import pytest

from session_migrator import Message, migrate, register_model
from session_migrator.cli import main
from session_migrator.importers import claude_project_dir, import_claude_code, import_codex
from session_migrator.store import open_store

FIXTURES = Path(__file__).resolve().parents[1] / "importers" / "fixtures"
CODEX = next((FIXTURES / "codex_current" / "2026").rglob("rollout-*.jsonl"))
CLAUDE = (
    FIXTURES / "claude_code_2x" / "-home-dev-api" / "7e1f3a20-5c4b-4d8e-9f10-2a3b4c5d6e7f.jsonl"
)
SID = "0199a0b1-1c2d-7e3f-8a4b-5c6d7e8f9a0b"


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
    interactive, headless, blank, title, *_ = out.out.splitlines()
    assert (blank, title) == ("", "# Invoice totals are off by a cent. Find where we round.")
    assert interactive == f"cd {cwd} && claude --resume handed-off --model claude-sonnet-4-5"
    assert headless.startswith(f"cd {cwd} && claude -p ")
    assert headless.endswith(" --resume handed-off --model claude-sonnet-4-5")
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
    # Codex's shell_command, in Claude Code's own Bash (it ran in the session's cwd)
    assert [(c.name, json.loads(c.arguments)) for m in read for c in m.tool_calls] == [
        ("Bash", {"command": "rg -n 'round(' src/totals.py"})
    ]
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


def test_a_claude_code_session_continues_in_codex(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = import_claude_code(CLAUDE)
    code = main(
        ["handoff", str(CLAUDE), "--to", "codex", "--model", "gpt-5-codex",
         "--home", str(tmp_path), "--session-id", SID]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr()
    commands, brief = out.out.split("\n\n", 1)
    assert commands.splitlines() == [
        f"cd /home/dev/api && codex resume {SID} -m gpt-5-codex",
        f"cd /home/dev/api && codex exec resume -m gpt-5-codex {SID} "
        "'Where were we? Continue from the last state.'",
    ]
    # the brief: the goal, the files touched, what was found, the last state
    assert brief.startswith("# Why does login fail for users with a plus sign in their email?")
    assert "`src/auth/validate.py`: read" in brief
    assert "## Last exchange" in brief
    assert len(brief) <= 1_500
    written = next((tmp_path / ".codex" / "sessions").rglob(f"rollout-*-{SID}.jsonl"))
    assert str(written) in out.err
    back = import_codex(written)
    assert back.warnings == []
    assert back.session.metadata["cwd"] == "/home/dev/api"
    assert back.session.metadata["git_branch"] == "fix-auth"
    original = source.session.messages
    read = back.session.messages
    assert [(m.role, m.text) for m in read] == [(m.role, m.text) for m in original]
    assert [c.id for m in read for c in m.tool_calls] == [
        c.id for m in original for c in m.tool_calls
    ]
    assert [m.tool_call_id for m in read if m.role == "tool"] == [
        m.tool_call_id for m in original if m.role == "tool"
    ]
    assert [m.timestamp for m in read] == [m.timestamp for m in original]


def test_codex_home_is_where_codex_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert main(["handoff", str(CODEX), "--to", "codex", "--model", "gpt-5-codex",
                 "--no-brief"]) == 0  # fmt: skip
    assert len(list((tmp_path / "codex-home" / "sessions").rglob("rollout-*.jsonl"))) == 1
    assert not (tmp_path / "home").exists()
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2  # the commands only
    assert "codex resume" in out[0]


def test_a_handoff_keeps_room_for_the_target_harness(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    register_model("tiny-codex-handoff", context_window=360, max_output_tokens=100)
    plain = migrate([Message("user", "hi")], "tiny-codex-handoff").report.budget
    for to in ("claude-code", "codex"):
        assert main(["handoff", str(CODEX), "--to", to, "--model", "tiny-codex-handoff",
                     "--home", str(tmp_path / to)]) == 0  # fmt: skip
        err = capsys.readouterr().err
        assert "compressed" in err
        found = re.search(r"of ([\d,]+) tokens", err)
        assert found is not None
        # the target's own prompt and tools are sent besides the session: up to an eighth of a
        # small window is kept for them (less the fit's margin on it)
        budget = int(found.group(1).replace(",", ""))
        assert plain - 360 // 8 <= budget < plain - 36
    written = next((tmp_path / "codex").rglob("rollout-*.jsonl"))
    kinds = [json.loads(line)["type"] for line in written.read_text().splitlines()]
    assert kinds[:3] == ["session_meta", "turn_context", "compacted"]


def test_a_large_window_keeps_the_measured_harness(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for to, model, harness in (
        ("claude-code", "claude-sonnet-4-5", 200_000 // 8),  # (an eighth of the window: < 30k)
        ("codex", "gpt-5-codex", 9_000),
    ):
        plain = migrate([Message("user", "hi")], model).report.budget
        assert main(["handoff", str(CODEX), "--to", to, "--model", model,
                     "--home", str(tmp_path / to), "--no-brief"]) == 0  # fmt: skip
        found = re.search(r"of ([\d,]+) tokens", capsys.readouterr().err)
        assert found is not None
        budget = int(found.group(1).replace(",", ""))
        assert plain - harness <= budget <= plain - harness * 0.9


def test_a_codex_session_id_is_a_uuid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["handoff", str(CODEX), "--to", "codex", "--model", "gpt-5-codex",
                 "--home", str(tmp_path), "--session-id", "handed-off"])  # fmt: skip
    assert code == 2
    assert "UUID" in capsys.readouterr().err


def test_the_source_harness_is_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Codex's <permissions instructions> describe Codex's sandbox to Codex's model: the target
    # states its own; the rest of the session goes over
    assert main(["handoff", str(CODEX), "--to", "codex", "--model", "gpt-5-codex",
                 "--home", str(tmp_path), "--no-brief"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "left out the source agent's harness: " in err
    assert "(base_instructions, <permissions instructions>; 1 message(s) whole)" in err
    written = next(tmp_path.rglob("rollout-*.jsonl"))
    assert "<permissions instructions>" not in written.read_text()
    assert "<permissions instructions>" in CODEX.read_text()  # the source keeps it
    back = import_codex(written).session.messages
    source = import_codex(CODEX).session.messages
    assert [(m.role, m.text) for m in back] == [(m.role, m.text) for m in source[1:]]


#: a rollout the real Codex 0.169 wrote (its base instructions, skills, permissions, AGENTS.md
#: and environment; two turns, one exec_command call), paths made neutral
REAL_CODEX = next((FIXTURES / "codex_0169").rglob("rollout-*.jsonl"))
HARNESS = ("<skills_instructions>", "<permissions instructions>", "<environment_context>")


def test_an_8k_target_gets_the_conversation_not_the_source_harness(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = import_codex(REAL_CODEX)
    conversation = [m for m in source.session.messages if not m.text.startswith(("<", "# AGENTS"))]
    assert main(["handoff", str(REAL_CODEX), "--to", "codex", "--model", "gpt-4",
                 "--home", str(tmp_path), "--no-brief"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    found = re.search(r"\((\d+) of (\d+) messages, ([\d,]+) of ([\d,]+) tokens: fits\)", err)
    assert found is not None, err
    budget = int(found.group(4).replace(",", ""))
    harness = re.search(r"left out the source agent's harness: ([\d,]+) tokens", err)
    assert harness is not None, err
    # Codex's own prompt (about 4.4k tokens) and blocks would take the whole 8k budget (5,120
    # tokens after the reply and Codex's own harness); left out, the conversation fits whole
    assert int(harness.group(1).replace(",", "")) > budget * 0.9
    assert "base_instructions" in err
    assert "AGENTS.md" in err
    written = next(tmp_path.rglob("rollout-*.jsonl"))
    text = written.read_text()
    for block in (*HARNESS, "# AGENTS.md instructions", "You are a coding agent running"):
        assert block not in text  # Codex re-reads AGENTS.md and sends its own prompt
    back = import_codex(written).session.messages
    assert [(m.role, m.text) for m in back] == [(m.role, m.text) for m in conversation]
    assert [c.name for m in back for c in m.tool_calls] == ["exec_command"]
    assert "<permissions instructions>" in REAL_CODEX.read_text()  # the source keeps it


def test_agents_md_goes_to_an_agent_that_does_not_read_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["handoff", str(REAL_CODEX), "--to", "claude-code", "--model", "gpt-4",
                 "--home", str(tmp_path), "--no-brief"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "AGENTS.md" not in err
    written = next(tmp_path.rglob("*.jsonl"))
    back = import_claude_code(written).session.messages
    assert back[0].text.startswith("# AGENTS.md instructions for /home/dev/invoices")
    assert not any(block in m.text for m in back for block in HARNESS)
    assert back[1].text == "Read notes.txt and tell me the release deadline."


def test_without_a_path_the_newest_session_of_the_directory_continues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    day = home / ".codex" / "sessions" / "2026" / "12" / "05"
    day.mkdir(parents=True)
    newest = day / REAL_CODEX.name
    newest.write_bytes(REAL_CODEX.read_bytes())
    older = day / CODEX.name
    older.write_text(CODEX.read_text().replace("/Users/ana/code/invoices", "/home/dev/invoices"))
    os.utime(older, (1_700_000_000, 1_700_000_000))
    code = main(["handoff", "--from", "codex", "--cwd", "/home/dev/invoices", "--to",
                 "claude-code", "--model", "claude-haiku-4-5", "--home", str(home),
                 "--session-id", "picked"])  # fmt: skip
    assert code == 0
    out = capsys.readouterr()
    assert f"continuing {newest} (codex)" in out.err
    assert out.out.startswith("cd /home/dev/invoices && claude --resume picked")
    written = claude_project_dir(home, "/home/dev/invoices") / "picked.jsonl"
    assert "Which single change removes most of those risks?" in written.read_text()
    # without --from, the newest of either agent's: now the Claude Code session just written
    assert main(["handoff", "--cwd", "/home/dev/invoices", "--to", "codex", "--model",
                 "gpt-5-codex", "--home", str(home), "--no-brief"]) == 0  # fmt: skip
    assert f"continuing {written} (claude-code)" in capsys.readouterr().err
    # a directory with none is refused
    assert main(["handoff", "--cwd", "/home/dev/none", "--to", "codex", "--model",
                 "gpt-5-codex", "--home", str(home)]) == 2  # fmt: skip
    assert "no session of /home/dev/none found" in capsys.readouterr().err


def test_the_whole_source_session_is_kept_in_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'kept.db'}"
    for _ in range(2):
        assert main(["handoff", str(REAL_CODEX), "--to", "codex", "--model", "gpt-4",
                     "--home", str(tmp_path), "--store", url, "--no-brief"]) == 0  # fmt: skip
    first, again = re.findall(r"kept the whole source session in .* as '([^']+)' \((\d+)",
                              capsys.readouterr().err)  # fmt: skip
    source = import_codex(REAL_CODEX).session
    assert first == (source.id, str(len(source.messages)))
    assert again == (source.id, "0")  # imported before: nothing stored twice
    with open_store(url) as store:
        kept = store.load(source.id)
    # what the handoff left out is in the store: the harness blocks and AGENTS.md
    assert [m.text for m in kept] == [m.text for m in source.messages]
    assert any("<permissions instructions>" in m.text for m in kept)
    assert main(["handoff", str(REAL_CODEX), "--to", "codex", "--model", "gpt-4",
                 "--home", str(tmp_path), "--no-store", "--no-brief"]) == 0  # fmt: skip
    assert "kept the whole" not in capsys.readouterr().err
