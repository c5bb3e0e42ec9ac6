"""The Claude Code writer takes Codex's shell calls into Claude Code's own ``Bash`` tool and its
patches into ``Edit`` and ``Write``, paired with their results; other calls keep their name."""

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
        ("c5", "Bash", {"command": "apply_patch <<'PATCH'\n*** Begin Patch\n*** End Patch\nPATCH"}),
    ]
    assert [(m.tool_call_id, m.text) for m in back if m.role == "tool"] == [
        (c.id, f"out {c.id}") for c in calls
    ]


UPDATE = (
    "*** Begin Patch\n*** Update File: src/totals.py\n@@ def total(lines):\n"
    "     subtotal = sum(lines)\n-    return round(subtotal * RATE, 2)\n"
    "+    return round(subtotal * RATE, 2) if lines else 0\n*** End Patch\n"
)
ADD = (
    "*** Begin Patch\n*** Add File: tests/test_totals.py\n+def test_empty():\n"
    "+    assert total([]) == 0\n*** End Patch"
)
TWO_FILES = (
    "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n"
    "*** Delete File: b.py\n*** End Patch"
)


def test_codex_patches_become_edit_and_write(tmp_path: Path) -> None:
    calls = (
        ToolCall("p1", "apply_patch", json.dumps({"input": UPDATE})),  # a custom tool call
        ToolCall("p2", "apply_patch", json.dumps({"input": ADD})),
        ToolCall("p3", "shell", json.dumps({"command": ["apply_patch", UPDATE]})),
        ToolCall(
            "p4",
            "exec_command",
            json.dumps({"cmd": f"apply_patch <<'EOF'\n{UPDATE}EOF", "workdir": "/srv/app/lib"}),
        ),
        ToolCall("p5", "apply_patch", json.dumps({"input": TWO_FILES})),
    )
    session = [
        Message("user", "Return 0 for no lines, with a test."),
        Message("assistant", "", tool_calls=calls),
        *(Message("tool", f"Success. {c.id}", tool_call_id=c.id) for c in calls),
        Message("assistant", "Done."),
    ]
    _, path = write_claude_code(session, home=tmp_path, cwd="/srv/app")
    back = import_claude_code(path).session.messages
    got = {c.id: (c.name, json.loads(c.arguments)) for m in back for c in m.tool_calls}
    edit = {
        "file_path": "/srv/app/src/totals.py",
        "old_string": "    subtotal = sum(lines)\n    return round(subtotal * RATE, 2)",
        "new_string": (
            "    subtotal = sum(lines)\n    return round(subtotal * RATE, 2) if lines else 0"
        ),
        "replace_all": False,
    }
    assert got["p1"] == ("Edit", edit)
    written = {"file_path": "/srv/app/tests/test_totals.py",
               "content": "def test_empty():\n    assert total([]) == 0\n"}  # fmt: skip
    assert got["p2"] == ("Write", written)
    assert got["p3"] == ("Edit", edit)
    assert got["p4"] == ("Edit", {**edit, "file_path": "/srv/app/lib/src/totals.py"})
    name, args = got["p5"]  # two files: not one Edit; the patch stays readable
    assert name == "Bash"
    assert TWO_FILES in args["command"]
    assert [(m.tool_call_id, m.text) for m in back if m.role == "tool"] == [
        (c.id, f"Success. {c.id}") for c in calls
    ]  # each result after its call, paired
