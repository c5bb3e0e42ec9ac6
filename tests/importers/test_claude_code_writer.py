"""The Claude Code writer takes Codex's shell calls into Claude Code's own ``Bash`` tool, paired
with their results; other calls keep their name."""

from __future__ import annotations

import json
from pathlib import Path

from session_migrator import Message, ToolCall
from session_migrator.importers import import_claude_code, write_claude_code


def test_codex_shell_calls_become_bash(tmp_path: Path) -> None:
    calls = (
        ToolCall("c1", "shell_command", json.dumps({"command": "ls", "workdir": "/srv/app"})),
        ToolCall("c2", "exec_command", json.dumps({"cmd": "pytest -q", "workdir": "/srv/app/web"})),
        ToolCall(
            "c3", "local_shell", json.dumps({"type": "exec", "command": ["bash", "-lc", "pwd"]})
        ),
        ToolCall("c4", "shell", json.dumps({"command": ["git", "status"]})),
        ToolCall("c5", "apply_patch", json.dumps({"input": "*** Begin Patch\n*** End Patch"})),
    )
    session = [
        Message("user", "Look around."),
        Message("assistant", "", tool_calls=calls),
        *(Message("tool", f"out {c.id}", tool_call_id=c.id) for c in calls),
        Message("assistant", "Done."),
    ]
    _, path = write_claude_code(session, home=tmp_path, cwd="/srv/app")
    back = import_claude_code(path).session.messages
    got = [(c.id, c.name, json.loads(c.arguments)) for m in back for c in m.tool_calls]
    assert got == [
        ("c1", "Bash", {"command": "ls"}),
        ("c2", "Bash", {"command": "cd /srv/app/web && pytest -q"}),
        ("c3", "Bash", {"command": "pwd"}),
        ("c4", "Bash", {"command": "git status"}),
        ("c5", "apply_patch", {"input": "*** Begin Patch\n*** End Patch"}),
    ]
    assert [(m.tool_call_id, m.text) for m in back if m.role == "tool"] == [
        (c.id, f"out {c.id}") for c in calls
    ]
