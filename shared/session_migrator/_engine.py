"""The engine behind every strategy: one pass that lays out, fits, recalls and summarizes.

The strategies in :mod:`session_migrator._strategies` are configurations of :class:`_Engine`
(which summarizer, whether to recall, what share of the room each gets); the invariants they all
keep are listed there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from session_migrator._errors import BudgetError, SummarizerError
from session_migrator._fit import (
    Layout,
    build_units,
    fit_recent,
    grow_recent,
    stable_id,
    truncate_message,
    truncate_text,
)
from session_migrator._messages import MARKER_KEY, Message
from session_migrator._redact import redact_secrets
from session_migrator._result import CompressionResult, broken_note, latest_user_text
from session_migrator._steady import Steady, again, ids_without
from session_migrator._summarizers import ExtractiveSummarizer, Summarizer, Summary
from session_migrator._tokens import REPLY_PRIMING, TokenCounter, remembered_count

#: The smallest room the conversation needs after the system prompt.
MIN_CONVERSATION_TOKENS = 24
_ELLIPSIS = "[...]"
_PREVIEW_CHARS = 120


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
            layout = build_units(
                messages, [counter.count_message(m) for m in messages], pending=layout.pending
            )
        if layout.broken:
            notes.append(broken_note(len(layout.broken)))
        if layout.units_cost <= available:
            # everything but the broken messages fits; what is sent opens with a user message
            # all the same (Anthropic and Gemini reject a conversation the model's turn opens)
            units = layout.units
            first = next((k for k, u in enumerate(units) if u.starts_turn), 0)
            if first:
                before = sum(len(u.indices) for u in units[:first])
                notes.append(f"left out {before} message(s) before the first user message")
            kept = [messages[i] for u in units[first:] for i in u.indices]
            return self._result(
                messages, system, None, [], kept, None, [], system_truncated, fallbacks, notes
            )
        if query is None:
            query = latest_user_text(messages)
        steady_key = (self.name, budget, tuple(layout.system), system_cost)
        # where a cut is kept between fits (a ledger's, with slack): None, cut afresh each time
        keeps = layout.cache if layout.slack > 0 and not system_truncated else None
        if keeps is not None:
            held = keeps.get("steady")
            if isinstance(held, Steady) and held.key == steady_key:
                reused = again(self, held, messages, layout, system_cost, budget, counter, query)
                if reused is not None:
                    return reused

        extra_room = self._extras_reserve(available)
        reserve = int((available - extra_room) * layout.slack) if keeps is not None else 0
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
        if recent.truncated_ids and extra_room:
            # the newest turn was cut inside: a summary or recall never needs more room than
            # the part left out takes (often little or nothing), so the cut-down turn gets the
            # rest, as in trim
            newest_cut = (k for r in reversed(recent.cut) for k in reversed(r))
            left = _cost_up_to(layout, messages, counter, newest_cut, extra_room)
            need = left + self._note_reserve(messages, layout, counter) if left else 0
            if need < extra_room:
                recent = fit_recent(messages, layout, available - need - reserve, counter)
        room = available - recent.cost - reserve

        recalled: list[Message] = []
        recalled_at: list[int] = []
        recall_room = recalled_cost = grew = 0
        if self.recall and any(recent.cut):
            note_room = self._note_reserve(messages, layout, counter)
            recall_room = room - max(
                note_room, int(available * self.summary_share) if self.summarizer else note_room
            )
            # imported here: recall brings numpy in, which a fit without it does not need
            from session_migrator._recall import recall_turns

            recalled, recalled_at, recalled_cost = recall_turns(
                messages,
                layout,
                recent.cut,
                recall_room,
                counter,
                query,
                incremental=len([r for r in recent.cut if r]) == 1 and layout.contiguous,
            )
            room -= recalled_cost
            if self.summarizer is None:
                # no summary takes what recall left: the newest turns before the cut do, down
                # to the newest recalled turn (the note keeps its reserve)
                grown = grow_recent(
                    messages,
                    layout,
                    recent,
                    recall_room - recalled_cost,
                    counter,
                    recalled_at[-1] if recalled_at else -1,
                )
                grew = grown.cost - recent.cost
                room -= grew
                recent = grown

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
            ids_without(layout.ids, span, recalled_at) if span is not None else None,
        )
        total = counter.count_messages(result.messages)
        if total > budget:  # pragma: no cover - guarded by construction; a bug if reached
            raise AssertionError(f"{self.name} produced {total} tokens for a budget of {budget}")
        result = replace(result, tokens=total)
        if keeps is None:
            return result
        if span is None or recent.truncated_ids or recent.cut != (range(recent.first_unit),):
            keeps.pop("steady", None)  # a cut the next fits cannot extend
        else:
            keeps["steady"] = Steady(
                steady_key,
                recent.first_unit,
                layout.units[recent.first_unit].indices[0],
                system,
                lead,
                counter.count_message(lead) if lead is not None else 0,
                summary,
                span,
                recall_room,
                grew,
                query,
                recalled,
                recalled_at,
                recalled_cost,
                result,
            )
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
        costs = [counter.count_message(m) for m in system]
        limit = budget - REPLY_PRIMING - MIN_CONVERSATION_TOKENS

        def smallest() -> int:
            """What the system prompt takes at the least: each message cut down to "[...]"."""
            return sum(
                min(cost, counter.count_message(m.replace(content=_ELLIPSIS)))
                for m, cost in zip(system, costs, strict=True)
            )

        if limit < 0:
            raise BudgetError(
                f"a budget of {budget} tokens cannot hold any conversation; choose a larger "
                "model or reserve fewer output tokens",
                budget=budget,
                needed=REPLY_PRIMING + MIN_CONVERSATION_TOKENS + smallest(),
            )
        if sum(costs) <= limit or not system:
            return system, []
        # the system prompt alone is over the budget: cut it to half the room, or to what a
        # smaller conversation leaves; the small messages kept whole and the large ones sharing
        # the rest (max-min fair)
        newest = range(len(layout.units) - 1, -1, -1)
        rest = _cost_up_to(layout, messages, counter, newest, limit - limit // 2)
        target_total = max(limit // 2, limit - rest, 0)
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
                    needed=max(
                        budget + 1, REPLY_PRIMING + MIN_CONVERSATION_TOKENS + 2 * smallest()
                    ),
                ) from exc
            if new is not m:
                truncated.append(m.id)
            out.append(new)
        return out, truncated

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
            and remembered_count(counter, previous_text) <= limit
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
                if not isinstance(self.summarizer, ExtractiveSummarizer):
                    written = remembered_count(counter, text)
                    if written > limit:
                        raise SummarizerError(
                            f"{used_name} wrote {written} tokens, over its limit of {limit}"
                        )
                # (the extractive summarizer counts what it picks: its text is counted once,
                # below, as the message it becomes)
            except SummarizerError as exc:
                fallbacks.append(
                    redact_secrets(
                        f"summarizer {used_name} failed ({exc}); used the offline "
                        "extractive summarizer instead",
                        self.summarizer,
                    )
                )
                used_name = ExtractiveSummarizer.name
                text = ExtractiveSummarizer().summarize(covered, max_tokens=limit, counter=counter)
            except Exception as exc:  # a user-supplied summarizer may raise anything
                fallbacks.append(
                    redact_secrets(
                        f"summarizer {used_name} raised {type(exc).__name__}: {exc}; "
                        "used the offline extractive summarizer instead",
                        self.summarizer,
                    )
                )
                used_name = ExtractiveSummarizer.name
                text = ExtractiveSummarizer().summarize(covered, max_tokens=limit, counter=counter)
        if not text.strip():
            return None, None
        message = _summary_lead(header, text, covered, used_name)
        if counter.count_message(message) > room:
            text = truncate_text(text, limit, counter)
            if not text.strip():
                return None, None
            message = _summary_lead(header, text, covered, used_name)
            if counter.count_message(message) > room:
                return None, None
        return message, Summary(text, covered[0].id, covered[-1].id, len(covered), used_name)

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


def _summary_lead(header: str, text: str, covered: list[Message], summarizer: str) -> Message:
    """The system message that carries a summary of ``covered``."""
    return Message(
        "system",
        header + text,
        id=stable_id("sm-summary", [covered[0].id, covered[-1].id, text]),
        extra={
            MARKER_KEY: {
                "kind": "summary",
                "first_id": covered[0].id,
                "last_id": covered[-1].id,
                "covered": len(covered),
                "summarizer": summarizer,
            }
        },
    )


def _cost_up_to(
    layout: Layout,
    messages: Sequence[Message],
    counter: TokenCounter,
    units: Iterable[int],
    enough: int,
) -> int:
    """What the ``units`` (indices, in the order given) cost, counted only until the sum reaches
    ``enough`` (the rest need not be counted, nor tokenized, to know it is at least that)."""
    total = 0
    for k in units:
        total += layout.unit_cost(layout.units[k], messages, counter)
        if total >= enough:
            break
    return total


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
