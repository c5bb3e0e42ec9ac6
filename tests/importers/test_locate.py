"""The newest session an agent keeps for a working directory (``newest_session``): Claude Code's
project folder, Codex's rollouts by their ``session_meta`` cwd, ``$CODEX_HOME``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from session_migrator import ImportFormatError, Message
from session_migrator.importers import newest_session, write_claude_code, write_codex

CHAT = [Message("user", "Round once."), Message("assistant", "Done.")]


def test_codex_rollouts_are_found_by_their_cwd_under_codex_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex_home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    _, mine = write_codex(CHAT, codex_home=codex_home, cwd="/home/dev/invoices")
    _, other = write_codex(CHAT, codex_home=codex_home, cwd="/home/dev/other")
    os.utime(mine, (1_700_000_000, 1_700_000_000))  # older than the other directory's
    assert newest_session("/home/dev/invoices/", source="codex") == ("codex", mine)
    assert newest_session("/home/dev/other") == ("codex", other)
    with pytest.raises(ImportFormatError, match="no session of /home/dev/none found"):
        newest_session("/home/dev/none", source="codex")


def test_the_agent_written_last_wins_and_sub_agents_are_not_sessions(tmp_path: Path) -> None:
    _, rollout = write_codex(CHAT, codex_home=tmp_path / ".codex", cwd="/home/dev/app")
    _, claude = write_claude_code(CHAT, home=tmp_path, cwd="/home/dev/app", session_id="s1")
    os.utime(rollout, (1_700_000_000, 1_700_000_000))
    sub = claude.with_suffix("") / "subagents" / "agent-a1.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_bytes(claude.read_bytes())  # newer, but a sub-agent's transcript
    assert newest_session("/home/dev/app", home=tmp_path) == ("claude-code", claude)
    assert newest_session("/home/dev/app", source="codex", home=tmp_path) == ("codex", rollout)
    with pytest.raises(ValueError, match="source must be one of"):
        newest_session("/home/dev/app", source="gemini-cli", home=tmp_path)
