"""The LlamaIndex examples run offline and show what they claim."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def run_example(name: str, tmp_path: Path) -> str:
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
def test_llamaindex_chat_example(tmp_path: Path) -> None:
    out = run_example("llamaindex_chat.py", tmp_path)
    assert "(compressed;" in out
    assert "[session-migrator: summary of" in out
    assert "nothing was lost: the store holds all 64 messages" in out
    assert "tool calls stored: 1, tool results stored: 1" in out
    assert "gpt-4o -> gpt-4o-mini, gpt-4o-mini -> gpt-4o" in out
