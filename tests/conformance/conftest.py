"""Fixtures of the conformance suite: the provider emulators, the long threads, the checks.

The real provider classes (langchain-openai, langchain-anthropic, llama-index-llms-openai,
llama-index-llms-anthropic) are pointed at loopback emulators of the OpenAI and Anthropic HTTP
APIs (``_openai_api.py``, ``_anthropic_api.py``), which refuse as the services do. A cell passes
when no request was refused, every request had a valid shape, and the answer reached the user,
and when the guard counted every request at least as the emulator does (:func:`assert_conforms`:
an undercount is caught even where the window had room left for it).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from session_migrator import RequestFit, RequestFitter
from tests.conformance._anthropic_api import AnthropicEmulator
from tests.conformance._http import Emulator
from tests.conformance._needle import needle_api  # noqa: F401  (a fixture, shared)
from tests.conformance._ollama_api import OllamaEmulator
from tests.conformance._openai_api import OpenAIEmulator
from tests.conformance._threads import thread

#: How many tokens the emulator may count over the guard's count of a request it received. The
#: OpenAI emulator counts with the guard's own tiktoken formula (plus nothing the guard leaves
#: out): 0. The Anthropic one scales its reply priming by 1.43 (ceil(3 x 1.43) = 5) where the
#: core counts the fixed 3 of the chat format for every counter: 2.
COUNT_TOLERANCE = {
    "openai": 0,
    "openai-responses": 0,
    "anthropic": 2,
    "bedrock": 2,  # (Claude on Bedrock: counted as the Anthropic emulator counts)
    "ollama": 0,
}

_fits: list[RequestFit] = []
_fits_lock = threading.Lock()


@pytest.fixture(autouse=True)
def guard_counts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[RequestFit]]:
    """Every request fit a guard made in the test (the core ``RequestFitter`` both adapters'
    guards and the agent middleware call), in call order: what each guard counted."""
    fit = RequestFitter.fit

    def recorded(self: RequestFitter, *args: Any, **kwargs: Any) -> RequestFit:
        out = fit(self, *args, **kwargs)
        with _fits_lock:
            _fits.append(out)
        return out

    monkeypatch.setattr(RequestFitter, "fit", recorded)
    _fits.clear()
    yield _fits
    _fits.clear()


def _counted(fit: RequestFit) -> int:
    """What the guard counted of the request it fitted: the messages sent and the schemas."""
    return fit.report.tokens_after + fit.schema_tokens


@pytest.fixture
def openai_api() -> Iterator[OpenAIEmulator]:
    emulator = OpenAIEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture
def ollama_api() -> Iterator[OllamaEmulator]:
    emulator = OllamaEmulator().start()
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
    """No request refused (the report lists each one: tokens, max_tokens, window), and, when a
    guard fitted the requests, each one counted by the emulator at most
    :data:`COUNT_TOLERANCE` tokens over what the guard counted of it (its messages and schemas):
    a guard that undercounts a request is wrong even when the window had room for the
    difference (``max_tokens`` unset, a short thread)."""
    assert len(api.requests) >= at_least, api.report()
    assert not api.refusals, "refused by the emulator:\n" + api.report()
    with _fits_lock:
        fits = list(_fits)
    if not fits:
        return  # a cell without a guard (what a provider class sends)
    assert len(fits) == len(api.requests), (
        f"{len(api.requests)} requests reached the emulator, the guards fitted {len(fits)}:\n"
        + api.report()
    )
    tolerance = COUNT_TOLERANCE[api.name]
    over = [
        f"request {i}: the emulator counted {rec.prompt_tokens:,} prompt tokens, the guard "
        f"{_counted(fit):,} ({fit.report.tokens_after:,} in the messages, "
        f"{fit.schema_tokens:,} in the schemas)"
        for i, (rec, fit) in enumerate(zip(api.requests, fits, strict=True))
        if rec.prompt_tokens > _counted(fit) + tolerance
    ]
    assert not over, (
        f"sent more than the guard counted (tolerance {tolerance}):\n  "
        + "\n  ".join(over)
        + "\n"
        + api.report()
    )


def assert_refused_without_guard(api: Emulator) -> None:
    """The negative half of a cell: the same request, unguarded, is refused for its length."""
    assert api.refusals, "the unguarded request was accepted: the cell cannot fail\n" + api.report()
    error = str(api.refusals[-1].error)
    assert any(
        s in error
        for s in ("context_length_exceeded", "prompt is too long", "exceed context limit")
    ), api.report()
