"""Fixtures for the importer tests: the fixture folder and a pairing check."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from session_migrator import Message

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


def assert_paired(messages: Sequence[Message]) -> None:
    """Every call is answered right after its assistant message; no result is an orphan."""
    i = 0
    while i < len(messages):
        m = messages[i]
        assert m.role != "tool", f"orphan tool result at {i}: {m.tool_call_id}"
        i += 1
        if m.tool_calls:
            wanted = [c.id for c in m.tool_calls]
            got = [x.tool_call_id for x in messages[i : i + len(wanted)]]
            assert got == wanted, f"results after message {i - 1}: {got} != {wanted}"
            assert all(x.role == "tool" for x in messages[i : i + len(wanted)])
            i += len(wanted)
    ids = [m.id for m in messages]
    assert len(ids) == len(set(ids)), "message ids are not unique"


@pytest.fixture
def check_paired() -> Callable[[Sequence[Message]], None]:
    return assert_paired
