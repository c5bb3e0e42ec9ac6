"""Compression strategies behind one protocol: ``trim``, ``summarize``, ``recall``, ``auto``.

Every strategy returns, in this order: the system messages; one library message (a summary of
the cut part, or a note saying what was left out); the recalled older turns, in their original
order; the newest turns. Invariants (property-tested):

- the result never costs more than ``budget`` tokens by ``counter``;
- tool calls and their results stay or go together; no orphan result, no unanswered call;
- system messages are kept; the first message after them is a user message;
- the input is not mutated, the same input gives the same output, and every message left out,
  summarized, recalled or cut inside is reported by id.

A summarizer that fails, or writes more than its share, is replaced by the offline extractive
summarizer and the report says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._result import CompressionResult, latest_user_text
from session_migrator.fitting._units import Layout
from session_migrator.messages._messages import Message
from session_migrator.migration._engine import SUMMARY_MAX_TOKENS, _Engine
from session_migrator.migration._system import MIN_CONVERSATION_TOKENS
from session_migrator.summaries._summarizers import ExtractiveSummarizer, Summarizer, Summary

__all__ = [
    "MIN_CONVERSATION_TOKENS",
    "SUMMARY_MAX_TOKENS",
    "AutoStrategy",
    "CompressionResult",
    "Compressor",
    "RecallStrategy",
    "SummarizeStrategy",
    "TrimStrategy",
    "get_strategy",
    "latest_user_text",
]


@runtime_checkable
class Compressor(Protocol):
    """A strategy that fits messages into a token budget (see the module docstring)."""

    @property
    def name(self) -> str: ...

    def compress(
        self,
        messages: Sequence[Message],
        budget: int,
        counter: TokenCounter,
        query: str | None = None,
        *,
        previous_summary: Summary | None = None,
    ) -> CompressionResult: ...


class _Strategy:
    name: str = ""
    _engine: _Engine

    def compress(
        self,
        messages: Sequence[Message],
        budget: int,
        counter: TokenCounter,
        query: str | None = None,
        *,
        previous_summary: Summary | None = None,
        layout: Layout | None = None,
    ) -> CompressionResult:
        """Fit ``messages`` into ``budget`` tokens (see the module docstring).

        ``layout`` is the messages' :class:`~session_migrator.fitting._fit.Layout` when the caller
        keeps one up to date (:class:`~session_migrator.fitting._fit.Ledger`), so that it is not
        rebuilt from every message's count.
        """
        return self._engine.run(messages, budget, counter, query, previous_summary, layout)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class TrimStrategy(_Strategy):
    """System messages, the newest whole turns, and one note on what was left out.

    >>> from session_migrator import Message, TiktokenCounter
    >>> msgs = [Message("user", f"question {i}") for i in range(50)]
    >>> out = TrimStrategy().compress(msgs, 100, TiktokenCounter())
    >>> out.messages[0].role, len(out.dropped_ids) > 0
    ('system', True)
    """

    name = "trim"

    def __init__(self) -> None:
        self._engine = _Engine(None, False, 0.0, 0.0, self.name)


class SummarizeStrategy(_Strategy):
    """The newest turns verbatim plus a summary of the cut part in ``summary_share`` of the room,
    at most ``max_summary_tokens`` (past that, turns kept verbatim are worth more).

    ``summarizer`` defaults to the offline :class:`ExtractiveSummarizer`.
    """

    name = "summarize"

    def __init__(
        self,
        summarizer: Summarizer | None = None,
        *,
        summary_share: float = 0.3,
        max_summary_tokens: int = SUMMARY_MAX_TOKENS,
    ) -> None:
        self.summarizer = summarizer or ExtractiveSummarizer()
        self._engine = _Engine(
            self.summarizer, False, summary_share, 0.0, self.name, _positive(max_summary_tokens)
        )


class RecallStrategy(_Strategy):
    """The newest turns, plus the cut turns most relevant to the query (bm25), plus a note or,
    with a ``summarizer``, a summary of the rest (in ``summary_share`` of the room, at most
    ``max_summary_tokens``). The query defaults to the newest user message. The part of
    ``recall_share`` the relevant turns do not take goes to more of the newest turns.
    """

    name = "recall"

    def __init__(
        self,
        summarizer: Summarizer | None = None,
        *,
        recall_share: float = 0.3,
        summary_share: float = 0.2,
        max_summary_tokens: int = SUMMARY_MAX_TOKENS,
    ) -> None:
        self.summarizer = summarizer
        self._engine = _Engine(
            summarizer, True, summary_share, recall_share, self.name, _positive(max_summary_tokens)
        )


class AutoStrategy(_Strategy):
    """The configured summarizer with query-aware recall; offline, the extractive summarizer
    with recall (the best offline retention in the fact-retention benchmark). The summary takes
    a fifth of the room, at most ``max_summary_tokens``; recall and the newest turns the rest.
    The offline summary yields: the cut turns recall finds may take its room too, and it is
    written in what they leave.
    """

    name = "auto"

    def __init__(
        self, summarizer: Summarizer | None = None, *, max_summary_tokens: int = SUMMARY_MAX_TOKENS
    ) -> None:
        self.summarizer = summarizer or ExtractiveSummarizer()
        self._engine = _Engine(
            self.summarizer,
            True,
            0.2,
            0.3,
            self.name,
            _positive(max_summary_tokens),
            summary_yields=isinstance(self.summarizer, ExtractiveSummarizer),
        )


def _positive(max_summary_tokens: int) -> int:
    if isinstance(max_summary_tokens, bool) or not isinstance(max_summary_tokens, int):
        raise TypeError(f"max_summary_tokens must be an int, got {max_summary_tokens!r}")
    if max_summary_tokens < 1:
        raise ValueError(f"max_summary_tokens must be at least 1, got {max_summary_tokens}")
    return max_summary_tokens


STRATEGIES = ("auto", "trim", "summarize", "recall")


def uses_query(strategy: str | Compressor) -> bool:
    """Whether ``strategy`` ranks the cut turns against a question (a custom compressor may)."""
    return not isinstance(strategy, str) or strategy in ("recall", "auto")


def check_strategy(strategy: object) -> None:
    """Raise unless ``strategy`` is a strategy name or a compressor (an instance)."""
    if isinstance(strategy, str):
        if strategy not in STRATEGIES:
            raise ValueError(
                f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}"
            )
        return
    if isinstance(strategy, type):
        raise TypeError(
            f"strategy {strategy.__name__} is a class: pass an instance, "
            f"e.g. strategy={strategy.__name__}()"
        )
    if not callable(getattr(strategy, "compress", None)):
        raise TypeError(
            f"strategy must be one of {', '.join(STRATEGIES)} or a Compressor (an object with "
            f"compress(messages, budget, counter, query)), got {type(strategy).__name__}"
        )


def get_strategy(strategy: str | Compressor, *, summarizer: Summarizer | None = None) -> Compressor:
    """A compressor from a name (``auto``, ``trim``, ``summarize``, ``recall``) or itself."""
    if not isinstance(strategy, str):
        check_strategy(strategy)
        return strategy
    if strategy == "trim":
        return TrimStrategy()
    if strategy == "summarize":
        return SummarizeStrategy(summarizer)
    if strategy == "recall":
        return RecallStrategy(summarizer)
    if strategy == "auto":
        return AutoStrategy(summarizer)
    raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
