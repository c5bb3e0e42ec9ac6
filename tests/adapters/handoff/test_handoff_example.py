"""The handoff example runs offline and shows what it claims."""

from __future__ import annotations

from collections.abc import Callable

import pytest


@pytest.mark.slow
def test_handoff_example(run_example: Callable[[str], str]) -> None:
    out = run_example("handoff.py")
    assert "compressed" in out
    assert "valid chat with tool pairs: True" in out
    assert "intact (ids, tool calls, results): True" in out
    assert "get_weather({'city': 'Bergen'})" in out
