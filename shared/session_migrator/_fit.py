"""The mechanics every strategy shares: units, the newest-suffix walk, and cutting inside a message.

A *unit* is what is kept or dropped whole: a user message, a plain assistant message, or an
assistant message with tool calls together with the tool results that answer it. A *turn* starts
at a user message. The kept suffix always starts at a turn, so the first message after the system
prompt is a user message, and no unit is ever split, so no tool result is orphaned.

The walk reads cached per-message counts, newest first, and stops at the first unit that does not
fit: one pass over the kept messages (plus one). A :class:`Ledger` keeps the counts and units of a
growing conversation up to date one append at a time, so that a re-fit after a new message does
not walk the whole conversation again.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from session_migrator._messages import MARKER_KEY, Message
from session_migrator._tokens import TokenCounter

__all__ = [
    "Fitted",
    "Layout",
    "Ledger",
    "Unit",
    "build_units",
    "check_slack",
    "fit_recent",
    "truncate_message",
    "truncate_text",
]

MIN_TRUNCATED_TOKENS = 16
_NEEDS_CONTENT = ("user", "system")
_ELLIPSIS = "[...]"


@dataclass(slots=True)
class Unit:
    """Messages kept or dropped together (indices into the original sequence).

    ``awaiting`` holds the call ids still without a result (``None``: none; only a unit that
    starts with tool calls has a set, so a plain message allocates none).
    """

    indices: list[int]
    cost: int
    starts_turn: bool
    awaiting: set[str] | None = None

    @property
    def complete(self) -> bool:
        return not self.awaiting


@dataclass(slots=True)
class Layout:
    """A conversation split into pinned system messages, units, and broken messages.

    ``ids`` are the messages' ids, ``units_cost`` the sum of the units' costs, and
    ``system_first`` says that every system message comes before the first unit (so that, with
    no broken message, the messages of units ``[a, b)`` are one contiguous slice). ``cache`` is
    state a strategy may keep from one fit of a growing conversation to the next (a
    :class:`Ledger`'s; ``None``: nothing is kept).

    ``slack`` (a :class:`Ledger`'s): the share of the room for the newest turns that a cut leaves
    free, so that the next messages fit without cutting again (see :class:`Ledger`).

    ``counted_from``: the messages before this index that are not system messages were not
    counted (their units' costs are 0): a cold migration counts
    the newest messages only until they are over the budget. Only the newest units are read by
    cost; whoever needs a cut unit's cost counts its messages (:meth:`unit_cost`).
    """

    system: list[int]
    units: list[Unit]
    broken: list[int]
    ids: Sequence[str] = ()
    units_cost: int = 0
    system_first: bool = True
    cache: dict[str, Any] | None = None
    counted_from: int = 0
    slack: float = 0.0

    @property
    def contiguous(self) -> bool:
        """Whether the messages of any run of consecutive units are one slice."""
        return self.system_first and not self.broken

    def unit_cost(self, unit: Unit, messages: Sequence[Message], counter: TokenCounter) -> int:
        """The unit's cost, counting its messages if they were not counted."""
        if unit.indices[0] >= self.counted_from:
            return unit.cost
        return sum(counter.count_message(messages[i]) for i in unit.indices)


class Ledger:
    """The per-message counts and the units of a conversation that grows at its end.

    :meth:`extend` counts only the new messages (with ``count``, e.g. a counter's cached
    ``count_message``) and files them into units;
    :meth:`layout` is the current :class:`Layout` without walking the conversation again, an
    assistant tool call whose results have not all come yet being reported broken for now (as
    :func:`build_units` does). Not thread-safe: its owner serialises access.

    With a ``slack`` (a share, e.g. ``0.05``), a fit that has to cut leaves that share of the room
    for the newest turns free, and the next fits keep the same cut (the same summary, the same
    older turns) for as long as the new messages fit in what is left: a re-fit then reads only
    the kept messages' counts, and the prompt's head stays the same from one call to the next
    (which keeps a provider's prompt cache warm). ``0`` re-cuts at every fit, as
    :func:`~session_migrator.migrate` does.
    """

    def __init__(self, count: Callable[[Message], int], *, slack: float = 0.0) -> None:
        self._count = count
        self.slack = check_slack(slack)
        self.messages: list[Message] = []
        self.ids: list[str] = []
        self.total = 0  # every message's cost, system and broken ones included
        self._system: list[int] = []
        self._units: list[Unit] = []
        self._broken: list[int] = []
        self._units_cost = 0  # of the complete units, the open one excluded
        self._open: Unit | None = None  # the newest unit, while it awaits tool results
        self._system_first = True
        #: what strategies keep between fits of these messages (see :attr:`Layout.cache`)
        self.cache: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self.messages)

    @property
    def settled_broken(self) -> list[int]:
        """The messages broken for good, in order: tool results without their call, and calls
        whose results did not all come before the next message. Not the newest call while it
        awaits its results (shared: callers must not change it).
        """
        return self._broken

    def extend(self, messages: Sequence[Message], costs: Sequence[int] | None = None) -> None:
        """File ``messages`` (the ones after those already in the ledger) into units.

        ``costs`` are their counts when the caller has them already (else they are counted).
        """
        if costs is None:
            costs = [self._count(m) for m in messages]
        start = len(self.messages)
        self.messages.extend(messages)
        self.ids.extend(m.id for m in messages)
        self.total += sum(costs)
        units = self._units
        for i, m, cost in zip(range(start, start + len(costs)), messages, costs, strict=True):
            role = m.role
            if role == "system":
                self._system.append(i)
                if units or self._broken:
                    self._system_first = False
                continue
            unit = self._open
            if role == "tool":
                if unit is not None and unit.awaiting and m.tool_call_id in unit.awaiting:
                    unit.awaiting.discard(m.tool_call_id)
                    unit.indices.append(i)
                    unit.cost += cost
                    if not unit.awaiting:
                        unit.awaiting = None  # an empty set would stay: 216 bytes a tool turn
                        self._units_cost += unit.cost
                else:
                    self._broken.append(i)
                continue
            if unit is not None:
                self._close()
            unit = Unit([i], cost, role == "user")
            units.append(unit)
            if m.tool_calls:
                unit.awaiting = {c.id for c in m.tool_calls}
                self._open = unit
            else:
                self._units_cost += cost

    def _close(self) -> None:
        unit = self._open
        if unit is not None and not unit.complete:
            # the calls never got all their results: the unit is broken, for good
            self._units.pop()
            for i in unit.indices:
                bisect.insort(self._broken, i)
        self._open = None

    def layout(self) -> Layout:
        """The layout of the messages so far (lists are shared: callers must not change them)."""
        units = self._units
        broken = self._broken
        unit = self._open
        if unit is not None and not unit.complete:
            units = units[:-1]
            broken = sorted(broken + unit.indices)
        return Layout(
            self._system,
            units,
            broken,
            self.ids,
            self._units_cost,
            self._system_first,
            self.cache,
            slack=self.slack,
        )


def broken_for_good(messages: Sequence[Message]) -> list[int]:
    """The positions of the messages broken for good (see :attr:`Ledger.settled_broken`)."""
    if not any(m.role == "tool" or m.tool_calls for m in messages):
        return []
    pairs = Ledger(_uncounted)
    pairs.extend(messages, [0] * len(messages))
    return pairs.settled_broken


def check_slack(slack: float) -> float:
    """``slack`` if it is a share a cut may leave free (``[0, 0.5)``), else ``ValueError``."""
    if not 0.0 <= slack < 0.5:
        raise ValueError(f"slack must be a share in [0, 0.5), not {slack!r}")
    return slack


def build_units(
    messages: Sequence[Message], costs: Sequence[int], *, counted_from: int = 0
) -> Layout:
    """Split ``messages`` into system messages, units, and broken messages.

    Broken messages are tool results with no call before them and assistant tool calls whose
    results never came; a compressed result never includes them (they would be rejected).
    ``counted_from``: see :class:`Layout` (the costs before it are 0, not counts).
    """
    ledger = Ledger(_uncounted)
    ledger.extend(messages, costs)
    layout = ledger.layout()
    layout.cache = None  # nothing outlives this call
    layout.counted_from = counted_from
    return layout


def _uncounted(message: Message) -> int:
    raise AssertionError("build_units is given every cost")


# -- cutting inside a message ------------------------------------------------------------------


def _marker(cut_tokens: int) -> str:
    return f"\n[... {cut_tokens:,} tokens cut by session-migrator ...]\n"


def truncate_text(text: str, target: int, counter: TokenCounter) -> str:
    """``text`` cut to at most ``target`` tokens: head and tail kept, a marker between.

    Returns ``text`` itself when it fits, and ``""`` when not even the marker fits.
    """
    total = counter.count_text(text)
    if total <= target:
        return text
    marker = _marker(total)
    marker_cost = counter.count_text(marker)
    keep = target - marker_cost
    if keep <= 0:
        short = "[...]"
        return short if counter.count_text(short) <= target else ""
    chars_per_token = len(text) / max(total, 1)
    budget_chars = keep * chars_per_token
    for _ in range(12):
        head_chars = int(budget_chars * 0.6)
        tail_chars = int(budget_chars * 0.4)
        tail = text[len(text) - tail_chars :] if tail_chars > 0 else ""
        candidate = text[:head_chars] + marker + tail
        used = counter.count_text(candidate)
        if used <= target:
            return candidate
        budget_chars *= max(0.5, min(0.95, (target - marker_cost) / max(used - marker_cost, 1)))
        if budget_chars < 1:
            break
    return marker.strip() if marker_cost <= target else ""


def _with_marker(message: Message, original_tokens: int, **changes: object) -> Message:
    extra = dict(message.extra)
    previous = extra.get(MARKER_KEY)
    marker = dict(previous) if isinstance(previous, dict) else {}
    marker.update({"kind": marker.get("kind", "truncated"), "original_tokens": original_tokens})
    extra[MARKER_KEY] = marker
    return message.replace(extra=extra, **changes)


def truncate_message(message: Message, target: int, counter: TokenCounter) -> Message:
    """``message`` cut inside to at most ``target`` tokens (content first, then call arguments).

    The id is kept and ``extra`` is marked ``{"kind": "truncated", "original_tokens": n}``.
    A user or system message keeps some content (at least ``[...]``): the chat APIs reject empty
    turns. Raises ``ValueError`` when even the smallest message of this shape is larger than
    ``target``.
    """
    original = counter.count_message(message)
    if original <= target:
        return message
    shell = message.replace(
        content="", tool_calls=tuple(c.__class__(c.id, c.name, "{}") for c in message.tool_calls)
    )
    needs_content = message.role in _NEEDS_CONTENT
    fixed = counter.count_message(shell)
    smallest = counter.count_message(shell.replace(content=_ELLIPSIS)) if needs_content else fixed
    if smallest > target:
        raise ValueError(
            f"message {message.id!r} needs {smallest} tokens even with its content removed, "
            f"over the target of {target}"
        )
    texts: list[str] = [message.text]
    texts.extend(c.arguments for c in message.tool_calls)
    sizes = [counter.count_text(t) for t in texts]
    room = target - fixed
    for _ in range(6):
        total = sum(sizes) or 1
        allowances = [max(0, int(room * s / total)) for s in sizes]
        new_texts = [
            truncate_text(t, a, counter) if s > a else t
            for t, s, a in zip(texts, sizes, allowances, strict=True)
        ]
        calls = tuple(
            c.__class__(c.id, c.name, a if a == c.arguments else _args_json(a))
            for c, a in zip(message.tool_calls, new_texts[1:], strict=True)
        )
        images = (
            0
            if isinstance(message.content, str)
            else sum(1 for p in message.content if p.type != "text")
        )
        content = new_texts[0] + (f"\n[{images} non-text part(s) omitted]" if images else "")
        candidate = _with_marker(message, original, content=content, tool_calls=calls)
        used = counter.count_message(candidate)
        if used <= target and (content.strip() or not needs_content):
            return candidate
        room -= max(used - target, 0) + 2
        if room <= 0:
            break
    bare = _with_marker(message, original, content=_ELLIPSIS, tool_calls=shell.tool_calls)
    if counter.count_message(bare) <= target:
        return bare
    # only a tool or assistant message gets here (``smallest`` above): its shell fits
    return _with_marker(message, original, content="", tool_calls=shell.tool_calls)


def _args_json(text: str) -> str:
    return json.dumps({"session_migrator_truncated_arguments": text}, ensure_ascii=False)


def truncate_unit(
    messages: Sequence[Message], unit: Unit, target: int, counter: TokenCounter
) -> list[Message]:
    """The unit's messages cut inside so that together they cost at most ``target`` tokens.

    The room is shared in proportion to the messages' sizes: a message whose share is at least
    what it costs stays whole, and the others (parallel tool results, say) are each cut to their
    share, head and tail kept around the same marker. Raises ``ValueError`` when not even every
    message at its smallest fits.
    """
    members = [messages[i] for i in unit.indices]
    costs = [counter.count_message(m) for m in members]
    if sum(costs) <= target:
        return members
    least = [_smallest(m, counter) for m in members]
    if sum(least) > target:
        raise ValueError(f"cannot cut the unit starting at message {unit.indices[0]} to {target}")
    out = list(members)
    room = target
    for _ in range(4):
        shares = _proportional(costs, least, room)
        out = [
            m if share >= cost else truncate_message(m, share, counter)
            for m, cost, share in zip(members, costs, shares, strict=True)
        ]
        used = sum(counter.count_message(m) for m in out)
        if used <= target:
            return out
        room -= used - target  # (a cut message never costs more than its share: a safeguard)
    raise ValueError(f"cannot cut the unit starting at message {unit.indices[0]} to {target}")


def _smallest(message: Message, counter: TokenCounter) -> int:
    """What ``message`` costs at the least when cut inside (its shell, ``[...]`` as content)."""
    shell = message.replace(
        content=_ELLIPSIS if message.role in _NEEDS_CONTENT else "",
        tool_calls=tuple(c.__class__(c.id, c.name, "{}") for c in message.tool_calls),
    )
    return min(counter.count_message(message), counter.count_message(shell))


def _proportional(costs: Sequence[int], least: Sequence[int], room: int) -> list[int]:
    """Each message's share of ``room``: a message within an equal share of what is left, or
    within its share in proportion to its cost, whole; the others in proportion to their
    costs, never below ``least`` (the shares add up to ``room`` where the messages take that
    much)."""
    shares = list(costs)
    cut = set(range(len(costs)))
    while cut:
        left = room - sum(costs[k] for k in range(len(costs)) if k not in cut)
        weight = sum(costs[k] for k in cut) or 1
        # whole: what is within its proportional share, or within an equal share of the room
        # (a call's small message is not cut beside its large results)
        whole = set(cut) if weight <= left else {k for k in cut if costs[k] * len(cut) <= left}
        if not whole:
            for k in cut:
                shares[k] = max(least[k], left * costs[k] // weight)
            # the floors may take more than the proportion gave: the largest give it back
            excess = sum(shares[k] for k in cut) - left
            for k in sorted(cut, key=lambda k: -shares[k]):
                if excess <= 0:
                    break
                give = min(excess, shares[k] - least[k])
                shares[k] -= give
                excess -= give
            break
        cut -= whole
    return shares


# -- the newest suffix -------------------------------------------------------------------------


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
    messages: Sequence[Message], layout: Layout, available: int, counter: TokenCounter
) -> Fitted:
    """The newest whole units, starting at a user message, that fit in ``available`` tokens.

    When not even the newest turn fits, its user message is kept (cut inside if it takes more
    than half) with the newest units after it that fit, the newest cut inside if need be.
    Raises ``ValueError`` when not even that user message, cut down, fits in ``available``.
    """
    units = layout.units
    if not units or available <= 0:
        return Fitted([], len(units), [], 0, (range(len(units)),))
    any_turn = any(u.starts_turn for u in units)
    total = 0
    best: int | None = None
    best_total = 0
    for k in range(len(units) - 1, -1, -1):
        total += units[k].cost
        if total > available:
            break
        if units[k].starts_turn or not any_turn:
            best, best_total = k, total
    if best is not None:
        if layout.contiguous:
            kept = list(messages[units[best].indices[0] :])
        else:
            kept = [messages[i] for u in units[best:] for i in u.indices]
        return Fitted(kept, best, [], best_total, (range(best),))
    return _fit_oversized_turn(messages, units, available, counter)


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
) -> Fitted:
    truncated: list[str] = []
    start = max((k for k, u in enumerate(units) if u.starts_turn), default=len(units) - 1)
    head_unit = units[start]
    head_msgs: list[Message] = [messages[i] for i in head_unit.indices]
    tail = units[start + 1 :]
    head_cap = (
        available if not tail else min(available, max(available // 2, MIN_TRUNCATED_TOKENS * 2))
    )
    if head_unit.cost > head_cap:
        head_msgs = truncate_unit(messages, head_unit, head_cap, counter)
        truncated.extend(m.id for m in head_msgs if m.marker)
    head_cost = sum(counter.count_message(m) for m in head_msgs)
    room = available - head_cost
    kept_tail: list[Message] = []
    first_tail = len(tail)  # tail[first_tail:] is kept
    used = 0
    for k in range(len(tail) - 1, -1, -1):
        if used + tail[k].cost > room:
            if not kept_tail and room > MIN_TRUNCATED_TOKENS * 4:
                try:
                    cut = truncate_unit(messages, tail[k], room, counter)
                except ValueError:
                    break
                truncated.extend(m.id for m in cut if m.marker)
                kept_tail = cut
                first_tail = k
                used = sum(counter.count_message(m) for m in cut)
            break
        kept_tail[:0] = [messages[i] for i in tail[k].indices]
        first_tail = k
        used += tail[k].cost
    left_out = (range(start), range(start + 1, start + 1 + first_tail))
    return Fitted(head_msgs + kept_tail, start, truncated, head_cost + used, left_out)


def stable_id(prefix: str, parts: Sequence[str]) -> str:
    """A deterministic id for a message the library writes (same inputs, same id)."""
    digest = hashlib.blake2b("\x00".join(parts).encode("utf-8", "surrogatepass"), digest_size=8)
    return f"{prefix}-{digest.hexdigest()}"
