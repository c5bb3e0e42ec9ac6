"""The MCP server takes a coding agent's session from disk (issue 46): ``import_session`` by path
or as the newest session of a working directory, and ``handoff_session`` the same way, answering
small (the stored id, counts, a brief, the resume command) whatever the file's size, with the
answer's JSON in its text for the clients that read only text. Over stdio, with the ``mcp`` SDK's
own client."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

from session_migrator import Message, ToolCall
from session_migrator.importers import claude_project_dir, import_codex, write_claude_code
from session_migrator.store import open_store
from tests.server.test_mcp_stdio import Connect, _error, _ok, _text

FIXTURES = Path(__file__).resolve().parents[1] / "importers" / "fixtures"
#: a rollout the real Codex 0.169 wrote (two turns, one exec_command call), paths made neutral
CODEX = next((FIXTURES / "codex_0169").rglob("rollout-*.jsonl"))
CODEX_CWD = "/home/dev/invoices"
CLAUDE = (
    FIXTURES / "claude_code_2x" / "-home-dev-api" / "7e1f3a20-5c4b-4d8e-9f10-2a3b4c5d6e7f.jsonl"
)


def _codex_home(home: Path) -> Path:
    """``home`` with the real rollout where Codex keeps it."""
    day = home / ".codex" / "sessions" / "2026" / "12" / "05"
    day.mkdir(parents=True)
    return Path(shutil.copy(CODEX, day / CODEX.name))


def _big_claude_session(home: Path, cwd: str, turns: int = 60) -> Path:
    """A Claude Code session of about 150k tokens (a pasted log and a Bash call per step)."""
    messages = [Message("user", "We keep the codeword OSPREY-7 for this refactor.")]
    for k in range(turns):
        log = "\n".join(f"worker-{k} handled request {j} in {j * 7} ms" for j in range(150))
        call = ToolCall(f"toolu_{k:03d}", "Bash", json.dumps({"command": f"rg -c slow log_{k}"}))
        messages += [
            Message("user", f"Step {k}: why is worker {k} slow? The log:\n{log}"),
            Message("assistant", "", tool_calls=(call,)),
            Message("tool", f"{k + 3}", tool_call_id=call.id),
            Message("assistant", f"Worker {k} has {k + 3} slow requests."),
        ]
    _, path = write_claude_code(messages, home=home, cwd=cwd, session_id="big-one")
    return path


async def test_import_session_reads_a_file_into_the_store_and_answers_small(
    connect: Connect, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'mcp.db'}"
    source = import_codex(CODEX).session
    async with connect("--store", store) as session:
        first = await session.call_tool("import_session", {"path": str(CODEX)})
        again = _ok(await session.call_tool("import_session", {"path": str(CODEX)}))
        fitted = _ok(
            await session.call_tool("session_context", {"session_id": source.id, "model": "gpt-4o"})
        )
    done = _ok(first)
    assert done["session_id"] == source.id == "01a247da-6bdf-7542-875e-a9dc50bc4942"
    assert done["source_format"] == "codex"
    assert done["messages"] == done["stored"] == len(source.messages) == 8
    assert done["tool_calls"] == 1
    assert done["cwd"] == CODEX_CWD
    assert done["source_model"] == "gpt-5-codex"
    assert done["brief"].startswith("# Read notes.txt and tell me the release deadline.")
    assert len(_text(first)) < 3_000  # the file is 56 KB
    assert _text(first).startswith(f"imported 8 message(s) of {CODEX} as session ")
    assert again["stored"] == 0  # imported before: nothing stored twice
    # the store has the whole session, harness included: the tools read it by its id
    assert fitted["decision"] == "fits"
    assert "Which single change removes most of those risks?" in json.dumps(fitted["messages"])
    assert "<permissions instructions>" in json.dumps(fitted["messages"])


async def test_import_session_takes_the_newest_session_of_a_working_directory(
    connect: Connect, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    folder = claude_project_dir(home, "/home/dev/api")
    folder.mkdir(parents=True)
    older = Path(shutil.copy(CLAUDE, folder / "older.jsonl"))
    newer = Path(shutil.copy(CLAUDE, folder / CLAUDE.name))
    os.utime(older, (1_700_000_000, 1_700_000_000))
    # the same project folder name, another directory (/home/dev-api): not this one's
    other = folder / "other.jsonl"
    other.write_text(CLAUDE.read_text().replace('"cwd":"/home/dev/api"', '"cwd":"/home/dev-api"'))
    async with connect() as session:
        found = _ok(
            await session.call_tool(
                "import_session",
                {"cwd": "/home/dev/api", "source": "claude-code", "home": str(home),
                 "session_id": "api-latest"},
            )
        )  # fmt: skip
        either = _ok(
            await session.call_tool("import_session", {"cwd": "/home/dev/api", "home": str(home)})
        )
        nothing = _error(
            await session.call_tool("import_session", {"cwd": "/home/dev/web", "home": str(home)})
        )
        neither = _error(await session.call_tool("import_session", {}))
    assert found["path"] == either["path"] == str(newer)
    assert found["session_id"] == "api-latest"
    assert found["source_format"] == "claude-code"
    assert found["git_branch"] == "fix-auth"
    assert "no session of /home/dev/web found" in nothing
    assert "give path" in neither


async def test_handoff_session_continues_the_newest_codex_session_of_a_directory(
    connect: Connect, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    rollout = _codex_home(home)
    store = f"sqlite:///{tmp_path / 'mcp.db'}"
    async with connect("--store", store) as session:
        result = await session.call_tool(
            "handoff_session",
            {"cwd": CODEX_CWD, "source": "codex", "to": "claude-code",
             "model": "claude-haiku-4-5", "home": str(home)},
        )  # fmt: skip
    done = _ok(result)
    assert done["source_path"] == str(rollout)
    assert done["source_format"] == "codex"
    assert done["cwd"] == CODEX_CWD
    written = Path(done["path"])
    assert written.is_relative_to(claude_project_dir(home, CODEX_CWD))
    assert done["command"] == (
        f"cd {CODEX_CWD} && claude --resume {done['session_id']} --model claude-haiku-4-5"
    )
    # Codex's own prompt and its sandbox, skills and environment blocks stay behind; the
    # project's AGENTS.md goes to Claude Code, which does not read it itself
    assert set(done["harness_left_out"]) == {
        "base_instructions", "<skills_instructions>", "<permissions instructions>",
        "<environment_context>",
    }  # fmt: skip
    assert done["harness_tokens"] > 4_000
    text = written.read_text()
    for block in ("<skills_instructions>", "<permissions instructions>", "<environment_context>"):
        assert block not in text
    assert "# AGENTS.md instructions for /home/dev/invoices" in text
    assert "Which single change removes most of those risks?" in text
    # the store keeps the whole source session, harness included
    with open_store(store) as opened:
        kept = opened.load(done["stored_session_id"])
    assert any("<permissions instructions>" in m.text for m in kept)
    assert len(kept) == done["source_messages"]
    assert len(_text(result)) < 4_000


async def test_a_large_session_is_handed_off_by_its_directory_for_a_small_answer(
    connect: Connect, tmp_path: Path
) -> None:
    # what an agent would send as messages_json without these tools: the whole history
    home = tmp_path / "home"
    path = _big_claude_session(home, "/home/dev/big")
    assert path.stat().st_size > 400_000
    async with connect() as session:
        result = await session.call_tool(
            "handoff_session",
            {"cwd": "/home/dev/big", "to": "codex", "model": "gpt-5-codex", "home": str(home)},
        )
    done = _ok(result)
    assert done["source_path"] == str(path)
    assert done["source_messages"] == 241
    assert len(_text(result)) < 4_000  # about a thousand tokens, for a 150k-token session
