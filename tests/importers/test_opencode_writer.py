"""The OpenCode writer: a Claude Code or Codex session written as the export ``opencode import``
reads (``{"info", "messages": [{"info", "parts"}]}``), each call and its result one completed
``tool`` part in OpenCode's vocabulary; and, where the real ``opencode`` is installed (``.ci/run``
installs ``opencode-ai`` into ``.ci/agents``), imported by it and exported back unchanged."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from session_migrator import Message, ToolCall
from session_migrator.importers import handoff, write_opencode

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE = FIXTURES / "claude_code" / "-home-dev-shop" / "5b1c9e2a-7d4f-4c3b-9a8e-1f2d3c4b5a69.jsonl"
CODEX = next((FIXTURES / "codex_current" / "2026").rglob("rollout-*.jsonl"))
OPENCODE = Path(
    os.environ.get(
        "SESSION_MIGRATOR_OPENCODE_BIN",
        ROOT / ".ci" / "agents" / "node_modules" / ".bin" / "opencode",
    )
)


def _tools(export: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for m in export["messages"] for p in m["parts"] if p["type"] == "tool"]


def test_a_claude_code_session_becomes_an_opencode_export(tmp_path: Path) -> None:
    model = "anthropic/claude-sonnet-4-5"
    done = handoff(CLAUDE, to="opencode", model=model, home=tmp_path, cwd="/home/dev/shop")
    assert done.path == tmp_path / ".local/share/opencode/handoff" / f"{done.session_id}.json"
    assert done.session_id.startswith("ses_")
    load = f"cd /home/dev/shop && opencode import {done.path} && opencode"
    assert done.commands[0] == f"{load} --session {done.session_id} -m {model}"
    assert done.commands[1].startswith(f"{load} run --session {done.session_id} -m {model} ")
    export = json.loads(done.path.read_text(encoding="utf-8"))
    assert export["info"]["id"] == done.session_id
    assert export["info"]["directory"] == "/home/dev/shop"
    messages = export["messages"]
    ids = [m["info"]["id"] for m in messages]
    assert ids == sorted(ids)  # OpenCode orders a session's messages by id
    assert messages[0]["info"]["role"] == "user"
    for m in messages:
        info = m["info"]
        assert info["sessionID"] == done.session_id
        assert all(p["messageID"] == info["id"] for p in m["parts"])
        if info["role"] == "assistant":
            assert (info["providerID"], info["modelID"]) == ("anthropic", "claude-sonnet-4-5")
            assert info["parentID"] in ids[: ids.index(info["id"])]
    tools = _tools(export)
    assert [t["tool"] for t in tools] == ["grep", "read", "bash", "edit"]
    assert [t["callID"] for t in tools] == [
        "toolu_01Grep", "toolu_01Read", "toolu_01Bash", "toolu_01Edit",
    ]  # fmt: skip
    assert all(t["state"]["status"] == "completed" for t in tools)
    assert tools[3]["state"]["input"]["oldString"] == "coupon.amount * 100"
    assert tools[0]["state"]["output"].startswith("src/cart.py:41")
    # the source's own times, in milliseconds
    assert messages[0]["info"]["time"]["created"] == 1756893601000


def test_codex_shell_calls_become_bash_and_ids_are_checked(tmp_path: Path) -> None:
    done = handoff(CODEX, to="opencode", model="openai/gpt-5-codex", home=tmp_path)
    names = {t["tool"] for t in _tools(json.loads(done.path.read_text(encoding="utf-8")))}
    assert "bash" in names
    assert not names & {"shell_command", "exec_command", "shell"}
    with pytest.raises(ValueError, match="ses"):
        write_opencode([Message("user", "hi")], cwd="/w", model="x/y", home=tmp_path,
                       session_id="not-an-opencode-id")  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(
    not OPENCODE.exists() or shutil.which("node") is None,
    reason=f"OpenCode is not installed at {OPENCODE} (.ci/run installs opencode-ai with npm)",
)
def test_the_real_opencode_imports_it_and_exports_it_back(tmp_path: Path) -> None:
    messages = [
        Message("user", "Run the tests."),
        Message("assistant", "", tool_calls=(ToolCall("call_1", "Bash", '{"command": "pytest"}'),)),
        Message("tool", "3 passed", tool_call_id="call_1"),
        Message("assistant", "All 3 tests pass."),
    ]
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    sid, path = write_opencode(messages, cwd=str(work), model="openai/gpt-4o", home=home)
    env = {**os.environ, "HOME": str(home), "OPENCODE_DISABLE_AUTOUPDATE": "1"}
    for kind in ("DATA", "CONFIG", "CACHE", "STATE"):
        env.pop(f"XDG_{kind}_HOME", None)

    def opencode(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(OPENCODE), *args],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=180,
            check=False,
        )

    run = opencode("import", str(path))
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"Imported session: {sid}" in run.stdout
    listed = opencode("session", "list")
    assert sid in listed.stdout, listed.stderr[-3000:]
    back = opencode("export", sid)
    assert back.returncode == 0, back.stderr[-3000:]
    exported = json.loads(back.stdout[back.stdout.index("{") :])
    roles = [m["info"]["role"] for m in exported["messages"]]
    assert roles == ["user", "assistant", "assistant"]
    (tool,) = _tools(exported)
    assert (tool["tool"], tool["callID"]) == ("bash", "call_1")
    assert tool["state"]["input"]["command"] == "pytest"
    assert tool["state"]["output"] == "3 passed"
    assert exported["info"]["directory"] == str(work)
