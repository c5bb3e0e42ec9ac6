"""The LangChain examples run offline and show what they claim."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _run(name: str, tmp_path: Path) -> str:
    env = {**os.environ, "SESSION_MIGRATOR_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [sys.executable, "-W", "error", str(ROOT / "examples" / name)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow
def test_history_example(tmp_path: Path) -> None:
    out = _run("langchain_history.py", tmp_path)
    assert "compressed" in out
    assert "nothing was lost" in out
    assert "gpt-4o-mini -> gpt-4o" in out


@pytest.mark.slow
def test_agent_example(tmp_path: Path) -> None:
    out = _run("langchain_agent.py", tmp_path)
    assert "ORPHAN" not in out
    assert "nothing was cut from it" in out
    assert "[session-migrator: summary of" in out
