"""The LlamaIndex examples run offline and show what they claim."""

from __future__ import annotations

from collections.abc import Callable

import pytest


@pytest.mark.slow
def test_llamaindex_chat_example(run_example: Callable[[str], str]) -> None:
    out = run_example("llamaindex_chat.py")
    assert "(compressed;" in out
    assert "[session-migrator: summary of" in out
    assert "nothing was lost: the store holds all 64 messages" in out
    assert "tool calls stored: 1, tool results stored: 1" in out
    assert "gpt-4o -> gpt-4o-mini, gpt-4o-mini -> gpt-4o" in out
