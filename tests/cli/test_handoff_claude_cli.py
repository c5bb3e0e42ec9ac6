"""The real Claude Code CLI (``@anthropic-ai/claude-code`` from the npm registry, installed by
``.ci/run`` into ``.ci/agents``, or named by ``SESSION_MIGRATOR_CLAUDE_BIN``) resumes a session
handed off to it: ``claude -p ... --resume <id>`` against a loopback emulator of Anthropic's
Messages API sends the handed-off history, and the turn finishes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from session_migrator import Message, ToolCall, migrate
from session_migrator.importers import write_claude_code
from tests.conformance._anthropic_api import AnthropicEmulator
from tests.conformance._http import Text

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
