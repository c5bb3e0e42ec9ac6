"""The core quickstart example runs offline, warning-free, and shows what it claims."""

from __future__ import annotations

from collections.abc import Callable


def test_quickstart_example(run_example: Callable[[str], str]) -> None:
    lines = run_example("quickstart.py").splitlines()
    assert any(line.startswith("gpt-4o ") and "fits" in line for line in lines)
    assert any(line.startswith("gpt-4 ") and "compressed" in line for line in lines)
    assert lines[-1].endswith("True")
