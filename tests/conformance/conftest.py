"""Fixtures of the conformance suite: the provider emulators, the long threads, the checks.

The real provider classes (langchain-openai, langchain-anthropic, llama-index-llms-openai,
llama-index-llms-anthropic) are pointed at loopback emulators of the OpenAI and Anthropic HTTP
APIs (``_openai_api.py``, ``_anthropic_api.py``), which refuse as the services do. A cell passes
when no request was refused, every request had a valid shape, and the answer reached the user.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conformance._anthropic_api import AnthropicEmulator
from tests.conformance._http import Emulator
from tests.conformance._openai_api import OpenAIEmulator
from tests.conformance._threads import thread


@pytest.fixture
def openai_api() -> Iterator[OpenAIEmulator]:
    emulator = OpenAIEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture
def anthropic_api() -> Iterator[AnthropicEmulator]:
    emulator = AnthropicEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture
def long_thread() -> tuple[tuple[str, str], ...]:
    """120 turns, about 20,000 tokens: over gpt-4's 8,192 window more than twice."""
    return thread(120, 600)


@pytest.fixture
def claude_thread() -> tuple[tuple[str, str], ...]:
    """120 turns, over 200,000 estimated Claude tokens."""
    return thread(120, 4_000)


def guard_note(guard: object) -> str:
    """What the guard's newest report says it fitted to (for failure messages)."""
    report = getattr(guard, "last_report", None)
    if report is None:
        return "guard: no report (it did not fit anything)"
    return (
        f"guard: budget {report.budget:,}, {report.tokens_after:,} tokens after, {report.decision}"
    )


def assert_conforms(api: Emulator, *, at_least: int = 1) -> None:
    """No request refused (the report lists each one: tokens, max_tokens, window)."""
    assert len(api.requests) >= at_least, api.report()
    assert not api.refusals, "refused by the emulator:\n" + api.report()


def assert_refused_without_guard(api: Emulator) -> None:
    """The negative half of a cell: the same request, unguarded, is refused for its length."""
    assert api.refusals, "the unguarded request was accepted: the cell cannot fail\n" + api.report()
    error = str(api.refusals[-1].error)
    assert any(
        s in error
        for s in ("context_length_exceeded", "prompt is too long", "exceed context limit")
    ), api.report()
