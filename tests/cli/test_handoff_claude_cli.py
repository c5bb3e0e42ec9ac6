"""The real Claude Code CLI (``@anthropic-ai/claude-code`` from the npm registry, installed by
``.ci/run`` into ``.ci/agents``, or named by ``SESSION_MIGRATOR_CLAUDE_BIN``) resumes a session
handed off to it: ``claude -p ... --resume <id>`` against a loopback emulator of Anthropic's
Messages API sends the handed-off history, and the turn finishes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from session_migrator import Message, ToolCall, migrate
from session_migrator.importers import write_claude_code
from session_migrator.importers._handoff import handoff
from tests.conformance._anthropic_api import AnthropicEmulator
from tests.conformance._http import Text
from tests.importers._rollout import Rollout

ROOT = Path(__file__).resolve().parents[2]
CLAUDE = Path(
    os.environ.get(
        "SESSION_MIGRATOR_CLAUDE_BIN", ROOT / ".ci" / "agents" / "node_modules" / ".bin" / "claude"
    )
)
MODEL = "claude-sonnet-4-20250514"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CLAUDE.exists(),
        reason=f"the Claude Code CLI is not installed at {CLAUDE} (.ci/run installs it)",
    ),
]


def test_claude_code_resumes_a_handed_off_session(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "project"
    work.mkdir()
    session = [
        Message("user", "Remember the codeword: PELICAN-42."),
        Message("assistant", "", tool_calls=(ToolCall("toolu_01", "Bash", '{"command": "ls"}'),)),
        Message("tool", "README.md", tool_call_id="toolu_01"),
        Message("assistant", "Noted the codeword."),
    ]
    fitted = migrate(session, MODEL).messages
    sid, _ = write_claude_code(fitted, home=home, cwd=str(work), git_branch="main", model=MODEL)
    api = AnthropicEmulator().start()
    try:
        for _ in range(5):
            api.script(Text("The codeword is PELICAN-42."))
        env = {
            **os.environ,
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "test-key",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        done = subprocess.run(
            [str(CLAUDE), "-p", "What is the codeword?", "--resume", sid, "--model", MODEL],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "PELICAN-42" in done.stdout
        turns = [r for r in api.accepted if r.body.get("model") == MODEL]
        assert turns, api.report()
        sent = json.dumps(turns[0].body["messages"])
        assert "Remember the codeword: PELICAN-42." in sent  # the handed-off history
        assert "toolu_01" in sent  # its tool call and result, paired
        assert "What is the codeword?" in sent
    finally:
        api.stop()


def test_claude_code_resumes_a_codex_session_with_patches(tmp_path: Path) -> None:
    """A Codex rollout whose patches became Claude Code's own ``Edit`` and ``Write`` calls: the
    real CLI resumes it and sends them, each paired with its result."""
    home, work = tmp_path / "home", tmp_path / "project"
    work.mkdir()
    r = Rollout()
    r.user("Make total() return 0 for no lines, with a test.")
    r.patch(
        "*** Begin Patch\n*** Update File: src/totals.py\n@@\n subtotal = sum(lines)\n"
        "-return round(subtotal, 2)\n+return round(subtotal, 2) if lines else 0\n*** End Patch\n"
    )
    r.patch("*** Begin Patch\n*** Add File: tests/test_totals.py\n+assert total([]) == 0\n"
            "*** End Patch\n")  # fmt: skip
    r.shell("npm test", output="ok")
    r.answer("Done: total() returns 0 for no lines; npm test passes.")
    done = handoff(r.write(tmp_path), to="claude-code", model=MODEL, home=home, cwd=str(work))
    api = AnthropicEmulator().start()
    try:
        for _ in range(5):
            api.script(Text("It returns 0 for no lines now."))
        proc = subprocess.run(
            [str(CLAUDE), "-p", "What did you change?", "--resume", done.session_id,
             "--model", MODEL],
            cwd=work, env=_env(home, api.url), capture_output=True, text=True, timeout=180,
            check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        turns = [r for r in api.accepted if r.body.get("model") == MODEL]
        assert turns, api.report()
        sent = turns[0].body["messages"]
        uses = {
            b["id"]: b for m in sent if m["role"] == "assistant" for b in _blocks(m)
            if b.get("type") == "tool_use"
        }  # fmt: skip
        results = [
            b["tool_use_id"] for m in sent if m["role"] == "user" for b in _blocks(m)
            if b.get("type") == "tool_result"
        ]  # fmt: skip
        by_name = {b["name"]: b["input"] for b in uses.values()}
        assert by_name["Edit"]["file_path"] == f"{work}/src/totals.py"
        assert by_name["Edit"]["old_string"] == "subtotal = sum(lines)\nreturn round(subtotal, 2)"
        assert by_name["Write"]["file_path"] == f"{work}/tests/test_totals.py"
        assert by_name["Bash"] == {"command": "cd /home/dev/web && npm test"}  # its workdir
        assert sorted(results) == sorted(uses)  # every call paired with its result
        assert "What did you change?" in json.dumps(sent)
    finally:
        api.stop()


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _env(home: Path, url: str) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "test-key",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
