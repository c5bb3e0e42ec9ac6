"""``token_limit`` as ``ChatMemoryBuffer`` applies it, for limits too small for a strategy.

A strategy fits the history within ``token_limit - initial_token_count`` counted as a model
counts a chat (every message's format overhead included). A limit of a few tokens holds no
message that way, where ``ChatMemoryBuffer`` (which counts the messages' joined text) still
keeps a few: there the history degrades as ``ChatMemoryBuffer``'s does, and the report says so:

- the newest whole messages whose joined text fits the limit in ``tokenizer_fn``'s measure
  (LlamaIndex's own default, cl100k, unless the memory was given one), never starting on an
  assistant or tool message;
- when not even one fits, the newest message alone (the model then says it is too long, rather
  than the memory failing quietly).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from session_migrator import (
    BudgetError,
    Message,
    MigrationResult,
    ModelWindow,
    SessionFitter,
    TiktokenCounter,
    TokenCounter,
    default_counter,
)

__all__ = ["fit_within", "llamaindex_measure", "within_limit"]

_CL100K: TokenCounter | None = None


def llamaindex_measure(tokenizer_fn: Callable[[str], list[object]] | None) -> Callable[[str], int]:
    """Tokens of a text as ``ChatMemoryBuffer`` counts them: ``tokenizer_fn``'s, else cl100k."""
    if tokenizer_fn is not None:
        return lambda text: len(tokenizer_fn(text))
    global _CL100K
    if _CL100K is None:
        _CL100K = TiktokenCounter("cl100k_base")
    counter = _CL100K
    return counter.count_text


def within_limit(
    result: MigrationResult, limit: int, measure: Callable[[str], int], counter: TokenCounter
) -> MigrationResult:
    """``result`` cut to ``limit`` by ``ChatMemoryBuffer``'s rule (see the module docstring)."""
    messages = result.messages

    def cost(kept: list[Message]) -> int:
        return measure(" ".join(m.text for m in kept)) if kept else 0

    start = 0
    while start < len(messages) - 1 and cost(messages[start:]) > limit:
        start += 1
        while start < len(messages) - 1 and messages[start].role in ("assistant", "tool"):
            start += 1
    kept = messages[start:]
    if cost(kept) > limit:
        kept = messages[-1:]
    if len(kept) == len(messages):
        return result
    dropped = [m.id for m in messages[: len(messages) - len(kept)]]
    report = dataclasses.replace(
        result.report,
        decision="compressed",
        tokens_after=counter.count_messages(kept) if kept else 0,
        messages_after=len(kept),
        dropped_ids=[*result.report.dropped_ids, *dropped],
        notes=[
            *result.report.notes,
            f"token_limit={limit} holds no fitted history with its chat-format overhead: "
            f"kept the newest {len(kept)} of {len(messages)} messages as ChatMemoryBuffer "
            "does (their text within the limit)",
        ],
    )
    return MigrationResult(kept, report, result.summary)


def fit_within(
    fitter: SessionFitter,
    window: ModelWindow,
    *,
    query: str | None,
    extra: int,
    cap: int | None,
    tokenizer_fn: Callable[[str], list[object]] | None,
    guarded: bool = False,
) -> MigrationResult:
    """The fit of ``fitter``'s session to ``window`` under ``cap``: a cap too small for whole
    messages with their chat-format overhead (no fit, or a message cut inside) degrades as
    ``ChatMemoryBuffer`` does (see the module docstring).

    ``guarded``: the model is a ``FitToModelLLM``, which fits the whole request just before it
    is sent. Where the history does not fit beside the ``extra`` the caller holds back (an
    agent's prompt and tools, counted by the agent), it is fitted without it and the guard,
    which sees them all, fits the rest or says why not (an agent's current turn stays whole
    for it to shrink)."""
    try:
        result = fitter.fit(window, query=query, extra_reserved=extra, budget_cap=cap)
    except BudgetError:
        if guarded and extra:
            return fit_within(
                fitter, window, query=query, extra=0, cap=cap, tokenizer_fn=tokenizer_fn
            )
        if cap is None:
            raise
    else:
        if cap is None or not result.report.truncated_ids:
            return result
    loose = fitter.fit(window, query=query, extra_reserved=extra)
    return within_limit(loose, cap, llamaindex_measure(tokenizer_fn), default_counter(window))
