"""A conversation as units: what is kept or dropped whole, and the turns they form.

A *unit* is what is kept or dropped whole: a user message, a plain assistant message, or an
assistant message with tool calls together with the tool results that answer it. A *turn* starts
at a user message. A :class:`Ledger` keeps the counts and units of a growing conversation up to
date one append at a time, so that a re-fit after a new message does not walk the whole
conversation again; :func:`build_units` lays out a conversation once.

The current turn's steps (:func:`work_units`) are the units after its start that an agent needs
in view: tool calls with their results, and the results of steps that an agent sends as user
messages (:func:`is_step_result`).
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from session_migrator.counting._counter import TokenCounter
from session_migrator.messages._messages import Message

__all__ = [
    "DEFAULT_SLACK",
    "STEP_RESULT_PREFIXES",
    "Layout",
    "Ledger",
    "Unit",
    "broken_for_good",
    "build_units",
    "check_slack",
    "cut_messages",
    "is_step_result",
    "paired",
    "stable_id",
    "work_units",
]


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

    ``keep_pending``: the newest assistant tool call, while it awaits its results, is a unit
    (the last), not broken: its results come with the next input (see :meth:`Ledger.layout`).

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
    keep_pending: bool = False
    #: whether a cut that is not on the stable grid is kept between fits too (a fitter's
    #: ledger); a guard's keeps only the stable cut's state (see ``Ledger``)
    steady: bool = True

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

    def __init__(
        self, count: Callable[[Message], int], *, slack: float = 0.0, steady: bool = True
    ) -> None:
        self._count = count
        self.slack = check_slack(slack)
        self.steady = steady
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

    @property
    def pending(self) -> list[int]:
        """The newest assistant tool call and the results it has so far, while some of its
        results have not come yet (the positions; empty when nothing awaits a result)."""
        unit = self._open
        return list(unit.indices) if unit is not None and not unit.complete else []

    def layout(self, *, keep_pending: bool = False) -> Layout:
        """The layout of the messages so far (lists are shared: callers must not change them).

        ``keep_pending``: the newest tool call still waiting for results is a unit (kept or cut
        like any other) rather than broken.
        """
        units = self._units
        broken = self._broken
        units_cost = self._units_cost
        unit = self._open
        if unit is not None and not unit.complete:
            if keep_pending:
                units_cost += unit.cost
            else:
                units = units[:-1]
                broken = sorted(broken + unit.indices)
        return Layout(
            self._system,
            units,
            broken,
            self.ids,
            units_cost,
            self._system_first,
            self.cache,
            slack=self.slack,
            keep_pending=keep_pending,
            steady=self.steady,
        )


def broken_for_good(messages: Sequence[Message]) -> list[int]:
    """The positions of the messages broken for good (see :attr:`Ledger.settled_broken`)."""
    if not any(m.role == "tool" or m.tool_calls for m in messages):
        return []
    return paired(messages).settled_broken


def paired(messages: Sequence[Message]) -> Ledger:
    """A ledger of ``messages`` that knows their units and pairs, not their costs (all 0)."""
    ledger = Ledger(_uncounted)
    ledger.extend(messages, [0] * len(messages))
    return ledger


#: The share of the room for the newest turns a cut leaves free (see ``Ledger``): past the
#: budget, a cut compacts to 40% of the room (the low watermark) and the conversation grows
#: into the rest before the next one (the stable cut's step, see
#: :mod:`session_migrator.migration._stable`).
DEFAULT_SLACK = 0.6
#: The most a cut may leave free.
MAX_SLACK = 0.75


def check_slack(slack: float) -> float:
    """``slack`` if it is a share a cut may leave free (``[0, 0.75]``), else ``ValueError``."""
    if not 0.0 <= slack <= MAX_SLACK:
        raise ValueError(
            f"slack must be a share in [0, {MAX_SLACK}] (0: cut afresh at every fit), not {slack!r}"
        )
    return slack


def build_units(
    messages: Sequence[Message],
    costs: Sequence[int],
    *,
    counted_from: int = 0,
    keep_pending: bool = False,
) -> Layout:
    """Split ``messages`` into system messages, units, and broken messages.

    Broken messages are tool results with no call before them and assistant tool calls whose
    results never came; a compressed result never includes them (they would be rejected).
    ``counted_from``: see :class:`Layout` (the costs before it are 0, not counts);
    ``keep_pending``: see :meth:`Ledger.layout`.
    """
    ledger = Ledger(_uncounted)
    ledger.extend(messages, costs)
    layout = ledger.layout(keep_pending=keep_pending)
    layout.cache = None  # nothing outlives this call
    layout.counted_from = counted_from
    return layout


def _uncounted(message: Message) -> int:
    raise AssertionError("build_units is given every cost")


# -- the current turn's steps ------------------------------------------------------------------

#: How a user message that carries a step's result (not the user's words) begins: LlamaIndex's
#: ReAct and CodeAct agents send their tools' results that way.
STEP_RESULT_PREFIXES = ("Observation:", "Result of executing the code given:")


def is_step_result(message: Message) -> bool:
    """Whether ``message`` is a user message that carries a tool's or code's result."""
    if message.role != "user" or not isinstance(message.content, str):
        return False
    return message.content.lstrip().startswith(STEP_RESULT_PREFIXES)


def work_units(messages: Sequence[Message], units: Sequence[Unit]) -> list[bool]:
    """For each of ``units`` (those after a turn's start), whether it is a step of the turn's
    work: a tool call with its results, a step's result sent as a user message, the
    assistant message that asked for that result, or the line of finished steps the agent
    compressed (a placeholder's: what they found)."""
    firsts = [messages[u.indices[0]] for u in units]
    steps = [is_step_result(m) for m in firsts]
    return [
        bool(m.tool_calls)
        or steps[k]
        or (m.role == "assistant" and steps[k + 1 : k + 2] == [True])
        or (m.marker is not None and m.marker.get("kind") == "placeholder")
        for k, m in enumerate(firsts)
    ]


def stable_id(prefix: str, parts: Sequence[str]) -> str:
    """A deterministic id for a message the library writes (same inputs, same id)."""
    digest = hashlib.blake2b("\x00".join(parts).encode("utf-8", "surrogatepass"), digest_size=8)
    return f"{prefix}-{digest.hexdigest()}"


def cut_messages(
    messages: Sequence[Message], layout: Layout, cut: tuple[range, ...]
) -> tuple[list[Message], tuple[int, int] | None]:
    """The messages of the cut units and the broken messages, in order; and, when they are the
    slice ``messages[start:stop]`` holding every non-system message outside the kept units,
    ``(start, stop)``.
    """
    units = layout.units
    ranges = [r for r in cut if r]
    if layout.contiguous and len(ranges) <= 1:
        if not ranges:
            return [], (0, 0)
        r = ranges[0]
        start = units[r.start].indices[0]
        stop = units[r.stop].indices[0] if r.stop < len(units) else len(messages)
        return list(messages[start:stop]), (start, stop)
    indices = [i for r in ranges for k in r for i in units[k].indices]
    return [messages[i] for i in sorted(indices + layout.broken)], None
