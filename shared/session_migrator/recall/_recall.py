"""Choosing the cut turns to bring back: :func:`recall_turns` ranks the whole cut turns
against the question (bm25, :mod:`session_migrator.recall._bm25`) and takes the best that fit, in
their
order.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Sequence
from datetime import timedelta

import numpy as np
import numpy.typing as npt

from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._units import Layout, Unit
from session_migrator.messages._messages import Message
from session_migrator.recall._bm25 import RelevanceIndex, rank_by_relevance
from session_migrator.recall._embeddings import active
from session_migrator.recall._fts import _Floats, _Ints
from session_migrator.recall._hybrid import HybridRecall, best_first, fuse
from session_migrator.recall._scoring import _runs
from session_migrator.recall._when import day_token

__all__ = ["fill_turns", "recall_turns"]


def recall_turns(
    messages: Sequence[Message],
    layout: Layout,
    cut: tuple[range, ...],
    room: int,
    counter: TokenCounter,
    query: str,
    incremental: bool = False,
    searched: Sequence[Message] | None = None,
) -> tuple[list[Message], list[int], int]:
    """The cut turns most relevant to ``query`` that fit in ``room``, in their order, their
    positions in ``messages``, and what they cost.

    ``searched`` (the same positions as ``messages``): the messages ranked, when those sent are
    cut down (a shrunk tool output is searched by its whole text).

    With ``incremental`` (the cut part is one run of units, a prefix of a growing
    conversation) the full-text index is kept in ``layout.cache`` and only newly cut turns
    are indexed; the ranking is the same as from a fresh index.
    """
    if room <= 0 or not query.strip():
        return [], [], 0
    cache = layout.cache if incremental else None
    held = cache.get("recall") if cache is not None else None
    # what the index reads a newly cut turn from: this call's messages (a kept index outlives
    # the list it was made with; a guard's list is new at every call). The list goes with the
    # index it feeds, wherever the index is kept (a cache handed on keeps them together)
    source: list[Sequence[Message]] = held.source if isinstance(held, _CutTurns) else [()]
    source[0] = messages if searched is None else searched

    def document(turn: list[Unit]) -> str:
        said = source[0]
        text = "\n".join(
            " ".join([said[i].text] + [c.name + " " + c.arguments for c in said[i].tool_calls])
            for u in turn
            for i in u.indices
        )
        # the day it was said, as a token a question naming that day is searched by
        when = said[turn[0].indices[0]].timestamp
        return text if when is None else f"{text}\n{day_token(when)}"

    if not isinstance(held, _CutTurns) or held.cut != cut or not held.costs_hold(messages):
        previous = held.index if isinstance(held, _CutTurns) else None
        held = _CutTurns(layout, cut)
        held.source = source
        if cache is not None:
            # the costs it keeps are of these messages: a later fit's may differ at the same
            # positions (an old tool output shrunk once newer ones came), and then they are
            # counted again (see :meth:`_CutTurns.costs_hold`)
            held.sent = held.sent_in(messages)
            # one index for the growing conversation: only the newly cut turns are indexed
            # (``document`` reads this call's ``messages``: a ledger's list, which only grows)
            held.index = previous if previous is not None else RelevanceIndex(document)
            held.index.sync({key: held.turns[k] for key, k in held.keys.items()})
            cache["recall"] = held
    turns = held.turns
    hybrid = active()  # with an embedding model: bm25 and dense similarity, fused
    if hybrid is not None:
        hybrid.ask(query)  # (the question is embedded while bm25 ranks)
    # (each ranking with its second hop: the stems its best turns share, see _bm25)
    if held.index is not None:
        keys, scores = held.index.ranked(query, hop=True)
        found = held.positions(keys)
    else:
        ranked = rank_by_relevance([document(t) for t in turns], query, hop=True)
        found = np.array([k for k, _ in ranked], dtype=np.int64)
        scores = np.array([v for _, v in ranked], dtype=np.float64)
    if hybrid is not None:
        dense = held.dense_rows(hybrid, source[0])
        sims = None if dense is None else hybrid.similarities_at(*dense, query)
        if sims is not None:
            found, scores = fuse(found, sims)
    order = _with_neighbours(found, scores, held.together(messages))
    used = 0
    if held.counted:
        # every cost is known: the best turns whose whole costs add up to at most the room are
        # all taken whole; after them, the next turn that fits at least in its compact form
        # (never larger) is taken, whole if it fits, and so on
        costs = held.whole_costs()[order]
        start = int(np.searchsorted(np.cumsum(costs), room, side="right"))
        used = int(costs[:start].sum())
        rest, costs = order[start:], costs[start:]
        least = held.compact_costs(messages)[rest]
        whole: list[int] = []  # the turns taken whole after the first ``start``
        compact: list[int] = []  # and those taken in their compact form
        j = 0
        while j < len(rest):
            fits = np.flatnonzero(least[j:] <= room - used)
            if not len(fits):
                break
            j += int(fits[0])
            if costs[j] <= room - used:
                whole.append(int(rest[j]))
                used += int(costs[j])
            else:
                compact.append(int(rest[j]))
                used += int(least[j])
            j += 1
        at = held.positions_of(
            np.concatenate((order[:start], np.array(whole, dtype=np.int64))), compact
        )
        return _taken(messages, at), at, used

    # the cut turns were not counted: each is counted when its rank comes
    def cost_of(unit: Unit) -> int:
        return layout.unit_cost(unit, messages, counter)

    # (turn, its messages' positions) of the turns taken, whole or compact, in rank order
    chosen: list[tuple[int, list[int]]] = []
    firsts, totals = held.firsts, held.totals
    for k in order.tolist():
        left = room - used
        if left < 1:
            break
        first = firsts[k]
        if first < 0:
            first = firsts[k] = cost_of(held.turns[k][0])
        if first > left:
            continue  # neither the turn nor its compact form (which starts with it) fits
        cost = totals[k]
        if cost < 0:
            cost = totals[k] = first + sum(cost_of(u) for u in held.turns[k][1:])
        if cost <= left:
            chosen.append((k, held.whole(k)))
        else:
            cost, positions = held.compact(k, messages, cost_of)
            if cost > left:
                continue
            chosen.append((k, positions))
        used += cost
    chosen.sort()
    at = [i for _, positions in chosen for i in positions]
    return _taken(messages, at), at, used


def fill_turns(
    messages: Sequence[Message],
    layout: Layout,
    cut: tuple[range, ...],
    room: int,
    counter: TokenCounter,
    taken: list[int],
) -> tuple[list[int], int]:
    """The positions of the newest cut turns not among ``taken`` (positions already recalled)
    that fit in ``room``, newest first until the next does not fit, and what they cost: the
    room recall did not need, given to the turns nearest the newest ones."""
    if room <= 0:
        return [], 0
    have = set(taken)
    used = 0
    out: list[int] = []
    for turn in reversed(_cut_turns(layout, cut)):
        at = _positions_in(turn)
        if at[0] in have:
            continue
        cost = sum(layout.unit_cost(u, messages, counter) for u in turn)
        if used + cost > room:
            break
        used += cost
        out[:0] = at
    return out, used


#: A turn's score takes this share of the best score of the turns next to it in the same
#: conversation, and half of it from the turns two away: the answer a question needs is often
#: a turn or two from the one that names what it is about (the place, then its phone number).
NEIGHBOUR_SHARE = 0.5
#: Turns said this far apart (or more) are not of the same conversation.
SAME_CONVERSATION = timedelta(hours=6)


def _with_neighbours(found: _Ints, scores: _Floats, together: npt.NDArray[np.bool_]) -> _Ints:
    """The turns to take, best first: each found turn's score plus :data:`NEIGHBOUR_SHARE` of
    its best neighbour's within the same conversation (``together[k]``: turns ``k`` and
    ``k + 1`` are), and the neighbours of found turns by that share alone (ties: the later
    turn first)."""
    size = len(together) + 1
    if not len(found):
        return found
    dense = np.zeros(size, dtype=np.float64)
    dense[found] = scores
    near = np.zeros(size, dtype=np.float64)
    for step, weight in ((1, NEIGHBOUR_SHARE), (2, NEIGHBOUR_SHARE / 2)):
        if size <= step:
            break
        # a pair ``step`` apart is together when every pair between is
        linked = together.copy()
        for extra in range(1, step):
            linked = linked[:-1] & together[extra:]
        after = np.where(linked, dense[step:], 0.0) * weight  # from the turn ``step`` later
        before = np.where(linked, dense[:-step], 0.0) * weight  # from the turn ``step`` earlier
        near[:-step] = np.maximum(near[:-step], after)
        near[step:] = np.maximum(near[step:], before)
    total = dense + near
    hit = np.flatnonzero(total)
    return hit[best_first(total[hit])]  # (ties: the later turn first)


def _taken(messages: Sequence[Message], at: list[int]) -> list[Message]:
    """``messages`` at the positions ``at``."""
    if len(at) > 1:
        return list(operator.itemgetter(*at)(messages))
    return [messages[i] for i in at]


class _CutTurns:
    """The whole turns of a cut, keyed by their first message's index, their questions' costs
    and (when kept between fits) the index that holds them.
    """

    def __init__(self, layout: Layout, cut: tuple[range, ...]) -> None:
        self.cut = cut
        self.turns = _cut_turns(layout, cut)
        self.keys = {t[0].indices[0]: k for k, t in enumerate(self.turns)}
        self.index: RelevanceIndex[list[Unit]] | None = None
        # each turn's question's cost and (not counted) its whole cost, once needed (-1: not
        # yet); the cut turns of a cold migration were not counted: counting them all would
        # cost what was spared (a turn is counted when its rank comes)
        self.counted = layout.counted_from == 0
        self.firsts = [t[0].cost for t in self.turns] if self.counted else [-1] * len(self.turns)
        self.totals = [-1] * len(self.turns)
        self._starts: _Ints | None = None
        self._positions: dict[int, list[int]] = {}
        self._all: list[int] | None = None
        self._whole_costs: _Ints | None = None
        self._compact_costs: _Ints | None = None
        self._compacts: dict[int, tuple[int, list[int]]] = {}
        # (counted) the positions of every turn's messages, then of every turn's compact form,
        # in one array, and where each of those runs starts (2 * turns + 1 offsets)
        self._flat: _Ints | None = None
        self._together: npt.NDArray[np.bool_] | None = None
        self._offsets: _Ints = np.zeros(1, dtype=np.int64)
        # (kept between fits) the messages the costs above are of, at the turns' positions
        self.sent: tuple[Message, ...] | None = None
        # (kept between fits) the list whose one item is the messages the index reads turns from
        self.source: list[Sequence[Message]] = [()]
        # (with an embedding model) its table, the rows of the turns' messages in it, and
        # each turn's count of them
        self._dense: tuple[object, _Ints, _Ints] | None = None

    def sent_in(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        """``messages`` at the positions of the turns' messages."""
        if self._all is None:
            self._all = _positions_in([u for turn in self.turns for u in turn])
        at = self._all
        if len(at) > 1:
            return tuple(operator.itemgetter(*at)(messages))
        return tuple(messages[i] for i in at)

    def costs_hold(self, messages: Sequence[Message]) -> bool:
        """Whether the costs kept are those of ``messages``' cut turns: the messages at the
        turns' positions are those they were counted from (the same objects, or equal ones).
        The messages a fit sends can differ from the last fit's there: an old tool output
        shrinks once newer outputs come (see
        :func:`~session_migrator.fitting._tiers.shrink_tool_outputs`),
        while the cut stays where it was.
        """
        return self.sent is not None and self.sent == self.sent_in(messages)

    def whole_costs(self) -> _Ints:
        """Each turn's cost (the turns counted)."""
        if self._whole_costs is None:
            self._whole_costs = np.array(
                [sum(u.cost for u in turn) for turn in self.turns], dtype=np.int64
            )
        return self._whole_costs

    def positions_of(self, wholes: _Ints, compacts: list[int]) -> list[int]:
        """The positions of the messages of turns ``wholes`` (whole) and ``compacts`` (their
        compact forms, known from :meth:`compact_costs`), turn after turn.
        """
        if self._flat is None:
            # every turn's positions, then every turn's compact form's, one after another
            n = len(self.turns)
            lists = [_positions_in(turn) for turn in self.turns]
            lists += [self._compacts[k][1] for k in range(n)]
            self._offsets = np.zeros(2 * n + 1, dtype=np.int64)
            np.cumsum([len(p) for p in lists], out=self._offsets[1:])
            self._flat = np.fromiter(
                itertools.chain.from_iterable(lists), dtype=np.int64, count=int(self._offsets[-1])
            )
        offsets = self._offsets
        extra = np.array(compacts, dtype=np.int64)
        turns = np.concatenate((wholes, extra))
        runs = np.concatenate((wholes, extra + len(self.turns)))[np.argsort(turns, kind="stable")]
        starts = offsets[runs]
        at: list[int] = self._flat[_runs(starts, offsets[runs + 1] - starts)].tolist()
        return at

    def whole(self, k: int) -> list[int]:
        """The positions of turn ``k``'s messages."""
        at = self._positions.get(k)
        if at is None:
            at = self._positions[k] = _positions_in(self.turns[k])
        return at

    def compact(
        self, k: int, messages: Sequence[Message], cost_of: Callable[[Unit], int]
    ) -> tuple[int, list[int]]:
        """Turn ``k``'s compact form: its question and its last plain answer (if any), what it
        costs and its messages' positions.
        """
        found = self._compacts.get(k)
        if found is None:
            turn = self.turns[k]
            answer = next(
                (u for u in reversed(turn[1:]) if not messages[u.indices[0]].tool_calls), None
            )
            units = [turn[0]] + ([answer] if answer else [])
            cost = self.firsts[k] + (cost_of(answer) if answer else 0)
            found = self._compacts[k] = (cost, _positions_in(units))
        return found

    def compact_costs(self, messages: Sequence[Message]) -> _Ints:
        """Each turn's compact form's cost (the turns counted)."""
        if self._compact_costs is None:
            costs = [self.compact(k, messages, _counted)[0] for k in range(len(self.turns))]
            self._compact_costs = np.array(costs, dtype=np.int64)
        return self._compact_costs

    def together(self, messages: Sequence[Message]) -> npt.NDArray[np.bool_]:
        """Whether each turn and the next are of one conversation: next to each other, and
        both said within :data:`SAME_CONVERSATION` (a store records a time at append), or
        neither carrying a time (then being next to each other is all that is known)."""
        if self._together is None:
            turns = self.turns
            out = np.zeros(max(len(turns) - 1, 0), dtype=bool)
            for k in range(len(turns) - 1):
                nxt = turns[k + 1][0]
                if turns[k][-1].indices[-1] + 1 == nxt.indices[0]:  # next to each other
                    a = messages[turns[k][0].indices[0]].timestamp
                    b = messages[nxt.indices[0]].timestamp
                    # (without times, turns next to each other are of one conversation)
                    out[k] = (a is None and b is None) or (
                        a is not None and b is not None and abs(b - a) < SAME_CONVERSATION
                    )
            self._together = out
        return self._together

    def dense_rows(
        self, hybrid: HybridRecall, said: Sequence[Message]
    ) -> tuple[_Ints, _Ints] | None:
        """The rows of the turns' messages (``said``, at their positions) in ``hybrid``'s table,
        turn after turn, and each turn's count of them; kept while the table is the same (so a
        re-fit over the same cut reads no message again), ``None`` when the model failed."""
        key = hybrid.table_key()
        if self._dense is not None and self._dense[0] is key:
            return self._dense[1], self._dense[2]
        if self._all is None:
            self._all = _positions_in([u for turn in self.turns for u in turn])
        rows = hybrid.rows(_taken(said, self._all))
        if rows is None:
            return None
        sizes = np.array([sum(len(u.indices) for u in t) for t in self.turns], dtype=np.int64)
        self._dense = (key, rows, sizes)
        return rows, sizes

    def positions(self, keys: _Ints) -> _Ints:
        """The turns (positions in :attr:`turns`) of the index's ``keys``."""
        if self._starts is None:
            self._starts = np.fromiter(self.keys, dtype=np.int64, count=len(self.keys))
        return np.searchsorted(self._starts, keys)


def _positions_in(units: list[Unit]) -> list[int]:
    """The positions of ``units``' messages, in order."""
    return [i for u in units for i in u.indices]


def _counted(unit: Unit) -> int:
    return unit.cost


def _cut_turns(layout: Layout, cut: tuple[range, ...]) -> list[list[Unit]]:
    """The whole turns among the cut units: a cut unit continues the turn of the cut unit right
    before it; units whose turn start is kept (or that follow a kept unit) cannot be recalled,
    since recalled turns go before the newest ones.
    """
    turns: list[list[Unit]] = []
    previous = -2
    for r in cut:
        for k in r:
            unit = layout.units[k]
            if unit.starts_turn or k != previous + 1 or not turns:
                turns.append([unit])
            else:
                turns[-1].append(unit)
            previous = k
    return [t for t in turns if t[0].starts_turn]
