"""The core quickstart example runs offline, warning-free, and shows what it claims."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_example(tmp_path: Path) -> None:
    env = {**os.environ, "SESSION_MIGRATOR_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [sys.executable, "-W", "error", str(ROOT / "examples" / "quickstart.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("gpt-4o ") and "fits" in line for line in lines)
    assert any(line.startswith("gpt-4 ") and "compressed" in line for line in lines)
    assert lines[-1].endswith("True")
