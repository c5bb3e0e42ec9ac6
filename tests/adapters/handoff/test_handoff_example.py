"""The handoff example runs offline and shows what it claims."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_handoff_example(tmp_path: Path) -> None:
    env = {**os.environ, "SESSION_MIGRATOR_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [sys.executable, "-W", "error", str(ROOT / "examples" / "handoff.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "compressed" in out
    assert "valid chat with tool pairs: True" in out
    assert "intact (ids, tool calls, results): True" in out
    assert "get_weather({'city': 'Bergen'})" in out
