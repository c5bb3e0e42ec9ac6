"""The ``mcp`` command without the extra, and the import boundary of the server module."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from session_migrator.cli import main


def test_without_the_extra_the_command_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mcp", None)  # import mcp -> ImportError
    assert main(["mcp"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'session-migrator[mcp]'" in err
    assert "Traceback" not in err


def test_importing_the_server_module_does_not_import_mcp(tmp_path: Path) -> None:
    code = (
        "import sys, session_migrator, session_migrator.mcp_server, session_migrator.cli;"
        "assert not [m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')], 'mcp loaded';"
        "t = session_migrator.mcp_server.SessionTools(store='memory://');"
        "assert t.model_context_window('gpt-4o')['context_window'] == 128000;"
        "assert 'mcp' not in sys.modules"
    )
    env = {**os.environ, "SESSION_MIGRATOR_HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr


def test_session_tools_without_mcp() -> None:
    from session_migrator.mcp_server import ArgumentError, SessionTools

    tools = SessionTools(store="memory://")
    try:
        appended = tools.session_append("s", '[{"role": "user", "content": "hello"}]')
        assert appended["appended"] == 1
        assert tools.session_usage("s", "gpt-4o")["messages"] == 1
        with pytest.raises(ArgumentError, match="limit must be at least 1"):
            tools.list_known_models(limit=0)
    finally:
        tools.close()
