"""The LangChain examples run offline and show what they claim."""

from __future__ import annotations

from collections.abc import Callable

import pytest


@pytest.mark.slow
def test_history_example(run_example: Callable[[str], str]) -> None:
    out = run_example("langchain_history.py")
    assert "compressed" in out
    assert "nothing was lost" in out
    assert "gpt-4o-mini -> gpt-4o" in out


@pytest.mark.slow
def test_agent_example(run_example: Callable[[str], str]) -> None:
    out = run_example("langchain_agent.py")
    assert "ORPHAN" not in out
    assert "nothing was cut from it" in out
    assert "[session-migrator: summary of" in out
