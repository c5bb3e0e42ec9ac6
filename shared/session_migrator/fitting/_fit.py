"""The newest-suffix walk every strategy shares, and cutting a turn larger than the room.

The kept suffix always starts at a turn (see :mod:`session_migrator.fitting._units`), so the first
message after the system prompt is a user message, and no unit is ever split, so no tool result
is orphaned. The walk reads cached per-message counts, newest first, and stops at the first unit
that does not fit: one pass over the kept messages (plus one). When not even the current turn
fits, its opening message and its steps are cut inside, every tool call kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._sections import kept_spans, text_of
from session_migrator.fitting._truncate import (
    MIN_TRUNCATED_TOKENS,
    marker_tokens,
    read_back_id,
    shorten_call,
    smallest_cost,
    truncate_message,
    truncate_unit,
)
from session_migrator.fitting._units import Layout, Unit, work_units
from session_migrator.messages._messages import Message

__all__ = ["VISIBLE_CHARS", "Fitted", "fit_recent", "grow_recent", "least_room"]


@dataclass(slots=True)
class Fitted:
    """The kept part of the conversation (excluding system messages), oldest first.

    ``cut`` holds the ranges of :attr:`Layout.units` indices left out, oldest first: the units
    before ``first_unit``, and when the newest turn had to be cut down, the units between its
    start and the newest ones that still fit.
    """

    messages: list[Message]
    first_unit: int  # index into Layout.units of the oldest kept unit (len(units) if none)
    truncated_ids: list[str]
    cost: int
    cut: tuple[range, ...] = ()


def fit_recent(
    messages: Sequence[Message],
    layout: Layout,
    available: int,
    counter: TokenCounter,
    turn: int | None = None,
    whole: dict[int, Message] | None = None,
    finished: bool = False,
) -> Fitted:
    """The newest whole units, starting at a user message, that fit in ``available`` tokens.

    ``turn``: the unit that opens the current turn (see :mod:`session_migrator.fitting._working`);
    the
    kept part starts there or before, never at a user message inside the turn (a step result).
    ``whole``: the originals of messages already shrunk, by position; a message cut inside is
    cut from its original (one marker, not a cut of a cut).

    When not even the newest turn fits, its user message is kept (cut inside if it takes more
    than half, or than what the units after it need at their smallest) with the newest units
    after it that fit, each cut inside if need be while the older ones still fit at their
    smallest. Raises ``ValueError`` when not even that user message, cut down, fits in
    ``available``. ``finished``: the turn ended with the assistant's answer, which is kept
    before its steps (they are history: left out where they do not fit).
    """
    units = layout.units
    if not units or available <= 0:
        return Fitted([], len(units), [], 0, (range(len(units)),))
    any_turn = any(u.starts_turn for u in units)
    latest = len(units) if turn is None or turn >= len(units) else turn
    total = 0
    best: int | None = None
    best_total = 0
    for k in range(len(units) - 1, -1, -1):
        total += units[k].cost
        if total > available:
            break
        if (units[k].starts_turn and k <= latest) or not any_turn:
            best, best_total = k, total
    if best is not None:
        if layout.contiguous:
            kept = list(messages[units[best].indices[0] :])
        else:
            kept = [messages[i] for u in units[best:] for i in u.indices]
        return Fitted(kept, best, [], best_total, (range(best),))
    start = latest if latest < len(units) else None
    return _fit_oversized_turn(messages, units, available, counter, start, whole, finished)


def grow_recent(
    messages: Sequence[Message],
    layout: Layout,
    recent: Fitted,
    room: int,
    counter: TokenCounter,
    older_than: int = -1,
) -> Fitted:
    """``recent`` with the newest cut turns before it that fit in ``room`` more tokens, none of
    them reaching back to message ``older_than`` (a position kept elsewhere, e.g. recalled).

    Only a plain cut (the units before ``recent.first_unit``, none cut down) grows.
    """
    units = layout.units
    first = recent.first_unit
    if room <= 0 or recent.truncated_ids or recent.cut != (range(first),):
        return recent
    total = 0
    best: int | None = None
    best_total = 0
    for k in range(first - 1, -1, -1):
        if units[k].indices[0] <= older_than:
            break
        total += layout.unit_cost(units[k], messages, counter)
        if total > room:
            break
        if units[k].starts_turn:
            best, best_total = k, total
    if best is None:
        return recent
    if layout.contiguous:
        kept = list(messages[units[best].indices[0] :])
    else:
        kept = [messages[i] for u in units[best:] for i in u.indices]
    return Fitted(kept, best, [], recent.cost + best_total, (range(best),))


def _fit_oversized_turn(
    messages: Sequence[Message],
    units: list[Unit],
    available: int,
    counter: TokenCounter,
    start: int | None = None,
    whole: dict[int, Message] | None = None,
    finished: bool = False,
) -> Fitted:
    truncated: list[str] = []
    source: Sequence[Message] = messages  # what a cut inside cuts: the originals
    if whole:
        source = list(messages)
        for i, m in whole.items():
            source[i] = m
    if start is None:
        start = max((k for k, u in enumerate(units) if u.starts_turn), default=len(units) - 1)
    head_unit = units[start]
    head_msgs: list[Message] = [messages[i] for i in head_unit.indices]
    tail = units[start + 1 :]
    # what each unit after the turn's start takes at the least, cut inside (a step of the
    # turn's work at the least its call whole and the head of its result: still readable)
    work = work_units(messages, tail)
    floors = [
        [_floor(source[i], counter, step, bare=not finished) for i in u.indices]
        for u, step in zip(tail, work, strict=True)
    ]
    least = [sum(f) for f in floors]
    head_cap = (
        available
        if not tail
        else min(
            available,
            max(available // 2, MIN_TRUNCATED_TOKENS * 2),
            max(available - sum(least), MIN_TRUNCATED_TOKENS * 2),
        )
    )
    if head_unit.cost > head_cap:
        head_msgs = truncate_unit(source, head_unit, head_cap, counter)
        truncated.extend(_changed(source, head_unit, head_msgs))
    head_cost = sum(counter.count_message(m) for m in head_msgs)
    room = available - head_cost
    # the newest units after the start that fit, each cut inside where need be while the older
    # tool calls still fit at their smallest; a plain message gives way to an older call
    kept_tail: list[Message] = []
    kept_at: list[int] = []  # (positions in ``tail`` of the kept units, oldest first)
    used = 0
    for k in range(len(tail) - 1, -1, -1):
        piece = [messages[i] for i in tail[k].indices]
        cost = tail[k].cost
        # the older steps as they are if they can stay so, else at their smallest (a finished
        # turn's answer comes first: its steps give way to it)
        final = finished and k == len(tail) - 1 and not work[k]
        for older in (
            (0,)
            if final
            else (
                sum(u.cost for u, w in zip(tail[:k], work, strict=False) if w),
                sum(n for n, w in zip(least[:k], work, strict=False) if w),
            )
        ):
            left = room - used - older
            if cost <= left:
                break
            floor = (
                least[k] if work[k] else max(least[k], 0 if kept_at else MIN_TRUNCATED_TOKENS * 4)
            )
            cut = (
                _cut_unit(source, tail[k], left, counter, floors[k], work[k], not finished)
                if left >= floor
                else None
            )
            if cut is not None:
                truncated.extend(_changed(source, tail[k], cut))
                piece, cost = cut, sum(counter.count_message(m) for m in cut)
                break
        else:
            if work[k] or not any(work[:k]):
                break
            continue
        kept_tail[:0] = piece
        kept_at.insert(0, k)
        used += cost
    left_out = [range(start)]
    edge = 0
    for k in (*kept_at, len(tail)):
        left_out.append(range(start + 1 + edge, start + 1 + k))
        edge = k + 1
    ranges = tuple(r for n, r in enumerate(left_out) if r or n < 2)
    return Fitted(head_msgs + kept_tail, start, truncated, head_cost + used, ranges)


#: What a step's result keeps at the least when its turn is cut inside: its head, so that the
#: model still reads what came back.
VISIBLE_CHARS = 120


def least_form(message: Message, counter: TokenCounter, step: bool, bare: bool = False) -> Message:
    """``message`` at the least its unit may cut it to: a step's call with its long arguments
    shortened and the head of its result (:data:`VISIBLE_CHARS`), so the model still reads what
    was asked and what came back; any other message its shell. ``bare``: its markers need not
    name the id to read it back by (a turn in progress: its steps come first)."""
    if not step:
        return _at_most(message, smallest_cost(message, counter), counter)
    if message.tool_calls:
        return shorten_call(message, counter)
    text = None if message.role == "assistant" else text_of(message)
    if text is None or len(text) <= VISIBLE_CHARS:
        return message
    # its head, and the lines that mark its sections (a code step's several results)
    spans = kept_spans(text, VISIBLE_CHARS)
    head = message.replace(content="".join(text[a:b] for a, b in spans))
    cuts = len(spans) - 1
    marker = max(
        MIN_TRUNCATED_TOKENS, marker_tokens(counter, None if bare else read_back_id(message))
    )
    return _at_most(message, counter.count_message(head) + marker * cuts, counter)


def _floor(message: Message, counter: TokenCounter, step: bool, bare: bool = False) -> int:
    return counter.count_message(least_form(message, counter, step, bare))


def _cut_unit(
    messages: Sequence[Message],
    unit: Unit,
    target: int,
    counter: TokenCounter,
    floors: Sequence[int],
    step: bool,
    bare: bool = False,
) -> list[Message] | None:
    """The unit's messages cut inside to ``target`` tokens in all, none below its floor (see
    :func:`_floor`), each at its floor where the shares do not work out; ``None`` when not even
    that fits."""
    members = [messages[i] for i in unit.indices]
    try:
        cut = truncate_unit(messages, unit, target, counter)
    except ValueError:
        pass
    else:
        if all(
            c is m or counter.count_message(c) >= f
            for c, m, f in zip(cut, members, floors, strict=True)
        ):
            return cut
    least = [
        m if counter.count_message(m) <= f else least_form(m, counter, step, bare)
        for m, f in zip(members, floors, strict=True)
    ]
    return least if sum(counter.count_message(m) for m in least) <= target else None


def _at_most(message: Message, target: int, counter: TokenCounter) -> Message:
    try:
        return truncate_message(message, target, counter)
    except ValueError:
        return truncate_message(message, smallest_cost(message, counter), counter)


def least_room(
    messages: Sequence[Message],
    layout: Layout,
    start: int,
    counter: TokenCounter,
    whole: dict[int, Message] | None = None,
) -> int:
    """The least room in which the turn opened by unit ``start`` is kept with every step of
    its work (each cut inside to its least where need be, its opening message too): searched
    over the cut itself, so a budget this large does hold them."""
    units = layout.units
    counted = Layout(
        layout.system,
        [
            Unit(u.indices, layout.unit_cost(u, messages, counter), u.starts_turn, u.awaiting)
            for u in units
        ],
        layout.broken,
    )
    work = work_units(messages, counted.units[start + 1 :])

    def holds(room: int) -> bool:
        try:
            fitted = _fit_oversized_turn(messages, counted.units, room, counter, start, whole)
        except ValueError:
            return False
        return all(not work[k - start - 1] for r in fitted.cut for k in r if k > start)

    low = sum(
        _floor(messages[i], counter, True, bare=True)
        for u, step in zip(counted.units[start + 1 :], work, strict=True)
        if step
        for i in u.indices
    )
    high = sum(u.cost for u in counted.units[start:])
    if holds(low):
        return low
    if not holds(high):
        return high + 1
    while high - low > 1:  # holds(high), not holds(low)
        middle = (low + high) // 2
        if holds(middle):
            high = middle
        else:
            low = middle
    return high


def _changed(messages: Sequence[Message], unit: Unit, cut: list[Message]) -> list[str]:
    """The ids of the messages of ``unit`` that ``cut`` (its messages cut inside) changed."""
    return [m.id for m, i in zip(cut, unit.indices, strict=True) if m is not messages[i]]
