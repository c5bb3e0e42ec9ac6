"""The fit decision and the migration: ``plan()`` and ``migrate()``.

The decision is made on the session's real token count against the target's input budget, never
by comparing two models' windows: a small session moves to a smaller model untouched.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from session_migrator._embeddings import recalling
from session_migrator._errors import BudgetError
from session_migrator._fits import PendingToolCalls, check_pending, repair_fit
from session_migrator._messages import Message, Session, as_messages
from session_migrator._redact import redact_secrets
from session_migrator._related import RelatedExcerpts, RelatedSession, RelatedSessions
from session_migrator._result import CompressionResult
from session_migrator._rules import chat_rule_violations
from session_migrator._strategies import Compressor, _Strategy, get_strategy, latest_user_text
from session_migrator._summarizers import Summarizer, Summary
from session_migrator._tokens import (
    REPLY_PRIMING,
    TokenCounter,
    count_all,
    counted_exactly,
    counter_for,
)
from session_migrator._units import Ledger, build_units, paired
from session_migrator._windows import Budget, ModelWindow

__all__ = ["MigrationReport", "MigrationResult", "Plan", "migrate", "plan", "resolve_target"]


def resolve_target(target: str | ModelWindow, **explicit: int | None) -> ModelWindow:
    """A :class:`ModelWindow` for ``target``: itself, or the lookup of a model name.

    ``explicit`` values (``context_window``, ``max_input_tokens``, ``max_output_tokens``) win.
    """
    given: dict[str, int] = {k: v for k, v in explicit.items() if v is not None}
    if not isinstance(target, str | ModelWindow):
        raise TypeError(
            f"target must be a model name or a session_migrator.ModelWindow, got "
            f"{type(target).__name__}"
        )
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
    tokens = counter.count_messages(messages)
    exact = counted_exactly(counter, messages)
    return _plan(window, counter, tokens, reserve_output, extra_reserved, exact=exact)


def _plan(
    window: ModelWindow,
    counter: TokenCounter,
    tokens: int,
    reserve_output: int | None,
    extra_reserved: int,
    budget_cap: int | None = None,
    *,
    exact: bool,
) -> Plan:
    budget = Budget.for_window(
        window,
        exact=exact,
        reserve_output=reserve_output,
        extra_reserved=extra_reserved,
        cap=budget_cap,
    )
    return Plan(window, budget, tokens, exact, counter.name)


@dataclass
class MigrationReport:
    """What a migration decided and did. ``to_dict()`` is JSON-serialisable.

    ``tokens_before`` is the whole session's count. A cold migration that compresses counts
    only the newest messages (until they are over the budget); the rest are counted the first
    time ``tokens_before`` is read, so a caller who never reads it never pays for it.
    """

    target: str
    decision: Literal["fits", "compressed"]
    strategy: str
    _tokens_before: int | None = field(repr=False)
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
    #: the messages of other sessions sent as excerpts (``migrate(..., related=...)``), by
    #: session id
    related_ids: dict[str, list[str]] = field(default_factory=dict)
    truncated_ids: list[str] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    fallbacks: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    _count_before: Callable[[], int] | None = field(default=None, repr=False, compare=False)

    @property
    def tokens_before(self) -> int:
        """The whole session's token count (with the reply priming)."""
        if self._tokens_before is None:
            assert self._count_before is not None
            self._tokens_before = self._count_before()
            self._count_before = None
        return self._tokens_before

    @tokens_before.setter
    def tokens_before(self, value: int) -> None:
        self._tokens_before, self._count_before = value, None

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
        return f"MigrationReport(tokens_before={self.tokens_before!r}, {shown})"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "_count_before":
                continue
            if f.name == "_tokens_before":
                out["tokens_before"] = self.tokens_before
            else:
                out[f.name] = copy.deepcopy(getattr(self, f.name))
        return out

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
    pending_tool_calls: PendingToolCalls = "drop",
    related: RelatedSessions | Sequence[RelatedSession] | None = None,
    embeddings: Any = None,
) -> MigrationResult:
    """Fit a conversation to ``target``'s input budget.

    If the whole conversation fits, the same message objects go over, in the same order.
    Otherwise ``strategy`` (``auto``, ``trim``, ``summarize``, ``recall``, or a
    :class:`~session_migrator.Compressor`) keeps the most valuable context within the budget.
    ``query`` steers recall (default: the newest user message). ``previous_summary`` lets a
    rolling summary be extended with only the newly cut messages. The input is never mutated.

    What a chat API would reject is repaired on either path, and reported: a conversation
    that fits goes over without tool messages whose pair is broken, without messages before
    its first user message, and with its system messages first (see
    :mod:`session_migrator._fits`). ``pending_tool_calls``: ``"drop"`` leaves out the newest
    assistant tool call while its results have not all come (a model rejects it); ``"keep"``
    keeps it, for a caller about to append its results.

    ``related``: other sessions (see :func:`~session_migrator.store.related_sessions`) whose
    exchanges relevant to the question go with the conversation as dated excerpts, in one
    library message after the system prompt, within the budget (see
    :mod:`session_migrator._related`: a conversation that fits still goes over whole, the
    excerpts in the room it leaves); ``report.related_ids`` says which, by session.

    ``embeddings``: an embedding model (a callable from texts to vectors, a LangChain
    ``Embeddings``, a LlamaIndex ``BaseEmbedding`` or a :class:`~session_migrator.Embeddings`):
    recall fuses its similarity with bm25 (see :mod:`session_migrator._hybrid`).

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
        pending_tool_calls=pending_tool_calls,
        related=related,
        embeddings=embeddings,
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
    budget_cap: int | None = None,
    pending_tool_calls: PendingToolCalls = "drop",
    related: RelatedSessions | Sequence[RelatedSession] | None = None,
    embeddings: Any = None,
) -> MigrationResult:
    """:func:`migrate`; with ``ledger`` (whose messages these are, counted by ``counter``),
    the session is not counted or split into units again; ``budget_cap`` caps the budget;
    ``pending_tool_calls``: see :func:`migrate`.
    """
    started = time.perf_counter()
    window = resolve_target(target)
    if counter is not None and not callable(getattr(counter, "count_message", None)):
        raise TypeError(
            f"counter must be a TokenCounter (e.g. counter_for('o200k_base')), got "
            f"{type(counter).__name__}"
        )
    if query is not None and not isinstance(query, str):
        raise TypeError(f"query must be a string, got {type(query).__name__}")
    if summarizer is not None and not callable(getattr(summarizer, "summarize", None)):
        raise TypeError(
            "summarizer must be a Summarizer (an object with summarize(...), e.g. "
            f"OpenAISummarizer()), got {type(summarizer).__name__}"
        )
    keep_pending = check_pending(pending_tool_calls) == "keep"
    counter = counter or default_counter(window)
    compressor = get_strategy(strategy, summarizer=summarizer)
    found = (
        RelatedExcerpts(
            related, messages, query if query is not None else latest_user_text(messages)
        )
        if related is not None
        else None
    )
    # count first: an online counter learns only while counting whether it fell back to estimates
    costs: list[int] | None = None
    counted_from = 0
    if ledger is not None:
        tokens = REPLY_PRIMING + ledger.total  # counted by the ledger, one message at a time
    elif isinstance(compressor, _Strategy) and getattr(counter, "local", False):
        # a local counter's exactness is known before counting: count the newest messages only
        # until they are over the budget (the strategy reads no older count)
        limit = Budget.for_window(
            window,
            exact=counter.exact,
            reserve_output=reserve_output,
            extra_reserved=extra_reserved,
            cap=budget_cap,
        ).tokens
        costs, counted_from, tokens = _count_newest(messages, counter, limit)
    else:
        costs = count_all(counter, messages)
        tokens = REPLY_PRIMING + sum(costs)
    exact = counted_exactly(counter, messages)
    decision = _plan(
        window, counter, tokens, reserve_output, extra_reserved, budget_cap, exact=exact
    )
    report = MigrationReport(
        target=window.name,
        decision="fits",
        strategy=compressor.name,
        _tokens_before=decision.tokens if not counted_from else None,
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
        _count_before=(lambda: counter.count_messages(messages)) if counted_from else None,
    )
    if decision.fits:
        # it fits; what a model would reject as is is repaired (see session_migrator._fits)
        pairs = ledger if ledger is not None else paired(messages)
        repair = repair_fit(
            messages, pairs.layout(), pairs.settled_broken, pairs.pending, keep_pending
        )
        if repair is not None:
            report.tokens_after = counter.count_messages(repair.messages)
            report.messages_after = len(repair.messages)
            report.dropped_ids = repair.dropped_ids
            report.notes = repair.notes
        fitted = MigrationResult(list(messages) if repair is None else repair.messages, report)
        if found is not None:
            fitted = found.added_to(fitted, decision.budget.tokens, counter)
        report.seconds = time.perf_counter() - started
        return fitted
    query = query if query is not None else latest_user_text(messages)
    extra: dict[str, Any] = {}
    if isinstance(compressor, _Strategy):
        # the counts are known: the strategy does not count or split the messages again
        extra["layout"] = (
            ledger.layout(keep_pending=keep_pending)
            if ledger is not None
            else build_units(
                messages, costs or [], counted_from=counted_from, keep_pending=keep_pending
            )
        )
    budget = decision.budget.tokens
    # a question about the past holds back the room of the other sessions' relevant excerpts
    held = found.reserve(budget, counter) if found is not None else 0
    hybrid = None  # recall with the embedding model (None: bm25 alone)
    if embeddings is not None:
        from session_migrator._hybrid import hybrid_for  # (numpy: only where recall needs it)

        hybrid = hybrid_for(embeddings)
    with recalling(hybrid):
        try:
            result = compressor.compress(
                messages, budget - held, counter, query, previous_summary=previous_summary, **extra
            )
        except BudgetError:
            if not held:
                raise
            held = 0  # the excerpts never make a migration fail: the session takes the budget
            result = compressor.compress(
                messages, budget, counter, query, previous_summary=previous_summary, **extra
            )
    report.decision = "compressed"
    problems: list[str] = []
    if isinstance(compressor, _Strategy):
        tokens_after = (
            result.tokens if result.tokens is not None else counter.count_messages(result.messages)
        )
    else:  # a compressor of the caller's own: its result is checked, not trusted
        tokens_after = _checked(compressor, result, budget - held, counter)
        problems = [
            f"the result breaks a chat rule: {problem}"
            for problem in chat_rule_violations(result.messages)
        ]
    report.tokens_after = tokens_after
    report.messages_after = len(result.messages)
    report.dropped_ids = list(result.dropped_ids)
    report.summarized_ids = list(result.summarized_ids)
    report.recalled_ids = list(result.recalled_ids)
    report.truncated_ids = list(result.truncated_ids)
    report.summary = result.summary.to_dict() if result.summary else None
    report.fallbacks = [redact_secrets(f) for f in result.fallbacks]  # a compressor of one's own
    report.notes = [*result.notes, *problems]
    if hybrid is not None:
        hybrid.reported(report)
    fitted = MigrationResult(list(result.messages), report, result.summary)
    if found is not None:
        fitted = found.added_to(fitted, budget, counter)
    report.seconds = time.perf_counter() - started
    return fitted


def _checked(compressor: Compressor, result: object, budget: int, counter: TokenCounter) -> int:
    """What a custom compressor's result costs, counted here; a result that is not a
    :class:`CompressionResult` or is over the budget raises (a model would reject it)."""
    name = getattr(compressor, "name", type(compressor).__name__)
    if not isinstance(result, CompressionResult):
        raise TypeError(
            f"compressor {name!r} returned {type(result).__name__}; compress() must return a "
            "session_migrator.CompressionResult"
        )
    tokens = counter.count_messages(result.messages)
    if tokens > budget:
        raise BudgetError(
            f"compressor {name!r} returned {tokens} tokens for a budget of {budget}; a "
            "compressor must keep what it returns within the budget it is given",
            budget=budget,
            needed=tokens,
        )
    return tokens


def _count_newest(
    messages: Sequence[Message], counter: TokenCounter, limit: int
) -> tuple[list[int], int, int]:
    """Count the system messages, and the newest others until the count is over ``limit`` and
    a user message (a turn's start) is reached.

    Returns the costs (0 for the messages not counted), the index from which every message is
    counted, and the count (a lower bound of the session's when that index is not 0: enough to
    know that the session does not fit).
    """
    costs = [0] * len(messages)
    total = REPLY_PRIMING
    for i, m in enumerate(messages):
        if m.role == "system":  # pinned: always counted
            costs[i] = cost = counter.count_message(m)
            total += cost
    over = False
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role != "system":
            costs[i] = cost = counter.count_message(m)
            total += cost
            over = over or total > limit
            # go on to the start of the turn: the fit reads the units from there
            if over and m.role == "user":
                return costs, i, total
    return costs, 0, total
