"""The fit decision and the migration: ``plan()`` and ``migrate()``.

The decision is made on the session's real token count against the target's input budget, never
by comparing two models' windows: a small session moves to a smaller model untouched.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from session_migrator._errors import BudgetError
from session_migrator._redact import redact_secrets
from session_migrator.counting._counter import REPLY_PRIMING, TokenCounter, counted_exactly
from session_migrator.counting._tokens import count_all, counter_for
from session_migrator.fitting._fits import PendingToolCalls, repair_fit
from session_migrator.fitting._result import CompressionResult
from session_migrator.fitting._units import Ledger, build_units, paired
from session_migrator.messages._messages import Message, Session, as_messages
from session_migrator.messages._rules import chat_rule_violations
from session_migrator.migration._gap import gap_message, with_gap
from session_migrator.migration._options import FitOptions
from session_migrator.migration._report import MigrationReport, MigrationResult, Plan
from session_migrator.migration._strategies import (
    Compressor,
    _Strategy,
    get_strategy,
    latest_user_text,
)
from session_migrator.models._windows import Budget, ModelWindow
from session_migrator.recall._embeddings import recalling
from session_migrator.recall._related import RelatedExcerpts, RelatedSession, RelatedSessions
from session_migrator.summaries._summarizers import Summarizer, Summary

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
    from session_migrator.models._lookup import lookup_model

    return lookup_model(
        target,
        context_window=given.get("context_window"),
        max_input_tokens=given.get("max_input_tokens"),
        max_output_tokens=given.get("max_output_tokens"),
    )


def default_counter(window: ModelWindow) -> TokenCounter:
    """The counter used for ``window`` unless the caller gives one."""
    return counter_for(window.tokenizer, model=window.name)


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
    gap_note: bool | timedelta = True,
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
    :mod:`session_migrator.fitting._fits`). ``pending_tool_calls``: ``"drop"`` leaves out the newest
    assistant tool call while its results have not all come (a model rejects it); ``"keep"``
    keeps it, for a caller about to append its results.

    ``related``: other sessions (see :func:`~session_migrator.store.related_sessions`) whose
    exchanges relevant to the question go with the conversation as dated excerpts, in one
    library message after the system prompt, within the budget (see
    :mod:`session_migrator.recall._related`: a conversation that fits still goes over whole, the
    excerpts in the room it leaves); ``report.related_ids`` says which, by session.

    ``embeddings``: an embedding model (a callable from texts to vectors, a LangChain
    ``Embeddings``, a LlamaIndex ``BaseEmbedding`` or a :class:`~session_migrator.Embeddings`):
    recall fuses its similarity with bm25 (see :mod:`session_migrator.recall._hybrid`).

    ``gap_note``: when the newest user message comes 30 minutes or more after the message
    before it (both with times), a note of the gap ("The user returns after 9 days (last
    message 2026-11-26).") goes just before it, within the budget, whether the session fits or
    is cut; ``False`` sends none, a ``timedelta`` sets the threshold (see
    :mod:`session_migrator.migration._gap`).

    >>> from session_migrator import Message
    >>> result = migrate([Message("user", "hi")], "gpt-4")
    >>> result.report.decision
    'fits'
    """
    options = FitOptions(
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
        gap_note=gap_note,
    )
    return fit_messages(as_messages(source), target, options)


def fit_messages(
    messages: Sequence[Message],
    target: str | ModelWindow,
    options: FitOptions,
    ledger: Ledger | None = None,
) -> MigrationResult:
    """:func:`migrate` with its ``options`` as one value; with ``ledger`` (whose messages these
    are, counted by the options' counter), the session is not counted or split into units
    again.
    """
    started = time.perf_counter()
    window = resolve_target(target)
    keep_pending = options.keep_pending
    counter = options.counter or default_counter(window)
    compressor = get_strategy(options.strategy, summarizer=options.summarizer)
    query, related, reserve_output = options.query, options.related, options.reserve_output
    extra_reserved, budget_cap = options.extra_reserved, options.budget_cap
    previous_summary = options.previous_summary
    gap = gap_message(messages, options.gap_threshold, options.times)
    found = (
        RelatedExcerpts(
            related,
            messages,
            query if query is not None else latest_user_text(messages),
            options.embeddings,
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
        source_model=options.source_model,
        _count_before=(lambda: counter.count_messages(messages)) if counted_from else None,
    )
    if decision.fits:
        # it fits; what a model would reject as is is repaired (see session_migrator.fitting._fits)
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
        if fitted.messages:
            report.stable_through = fitted.messages[-1].id  # (the next request appends to it)
        if gap is not None:
            fitted = with_gap(fitted, gap, decision.budget.tokens, counter)
        if found is not None:
            fitted = _with_related(fitted, found, decision.budget.tokens, counter)
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
    if options.embeddings is not None:
        from session_migrator.recall._hybrid import (
            hybrid_for,  # (numpy: only where recall needs it)
        )

        hybrid = hybrid_for(options.embeddings)
    # the gap note's room is held back too; a budget too small for the room held gets it back.
    # A fit that keeps its cut between calls (a ledger's) holds nothing back for it: its budget,
    # and so its cut, do not move with the note, which goes in the room the kept cut leaves free
    # (else it is left out, and the report says so)
    gap_cost = counter.count_message(gap) if gap is not None and ledger is None else 0
    tries = list(dict.fromkeys([(held, gap_cost), (0, gap_cost), (0, 0)]))
    with recalling(hybrid):
        for attempt, (held, held_gap) in enumerate(tries):
            try:
                result = compressor.compress(
                    messages,
                    budget - held - held_gap,
                    counter,
                    query,
                    previous_summary=previous_summary,
                    **extra,
                )
                break
            except BudgetError:
                # (the excerpts and the note never make a migration fail)
                if attempt == len(tries) - 1:
                    raise
    report.decision = "compressed"
    problems: list[str] = []
    if isinstance(compressor, _Strategy):
        tokens_after = (
            result.tokens if result.tokens is not None else counter.count_messages(result.messages)
        )
    else:  # a compressor of the caller's own: its result is checked, not trusted
        tokens_after = _checked(compressor, result, budget - held - held_gap, counter)
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
    report.stable_through = result.stable_through
    if hybrid is not None:
        hybrid.reported(report)
    fitted = MigrationResult(list(result.messages), report, result.summary)
    if gap is not None:
        fitted = with_gap(fitted, gap, budget, counter)
    if found is not None:
        fitted = _with_related(fitted, found, budget, counter)
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


def _with_related(
    result: MigrationResult, found: RelatedExcerpts, budget: int, counter: TokenCounter
) -> MigrationResult:
    """``result`` with the excerpts of other sessions that fit in what it leaves of ``budget``;
    the report says what was recalled from where."""
    report = result.report
    placed = found.placed(
        result.messages, report.tokens_after, budget, counter, cut=report.decision != "fits"
    )
    report.notes = [*report.notes, *placed.notes]
    report.fallbacks = [*report.fallbacks, *placed.fallbacks]
    if placed.messages is None:
        return result
    report.related_ids = placed.ids
    report.tokens_after = placed.tokens
    report.messages_after = len(placed.messages)
    return replace(result, messages=placed.messages)
