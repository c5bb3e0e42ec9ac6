"""The engine behind every strategy: one pass that lays out, fits, recalls and summarizes.

The strategies in :mod:`session_migrator._strategies` are configurations of :class:`_Engine`
(which summarizer, whether to recall, what share of the room each gets); the invariants they all
keep are listed there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from session_migrator._errors import BudgetError, SummarizerError
from session_migrator._fit import (
    Layout,
    Unit,
    build_units,
    fit_recent,
    stable_id,
    truncate_message,
    truncate_text,
)
from session_migrator._messages import MARKER_KEY, Message
from session_migrator._recall import RelevanceIndex, rank_by_relevance
from session_migrator._summarizers import ExtractiveSummarizer, Summarizer, Summary
from session_migrator._tokens import REPLY_PRIMING, TokenCounter

#: The smallest room the conversation needs after the system prompt.
MIN_CONVERSATION_TOKENS = 24
_ELLIPSIS = "[...]"
_PREVIEW_CHARS = 120


@dataclass(frozen=True)
class CompressionResult:
    """What a strategy kept, and what it did to the rest (ids of the input messages)."""

    messages: list[Message]
    dropped_ids: list[str] = field(default_factory=list)
    summarized_ids: list[str] = field(default_factory=list)
    recalled_ids: list[str] = field(default_factory=list)
    truncated_ids: list[str] = field(default_factory=list)
    summary: Summary | None = None
    fallbacks: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: what ``messages`` cost by the counter the strategy was given (``None``: not counted)
    tokens: int | None = None


def latest_user_text(messages: Sequence[Message]) -> str:
    """The text of the newest user message ('' if there is none)."""
    for m in reversed(messages):
        if m.role == "user" and m.marker is None:
            return m.text
    return ""


@dataclass
class _Engine:
    summarizer: Summarizer | None
    recall: bool
    summary_share: float
    recall_share: float
    name: str

    def run(
        self,
        messages: Sequence[Message],
        budget: int,
        counter: TokenCounter,
        query: str | None,
        previous_summary: Summary | None,
        layout: Layout | None = None,
    ) -> CompressionResult:
        if layout is None:
            layout = build_units(messages, [counter.count_message(m) for m in messages])
        fallbacks: list[str] = []
        notes: list[str] = []
        system, system_truncated = self._fit_system(messages, layout, budget, counter)
        system_cost = sum(counter.count_message(m) for m in system)
        available = budget - REPLY_PRIMING - system_cost
        if layout.counted_from and not _newest_counted_enough(layout, available):
            # the counted newest units alone do not show where the fit stops (unusual: broken
            # messages among them, or one huge turn): count the rest
            layout = build_units(messages, [counter.count_message(m) for m in messages])
        if layout.broken:
            notes.append(_broken_note(len(layout.broken)))
        if layout.units_cost <= available:
            kept = [messages[i] for u in layout.units for i in u.indices]
            return self._result(
                messages, system, None, [], kept, None, [], system_truncated, fallbacks, notes
            )
        if query is None:
            query = latest_user_text(messages)
        steady_key = (self.name, budget, tuple(layout.system), system_cost)
        keep = layout.slack > 0 and layout.cache is not None and not system_truncated
        if keep and layout.cache is not None:
            held = layout.cache.get("steady")
            if isinstance(held, _Steady) and held.key == steady_key:
                again = self._again(held, messages, layout, system_cost, budget, counter, query)
                if again is not None:
                    return again

        extra_room = self._extras_reserve(available)
        reserve = int((available - extra_room) * layout.slack) if keep else 0
        try:
            try:
                recent = fit_recent(messages, layout, available - extra_room - reserve, counter)
            except ValueError:
                if not reserve:
                    raise
                reserve = 0  # the room is too small to leave any free
                recent = fit_recent(messages, layout, available - extra_room, counter)
        except ValueError as exc:  # not even the newest user message, cut down, fits
            newest = max(k for k, u in enumerate(layout.units) if u.starts_turn)
            smallest = counter.count_message(
                messages[layout.units[newest].indices[0]].replace(content=_ELLIPSIS)
            )
            raise BudgetError(
                f"a budget of {budget} tokens cannot hold the newest user message even cut "
                "down; choose a larger model or reserve fewer output tokens",
                budget=budget,
                needed=max(budget + 1, budget - (available - extra_room) + smallest),
            ) from exc
        room = available - recent.cost - reserve

        recalled: list[Message] = []
        recalled_at: list[int] = []
        recall_room = recalled_cost = 0
        if self.recall and any(recent.cut):
            note_room = self._note_reserve(messages, layout, counter)
            recall_room = room - max(
                note_room, int(available * self.summary_share) if self.summarizer else note_room
            )
            recalled, recalled_at, recalled_cost = self._recall(
                messages,
                layout,
                recent.cut,
                recall_room,
                counter,
                query,
                incremental=len([r for r in recent.cut if r]) == 1 and layout.contiguous,
            )
            room -= recalled_cost

        # the summary covers the whole cut stretch (recalled turns too), so that its range is
        # contiguous and the next call can extend it with only the newly cut messages
        cut, span = _cut_messages(messages, layout, recent.cut)
        if recalled:
            recalled_ids = {m.id for m in recalled}
            left_out = [m for m in cut if m.id not in recalled_ids]
        else:
            left_out = cut
        lead: Message | None = None
        summary: Summary | None = None
        covered: list[Message] = []
        if left_out:
            if self.summarizer is not None:
                lead, summary = self._summary_message(
                    messages, cut, room, counter, previous_summary, fallbacks
                )
                covered = left_out if summary is not None else []
            if lead is None:
                lead = self._note(left_out, room, counter)
        result = self._result(
            messages,
            system,
            lead,
            recalled,
            recent.messages,
            summary,
            covered,
            system_truncated + recent.truncated_ids,
            fallbacks,
            notes,
            # when the cut part is one slice with no system or broken message in it, the
            # messages left out of the result are ``left_out``: no need to walk them all
            _left_out_ids(layout, span, left_out, recalled) if span is not None else None,
        )
        total = counter.count_messages(result.messages)
        if total > budget:  # pragma: no cover - guarded by construction; a bug if reached
            raise AssertionError(f"{self.name} produced {total} tokens for a budget of {budget}")
        result = replace(result, tokens=total)
        if keep and layout.cache is not None:
            layout.cache.pop("steady", None)
        if (
            keep
            and layout.cache is not None
            and span is not None
            and not recent.truncated_ids
            and recent.cut == (range(recent.first_unit),)
        ):
            layout.cache["steady"] = _Steady(
                steady_key,
                recent.first_unit,
                layout.units[recent.first_unit].indices[0],
                system,
                lead,
                counter.count_message(lead) if lead is not None else 0,
                summary,
                span,
                recall_room,
                query,
                recalled,
                recalled_at,
                recalled_cost,
                result,
            )
        return result

    def _again(
        self,
        held: _Steady,
        messages: Sequence[Message],
        layout: Layout,
        system_cost: int,
        budget: int,
        counter: TokenCounter,
        query: str,
    ) -> CompressionResult | None:
        """The last cut again, with the messages that came since (``None``: they do not fit).

        Reads the kept units' counts once; recalls again only for a new question (or when the
        room left for the recalled turns shrank below what they take).
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
        if self.recall and (query != held.query or recalled_cost > room):
            recalled, recalled_at, recalled_cost = self._recall(
                messages,
                layout,
                (range(first),),
                min(room, held.recall_room),
                counter,
                query,
                incremental=True,
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
            left_out = _without(layout.ids, held.span, recalled_at)
            summarized = left_out if held.summary is not None else []
            dropped = [] if held.summary is not None else left_out
            recalled_ids = [m.id for m in recalled]
        if stop < len(messages):
            dropped = [*dropped, *layout.ids[stop:]]
            notes.append(_broken_note(len(messages) - stop))
        total = REPLY_PRIMING + system_cost + held.lead_cost + recalled_cost + recent_cost
        if total > budget:  # pragma: no cover - guarded above; a bug if reached
            raise AssertionError(f"{self.name} produced {total} tokens for a budget of {budget}")
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

    # -- pieces ------------------------------------------------------------------------------

    def _extras_reserve(self, available: int) -> int:
        share = 0.0
        if self.summarizer is not None:
            share += self.summary_share
        if self.recall:
            share += self.recall_share
        minimum = min(64, available // 4)
        return max(minimum, int(available * share))

    def _fit_system(
        self, messages: Sequence[Message], layout: Layout, budget: int, counter: TokenCounter
    ) -> tuple[list[Message], list[str]]:
        system = [messages[i] for i in layout.system]
        cost = sum(counter.count_message(m) for m in system)
        limit = budget - REPLY_PRIMING - MIN_CONVERSATION_TOKENS
        # what the system prompt takes at the least: each message cut down to "[...]"
        smallest = sum(
            min(counter.count_message(m), counter.count_message(m.replace(content=_ELLIPSIS)))
            for m in system
        )
        if limit < 0:
            raise BudgetError(
                f"a budget of {budget} tokens cannot hold any conversation; choose a larger "
                "model or reserve fewer output tokens",
                budget=budget,
                needed=REPLY_PRIMING + MIN_CONVERSATION_TOKENS + smallest,
            )
        if cost <= limit or not system:
            return system, []
        # the system prompt alone is over the budget: cut it to half the room, the small
        # messages kept whole and the large ones sharing the rest (max-min fair)
        target_total = max(limit // 2, 0)
        costs = [counter.count_message(m) for m in system]
        shares = [0] * len(system)
        remaining = target_total
        by_size = sorted(range(len(system)), key=lambda k: costs[k])
        for position, k in enumerate(by_size):
            shares[k] = min(costs[k], remaining // (len(system) - position))
            remaining -= shares[k]
        truncated: list[str] = []
        out: list[Message] = []
        for m, share in zip(system, shares, strict=True):
            try:
                new = truncate_message(m, share, counter)
            except ValueError as exc:
                raise BudgetError(
                    f"a budget of {budget} tokens cannot hold the system prompt even cut down; "
                    "choose a larger model",
                    budget=budget,
                    needed=max(budget + 1, REPLY_PRIMING + MIN_CONVERSATION_TOKENS + 2 * smallest),
                ) from exc
            if new is not m:
                truncated.append(m.id)
            out.append(new)
        return out, truncated

    def _recall(
        self,
        messages: Sequence[Message],
        layout: Layout,
        cut: tuple[range, ...],
        room: int,
        counter: TokenCounter,
        query: str,
        incremental: bool = False,
    ) -> tuple[list[Message], list[int], int]:
        """The cut turns most relevant to ``query`` that fit in ``room``, in their order, their
        positions in ``messages``, and what they cost.

        With ``incremental`` (the cut part is one run of units, a prefix of a growing
        conversation) the full-text index is kept in ``layout.cache`` and only newly cut turns
        are indexed; the ranking is the same as from a fresh index.
        """
        if room <= 0 or not query.strip():
            return [], [], 0
        turns: list[list[Unit]]
        kept_turns = layout.cache.get("recall-turns") if incremental and layout.cache else None
        if isinstance(kept_turns, tuple) and kept_turns[0] == cut:
            turns = kept_turns[1]  # the same cut as last time: the same turns, already indexed
            fresh_cut = False
        else:
            turns = _cut_turns(layout, cut)
            fresh_cut = True
            if incremental and layout.cache is not None:
                layout.cache["recall-turns"] = (cut, turns)

        def document(turn: list[Unit]) -> str:
            return "\n".join(
                " ".join(
                    [messages[i].text]
                    + [c.name + " " + c.arguments for c in messages[i].tool_calls]
                )
                for u in turn
                for i in u.indices
            )

        ranked: list[tuple[int, float]]
        if incremental and layout.cache is not None:
            index = layout.cache.get("recall")
            if not isinstance(index, RelevanceIndex):
                index = layout.cache["recall"] = RelevanceIndex(document)
                fresh_cut = True
            by_key = layout.cache.get("recall-keys")
            if fresh_cut or not isinstance(by_key, dict):
                by_key = {t[0].indices[0]: k for k, t in enumerate(turns)}
                layout.cache["recall-keys"] = by_key
                index.sync({key: turns[k] for key, k in by_key.items()})
            ranked = [(by_key[key], score) for key, score in index.rank(query)]
        else:
            ranked = rank_by_relevance([document(t) for t in turns], query)
        chosen: list[tuple[int, list[int]]] = []
        used = 0

        def cost_of(unit: Unit) -> int:
            return layout.unit_cost(unit, messages, counter)

        # the cut turns of a cold migration were not counted: counting them all to find the
        # smallest would cost what was spared (a turn is counted when its rank comes)
        smallest = 1 if layout.counted_from else min((t[0].cost for t in turns), default=0)
        for index_, _score in ranked:
            if room - used < smallest:
                break  # not even the smallest turn's question fits any more
            turn = turns[index_]
            if cost_of(turn[0]) > room - used:
                continue  # neither the turn nor its compact form (which starts with it) fits
            take = turn
            cost = sum(cost_of(u) for u in turn)
            if used + cost > room:
                # compact form: the question and the last plain answer of that turn
                answer = next(
                    (u for u in reversed(turn[1:]) if not messages[u.indices[0]].tool_calls), None
                )
                take = [turn[0]] + ([answer] if answer else [])
                cost = sum(cost_of(u) for u in take)
                if used + cost > room:
                    continue
            chosen.append((turn[0].indices[0], [i for u in take for i in u.indices]))
            used += cost
        chosen.sort(key=lambda item: item[0])
        at = [i for _, positions in chosen for i in positions]
        return [messages[i] for i in at], at, used

    def _note(self, covered: list[Message], room: int, counter: TokenCounter) -> Message | None:
        oldest = next((m for m in covered if m.text.strip()), covered[0])
        preview = " ".join(oldest.text.split())
        if len(preview) > _PREVIEW_CHARS:
            preview = preview[: _PREVIEW_CHARS - 3] + "..."
        n = len(covered)
        texts = [
            f"[session-migrator: {n} earlier message{'s' if n != 1 else ''} of this conversation "
            f"{'were' if n != 1 else 'was'} left out to fit the context window. The oldest "
            f'began: "{preview}"]',
            f"[session-migrator: {n} earlier message{'s' if n != 1 else ''} left out.]",
        ]
        for text in texts:
            note = Message(
                "system",
                text,
                id=stable_id("sm-note", [covered[0].id, covered[-1].id, str(n)]),
                extra={
                    MARKER_KEY: {
                        "kind": "trim_note",
                        "dropped": n,
                        "first_id": covered[0].id,
                        "last_id": covered[-1].id,
                    }
                },
            )
            if counter.count_message(note) <= room:
                return note
        return None

    def _note_reserve(
        self, messages: Sequence[Message], layout: Layout, counter: TokenCounter
    ) -> int:
        first = [messages[i] for u in layout.units[:1] for i in u.indices] or list(messages[:1])
        probe = self._note(first, 10**9, counter)
        return (counter.count_message(probe) + 8) if probe else 0

    def _summary_message(
        self,
        messages: Sequence[Message],
        covered: list[Message],
        room: int,
        counter: TokenCounter,
        previous: Summary | None,
        fallbacks: list[str],
    ) -> tuple[Message | None, Summary | None]:
        assert self.summarizer is not None
        header = f"[session-migrator: summary of {len(covered)} earlier messages]\n"
        overhead = counter.count_message(Message("system", header)) + 2
        limit = room - overhead
        if limit < 16:
            return None, None
        fresh = covered
        previous_text: str | None = None
        if previous is not None and previous.first_id == covered[0].id:
            # the summary's last message is usually near the end: look for it from there
            # (a session's ids are unique)
            for j in range(len(covered) - 1, -1, -1):
                if covered[j].id == previous.last_id:
                    fresh = covered[j + 1 :]
                    previous_text = previous.text
                    break
        used_name = self.summarizer.name
        text: str | None = None
        if (
            previous_text is not None
            and not fresh
            and _text_tokens(counter, previous_text) <= limit
        ):
            text = previous_text
        else:
            try:
                text = self.summarizer.summarize(
                    fresh, max_tokens=limit, counter=counter, previous=previous_text
                )
                if not text.strip() and not isinstance(self.summarizer, ExtractiveSummarizer):
                    # the extractive summarizer may find nothing worth keeping; a model may not
                    raise SummarizerError(f"{used_name} returned no summary text")
                written = _text_tokens(counter, text)
                if written > limit:
                    raise SummarizerError(
                        f"{used_name} wrote {written} tokens, over its limit of {limit}"
                    )
            except SummarizerError as exc:
                fallbacks.append(
                    f"summarizer {used_name} failed ({exc}); used the offline "
                    "extractive summarizer instead"
                )
                used_name = ExtractiveSummarizer.name
                text = ExtractiveSummarizer().summarize(covered, max_tokens=limit, counter=counter)
            except Exception as exc:  # a user-supplied summarizer may raise anything
                fallbacks.append(
                    f"summarizer {used_name} raised {type(exc).__name__}: {exc}; "
                    "used the offline extractive summarizer instead"
                )
                used_name = ExtractiveSummarizer.name
                text = ExtractiveSummarizer().summarize(covered, max_tokens=limit, counter=counter)
        if _text_tokens(counter, text) > limit:
            text = truncate_text(text, limit, counter)
        if not text.strip():
            return None, None
        summary = Summary(text, covered[0].id, covered[-1].id, len(covered), used_name)
        message = Message(
            "system",
            header + text,
            id=stable_id("sm-summary", [covered[0].id, covered[-1].id, text]),
            extra={
                MARKER_KEY: {
                    "kind": "summary",
                    "first_id": covered[0].id,
                    "last_id": covered[-1].id,
                    "covered": len(covered),
                    "summarizer": used_name,
                }
            },
        )
        if counter.count_message(message) > room:
            return None, None
        return message, summary

    def _result(
        self,
        messages: Sequence[Message],
        system: list[Message],
        lead: Message | None,
        recalled: list[Message],
        recent: list[Message],
        summary: Summary | None,
        covered: list[Message],
        truncated: list[str],
        fallbacks: list[str],
        notes: list[str],
        left_out_ids: list[str] | None = None,
    ) -> CompressionResult:
        summarized = [m.id for m in covered] if summary is not None else []
        if left_out_ids is not None:
            # every non-system message that is not kept is left out (the caller knows)
            dropped = [] if summary is not None else left_out_ids
        else:
            kept = {m.id for m in recalled} | {m.id for m in recent}
            summarized_set = set(summarized)
            dropped = [
                m.id
                for m in messages
                if m.role != "system" and m.id not in kept and m.id not in summarized_set
            ]
        return CompressionResult(
            messages=system + ([lead] if lead is not None else []) + recalled + recent,
            dropped_ids=dropped,
            summarized_ids=summarized,
            recalled_ids=[m.id for m in recalled],
            truncated_ids=truncated,
            summary=summary,
            fallbacks=fallbacks,
            notes=notes,
        )


@dataclass
class _Steady:
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
    query: str
    recalled: list[Message]
    recalled_at: list[int]
    recalled_cost: int
    result: CompressionResult


def _broken_note(count: int) -> str:
    return (
        f"left out {count} message(s) with broken tool pairing "
        "(a result without its call or a call without its result)"
    )


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


def _without(ids: Sequence[str], span: tuple[int, int], positions: list[int]) -> list[str]:
    """``ids[span[0]:span[1]]`` less the (increasing) ``positions``."""
    out: list[str] = []
    start = span[0]
    for i in positions:
        out.extend(ids[start:i])
        start = i + 1
    out.extend(ids[start : span[1]])
    return out


def _newest_counted_enough(layout: Layout, budget: int) -> bool:
    """Whether a fit reads no uncounted cost: the counted newest units alone are over
    ``budget`` and hold the newest turn's start.
    """
    total = 0
    turn = False
    for unit in reversed(layout.units):
        if unit.indices[0] < layout.counted_from:
            return False
        total += unit.cost
        turn = turn or unit.starts_turn
        if total > budget and turn:
            return True
    return False


def _cut_messages(
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


def _left_out_ids(
    layout: Layout, span: tuple[int, int], left_out: list[Message], recalled: list[Message]
) -> list[str]:
    """The ids of ``left_out``, the cut slice ``span`` less the recalled messages."""
    if not recalled and len(layout.ids) >= span[1]:
        return list(layout.ids[span[0] : span[1]])
    return [m.id for m in left_out]


#: Token counts of long texts (summaries, re-read at every fit), by counter name and digest.
_LONG_TEXT = 2048
_long_counts: dict[tuple[str, bytes], int] = {}
_LONG_COUNTS_LIMIT = 64


def _text_tokens(counter: TokenCounter, text: str) -> int:
    """``counter.count_text(text)``, remembered for long texts (a rolling summary is counted at
    every fit); keyed by a digest, so no text is kept.
    """
    if len(text) < _LONG_TEXT:
        return counter.count_text(text)
    key = (counter.name, hashlib.blake2b(text.encode("utf-8", "surrogatepass")).digest())
    tokens = _long_counts.get(key)
    if tokens is None:
        tokens = counter.count_text(text)
        if len(_long_counts) >= _LONG_COUNTS_LIMIT:
            _long_counts.clear()
        _long_counts[key] = tokens
    return tokens
