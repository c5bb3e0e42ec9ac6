"""The fit decision and the migration: ``plan()`` and ``migrate()``.

The decision is made on the session's real token count against the target's input budget, never
by comparing two models' windows: a small session moves to a smaller model untouched.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from session_migrator._fit import Ledger, build_units
from session_migrator._messages import Message, Session, as_messages
from session_migrator._strategies import Compressor, _Strategy, get_strategy, latest_user_text
from session_migrator._summarizers import Summarizer, Summary
from session_migrator._tokens import REPLY_PRIMING, TokenCounter, counter_for
from session_migrator._windows import Budget, ModelWindow

__all__ = ["MigrationReport", "MigrationResult", "Plan", "migrate", "plan", "resolve_target"]


def resolve_target(target: str | ModelWindow, **explicit: int | None) -> ModelWindow:
    """A :class:`ModelWindow` for ``target``: itself, or the lookup of a model name.

    ``explicit`` values (``context_window``, ``max_input_tokens``, ``max_output_tokens``) win.
    """
    given: dict[str, int] = {k: v for k, v in explicit.items() if v is not None}
    if isinstance(target, ModelWindow):
        if not given:
            return target
        if "context_window" in given and "max_input_tokens" not in given:
            given["max_input_tokens"] = min(target.max_input_tokens, given["context_window"])
        return target.with_changes(source="explicit", **given)
    from session_migrator._models import lookup_model

    return lookup_model(
        target,
        context_window=given.get("context_window"),
        max_input_tokens=given.get("max_input_tokens"),
        max_output_tokens=given.get("max_output_tokens"),
    )


def default_counter(window: ModelWindow) -> TokenCounter:
    """The counter used for ``window`` unless the caller gives one."""
    return counter_for(window.tokenizer, model=window.name)


@dataclass(frozen=True)
class Plan:
    """The fit decision for one session and one target."""

    window: ModelWindow
    budget: Budget
    tokens: int
    exact: bool
    counter: str

    @property
    def fits(self) -> bool:
        return self.tokens <= self.budget.tokens

    @property
    def share(self) -> float:
        """Share of the input budget the session uses (may exceed 1.0)."""
        return self.tokens / self.budget.tokens if self.budget.tokens else float("inf")


def plan(
    source: Session | Sequence[Message],
    target: str | ModelWindow,
    *,
    reserve_output: int | None = None,
    counter: TokenCounter | None = None,
    extra_reserved: int = 0,
) -> Plan:
    """Count the session for ``target`` and decide whether it fits as is.

    >>> from session_migrator import Message
    >>> p = plan([Message("user", "hello")], "gpt-4o")
    >>> p.fits, p.exact
    (True, True)
    """
    messages = as_messages(source)
    window = resolve_target(target)
    counter = counter or default_counter(window)
    # count first: an online counter learns only while counting whether it fell back to estimates
    return _plan(window, counter, counter.count_messages(messages), reserve_output, extra_reserved)


def _plan(
    window: ModelWindow,
    counter: TokenCounter,
    tokens: int,
    reserve_output: int | None,
    extra_reserved: int,
) -> Plan:
    exact = counter.exact
    budget = Budget.for_window(
        window, exact=exact, reserve_output=reserve_output, extra_reserved=extra_reserved
    )
    return Plan(window, budget, tokens, exact, counter.name)


@dataclass
class MigrationReport:
    """What a migration decided and did. ``to_dict()`` is JSON-serialisable."""

    target: str
    decision: Literal["fits", "compressed"]
    strategy: str
    tokens_before: int
    tokens_after: int
    budget: int
    context_window: int
    max_input_tokens: int
    reserved_output: int
    safety_margin: int
    exact: bool
    counter: str
    window_source: str
    messages_before: int
    messages_after: int
    source_model: str | None = None
    dropped_ids: list[str] = field(default_factory=list)
    summarized_ids: list[str] = field(default_factory=list)
    recalled_ids: list[str] = field(default_factory=list)
    truncated_ids: list[str] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    fallbacks: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kwargs)


@dataclass(frozen=True)
class MigrationResult:
    """The messages to send to the target, the report, and the summary (if one was made)."""

    messages: list[Message]
    report: MigrationReport
    summary: Summary | None = None


def migrate(
    source: Session | Sequence[Message],
    target: str | ModelWindow,
    *,
    strategy: str | Compressor = "auto",
    query: str | None = None,
    summarizer: Summarizer | None = None,
    reserve_output: int | None = None,
    counter: TokenCounter | None = None,
    previous_summary: Summary | None = None,
    extra_reserved: int = 0,
    source_model: str | None = None,
) -> MigrationResult:
    """Fit a conversation to ``target``'s input budget.

    If the whole conversation fits, the same message objects go over, in the same order.
    Otherwise ``strategy`` (``auto``, ``trim``, ``summarize``, ``recall``, or a
    :class:`~session_migrator.Compressor`) keeps the most valuable context within the budget.
    ``query`` steers recall (default: the newest user message). ``previous_summary`` lets a
    rolling summary be extended with only the newly cut messages. The input is never mutated.

    >>> from session_migrator import Message
    >>> result = migrate([Message("user", "hi")], "gpt-4")
    >>> result.report.decision
    'fits'
    """
    return _migrate(
        as_messages(source),
        target,
        strategy=strategy,
        query=query,
        summarizer=summarizer,
        reserve_output=reserve_output,
        counter=counter,
        previous_summary=previous_summary,
        extra_reserved=extra_reserved,
        source_model=source_model,
    )


def migrate_ledger(
    ledger: Ledger,
    target: str | ModelWindow,
    *,
    counter: TokenCounter,
    strategy: str | Compressor = "auto",
    query: str | None = None,
    summarizer: Summarizer | None = None,
    reserve_output: int | None = None,
    previous_summary: Summary | None = None,
    extra_reserved: int = 0,
    source_model: str | None = None,
) -> MigrationResult:
    """:func:`migrate` for the messages of ``ledger``, whose counts (by ``counter``) and units
    are already known: the session is not counted or split into units again.
    """
    return _migrate(
        ledger.messages,
        target,
        strategy=strategy,
        query=query,
        summarizer=summarizer,
        reserve_output=reserve_output,
        counter=counter,
        previous_summary=previous_summary,
        extra_reserved=extra_reserved,
        source_model=source_model,
        ledger=ledger,
    )


def _migrate(
    messages: Sequence[Message],
    target: str | ModelWindow,
    *,
    strategy: str | Compressor,
    query: str | None,
    summarizer: Summarizer | None,
    reserve_output: int | None,
    counter: TokenCounter | None,
    previous_summary: Summary | None,
    extra_reserved: int,
    source_model: str | None,
    ledger: Ledger | None = None,
) -> MigrationResult:
    started = time.perf_counter()
    window = resolve_target(target)
    counter = counter or default_counter(window)
    # count first: an online counter learns only while counting whether it fell back to estimates
    costs: list[int] | None = None
    if ledger is not None:
        tokens = REPLY_PRIMING + ledger.total  # counted by the ledger, one message at a time
    else:
        costs = [counter.count_message(m) for m in messages]
        tokens = REPLY_PRIMING + sum(costs)
    decision = _plan(window, counter, tokens, reserve_output, extra_reserved)
    compressor = get_strategy(strategy, summarizer=summarizer)
    report = MigrationReport(
        target=window.name,
        decision="fits",
        strategy=compressor.name,
        tokens_before=decision.tokens,
        tokens_after=decision.tokens,
        budget=decision.budget.tokens,
        context_window=window.context_window,
        max_input_tokens=window.max_input_tokens,
        reserved_output=decision.budget.reserved_output,
        safety_margin=decision.budget.safety_margin,
        exact=decision.exact,
        counter=decision.counter,
        window_source=window.source,
        messages_before=len(messages),
        messages_after=len(messages),
        source_model=source_model,
    )
    if decision.fits:
        report.seconds = time.perf_counter() - started
        return MigrationResult(list(messages), report)
    query = query if query is not None else latest_user_text(messages)
    if isinstance(compressor, _Strategy):
        # the counts are known: the strategy does not count or split the messages again
        result = compressor.compress(
            messages,
            decision.budget.tokens,
            counter,
            query,
            previous_summary=previous_summary,
            layout=ledger.layout() if ledger is not None else build_units(messages, costs or []),
        )
    else:
        result = compressor.compress(
            messages, decision.budget.tokens, counter, query, previous_summary=previous_summary
        )
    report.decision = "compressed"
    report.tokens_after = (
        result.tokens if result.tokens is not None else counter.count_messages(result.messages)
    )
    report.messages_after = len(result.messages)
    report.dropped_ids = list(result.dropped_ids)
    report.summarized_ids = list(result.summarized_ids)
    report.recalled_ids = list(result.recalled_ids)
    report.truncated_ids = list(result.truncated_ids)
    report.summary = result.summary.to_dict() if result.summary else None
    report.fallbacks = list(result.fallbacks)
    report.notes = list(result.notes)
    report.seconds = time.perf_counter() - started
    return MigrationResult(list(result.messages), report, result.summary)
