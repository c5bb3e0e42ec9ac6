"""The fast path of a fitter with slack: the last cut again, with the messages since.

A :class:`~session_migrator.fitting._fit.Ledger` with a ``slack`` makes the engine leave part of the
room for the newest turns free when it cuts, and remember the cut (:class:`Steady`). The next
fits of the growing conversation reuse it (the same system messages, summary or note, and cut
slice) while the new messages fit in what is left, reading only the kept units' counts; the
recalled turns follow each new question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from session_migrator.counting._counter import REPLY_PRIMING, TokenCounter
from session_migrator.fitting._result import CompressionResult, broken_note
from session_migrator.fitting._units import Layout
from session_migrator.messages._messages import Message
from session_migrator.summaries._summarizers import Summary

__all__ = ["Steady", "again", "ids_without"]


@dataclass
class Steady:
    """A cut kept from one fit of a growing conversation to the next (see ``Ledger``'s slack):
    what stays the same (the system messages, the summary or note, the cut slice ``span``) and
    the recalled turns for ``query``.
    """

    key: tuple[object, ...]
    first_unit: int
    first_index: int
    system: list[Message]
    lead: Message | None
    lead_cost: int
    summary: Summary | None
    span: tuple[int, int]
    recall_room: int
    grown: int  # what the kept turns took of the recall room the first recall left unused
    query: str
    recalled: list[Message]
    recalled_at: list[int]
    recalled_cost: int
    result: CompressionResult


def again(
    name: str,
    recall: bool,
    held: Steady,
    messages: Sequence[Message],
    layout: Layout,
    system_cost: int,
    budget: int,
    counter: TokenCounter,
    query: str,
    searched: Sequence[Message] | None = None,
) -> CompressionResult | None:
    """The last cut again, with the messages that came since (``None``: they do not fit), for
    the strategy ``name`` (``recall``: whether it recalls).

    Reads the kept units' counts once; recalls again only for a new question (or when the
    room left for the recalled turns shrank below what they take). ``searched``: what recall
    ranks, when ``messages`` has its old tool outputs shrunk.
    """
    units = layout.units
    first = held.first_unit
    if (
        first >= len(units)
        or units[first].indices[0] != held.first_index
        or not layout.system_first
    ):
        return None
    stop = len(messages)
    if layout.broken:
        # only the newest tool call, still waiting for its results, may be left out here
        stop = layout.broken[0]
        if stop <= units[-1].indices[-1]:
            return None
    recent_cost = 0
    for k in range(first, len(units)):
        recent_cost += units[k].cost
    room = budget - REPLY_PRIMING - system_cost - recent_cost - held.lead_cost
    recalled, recalled_at = held.recalled, held.recalled_at
    recalled_cost = held.recalled_cost
    if recall and (query != held.query or recalled_cost > room):
        if held.grown and query != held.query:
            return None  # a new question may need the room the kept turns grew into: cut again
        # imported here: recall brings numpy in, which a fit without it does not need
        from session_migrator.recall._recall import recall_turns

        recalled, recalled_at, recalled_cost = recall_turns(
            messages,
            layout,
            (range(first),),
            min(room, held.recall_room),
            counter,
            query,
            incremental=True,
            searched=searched,
        )
    if recalled_cost > room:
        return None
    recent = list(messages[held.first_index : stop])
    lead = [held.lead] if held.lead is not None else []
    last = held.result
    notes = list(last.notes)
    if recalled is held.recalled:
        dropped, summarized, recalled_ids = (
            last.dropped_ids,
            last.summarized_ids,
            last.recalled_ids,
        )
    else:
        left_out = ids_without(layout.ids, held.span, recalled_at)
        summarized = left_out if held.summary is not None else []
        dropped = [] if held.summary is not None else left_out
        recalled_ids = [m.id for m in recalled]
    if stop < len(messages):
        dropped = [*dropped, *layout.ids[stop:]]
        notes.append(broken_note(len(messages) - stop))
    total = REPLY_PRIMING + system_cost + held.lead_cost + recalled_cost + recent_cost
    if total > budget:  # pragma: no cover - guarded above; a bug if reached
        raise AssertionError(f"{name} produced {total} tokens for a budget of {budget}")
    result = CompressionResult(
        messages=held.system + lead + recalled + recent,
        dropped_ids=dropped,
        summarized_ids=summarized,
        recalled_ids=recalled_ids,
        truncated_ids=[],
        summary=held.summary,
        fallbacks=list(last.fallbacks),
        notes=notes,
        tokens=total,
    )
    if recalled is not held.recalled and stop == len(messages):
        held.query, held.recalled, held.recalled_at = query, recalled, recalled_at
        held.recalled_cost, held.result = recalled_cost, result
    return result


def ids_without(ids: Sequence[str], span: tuple[int, int], positions: list[int]) -> list[str]:
    """``ids[span[0]:span[1]]`` less the (increasing) ``positions``."""
    out: list[str] = []
    start = span[0]
    for i in positions:
        out.extend(ids[start:i])
        start = i + 1
    out.extend(ids[start : span[1]])
    return out
