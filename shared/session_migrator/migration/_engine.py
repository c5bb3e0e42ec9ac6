"""The engine behind every strategy: one pass that lays out, fits, recalls and summarizes.

The strategies in :mod:`session_migrator.migration._strategies` are configurations of
:class:`_Engine`
(which summarizer, whether to recall, what share of the room each gets); the invariants they all
keep are listed there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from session_migrator._errors import BudgetError
from session_migrator.counting._counter import REPLY_PRIMING, TokenCounter
from session_migrator.fitting._fit import fit_recent, grow_recent
from session_migrator.fitting._lead import note, note_reserve, summary_message
from session_migrator.fitting._result import CompressionResult, broken_note, latest_user_text
from session_migrator.fitting._tiers import given_back, shrink_tool_outputs, with_shrunk
from session_migrator.fitting._units import Layout, build_units, cut_messages, is_step_result
from session_migrator.fitting._working import (
    check_turn_kept,
    current_turn,
    shrink_current_turn,
    turn_finished,
    turn_kept,
    turn_squeezed,
)
from session_migrator.messages._messages import Message
from session_migrator.migration._stable import PAST_SHARE, Stable, stable_fit
from session_migrator.migration._steady import Steady, again, ids_without
from session_migrator.migration._system import (
    ELLIPSIS,
    cost_up_to,
    fit_system,
)
from session_migrator.recall._embeddings import active
from session_migrator.recall._when import about_the_past, day_tokens, named_days, when_line
from session_migrator.summaries._summarizers import Summarizer, Summary

#: The share of the room recall may take when the question is about the past.
PAST_RECALL_SHARE = 0.7
#: The room kept for the lead's line on when the recalled turns were said.
WHEN_RESERVE = 120
#: The most room a summary of the cut part is given, however large the window: past this, turns
#: kept verbatim are worth more than more summary (a user's turns are summarized last).
SUMMARY_MAX_TOKENS = 4_096
#: Past the budget, fit so that consecutive requests share their prefix (see ``_stable``).
STABLE = True
#: Where the stable cut does not apply (tool outputs shrunk, an agent's turn in progress), the
#: most a kept cut leaves free for the next messages.
STEADY_SLACK = 0.05


@dataclass
class _Engine:
    summarizer: Summarizer | None
    recall: bool
    summary_share: float
    recall_share: float
    name: str
    max_summary_tokens: int = SUMMARY_MAX_TOKENS
    #: The summary's room is recall's first: the turns recall finds relevant take it, and only
    #: what they leave is summarized (the offline summary's: it carries little of what a
    #: question needs where recall finds turns that hold it, see docs/strategies.md)
    summary_yields: bool = False

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
        system, system_truncated = fit_system(messages, layout, budget, counter)
        system_cost = sum(counter.count_message(m) for m in system)
        available = budget - REPLY_PRIMING - system_cost
        if layout.counted_from and not _newest_counted_enough(layout, messages, available):
            # the counted newest units alone do not show where the fit stops (unusual: broken
            # messages among them, or one huge turn): count the rest
            layout = build_units(
                messages,
                [counter.count_message(m) for m in messages],
                keep_pending=layout.keep_pending,
            )
        if layout.broken:
            notes.append(broken_note(len(layout.broken)))
        originals: dict[str, Message] = {}
        shrunk_at: dict[int, Message] = {}  # (the same originals, by position)
        in_turn: dict[int, Message] = {}  # (those of the current turn)
        searched = messages  # what recall ranks: the messages as given, tool outputs whole
        turn = current_turn(messages, layout)  # (the unit the agent's current turn opens)
        # a turn that ended with the assistant's answer is history like any other: its steps
        # may be cut (a session handed over after a long agent turn)
        finished = turn_finished(messages, layout, turn)
        if layout.counted_from or layout.units_cost > available:
            # the first tier: older turns' tool outputs shrink before any turn is left out (a
            # ledger's shrunk view keeps its cut between fits in a cache of its own: see
            # _tiers); then, when the current turn alone is over, its own (see _working)
            start = layout.units[turn].indices[0] if turn < len(layout.units) else len(messages)
            tiered = shrink_tool_outputs(messages, layout, available, counter, start)
            if tiered is not None:
                messages, layout, shrunk_at = tiered
            working = shrink_current_turn(
                messages, layout, turn, available, counter, in_progress=not finished
            )
            if working is not None:
                messages, layout, in_turn = working
                shrunk_at.update(in_turn)
                if layout.cache is not None:
                    layout.cache.pop("steady", None)  # (a kept cut of older turns goes first)
            originals = {m.id: m for m in shrunk_at.values()}
        if layout.units_cost <= available and not layout.counted_from:
            # everything but the broken messages fits; what is sent opens with a user message
            # all the same (Anthropic and Gemini reject a conversation the model's turn opens)
            units = layout.units
            first = next((k for k, u in enumerate(units) if u.starts_turn), 0)
            if first:
                before = sum(len(u.indices) for u in units[:first])
                notes.append(f"left out {before} message(s) before the first user message")
            kept = [messages[i] for u in units[first:] for i in u.indices]
            whole = self._result(
                messages, system, None, [], kept, None, [], system_truncated, fallbacks, notes
            )
            return given_back(whole, originals, budget, counter) if originals else whole
        if query is None:
            query = latest_user_text(messages)
        # a question that names a day is searched by that day's token too; one about the past
        # gives recall most of the room the newest turns would take
        days = day_tokens(query, messages[-1].timestamp) if self.recall and messages else []
        past = self.recall and (bool(days) or about_the_past(query))
        # (said to be long ago: by a day, by words that point past the last turns, or by the
        # embedding model; not by the past tense alone)
        long_ago = past and (bool(days) or about_the_past(query, long_ago=True))
        if self.recall and not past and (hybrid := active()) is not None:
            # with an embedding model: the turn most like the question is an old one
            past = hybrid.asks_about_the_past(searched, layout, query, counter, available // 2)
            long_ago = past
        search = " ".join([query, *days])
        summary_share = min(self.summary_share, 0.1) if past else self.summary_share
        recall_share = max(self.recall_share, PAST_RECALL_SHARE) if past else self.recall_share
        kept_state = layout.cache is not None and layout.slack > 0
        if STABLE and kept_state and not system_truncated and not originals and not in_turn:
            # past the budget, the prompt's head stays the same from one request to the next
            stable = stable_fit(
                Stable(
                    self.name,
                    self.summarizer,
                    self.recall,
                    self._summary_room(available, self.summary_share),
                    self.recall_share,
                ),
                messages,
                layout,
                system,
                system_cost,
                budget,
                counter,
                search,
                query,
                PAST_RECALL_SHARE if long_ago else PAST_SHARE if past else 0.0,
                previous_summary,
                searched,
            )
            if stable is not None:
                return replace(stable, notes=notes + stable.notes)
        # (a kept cut keeps its split of the room: a new question is answered within it)
        steady_key = (self.name, budget, tuple(layout.system), system_cost)
        # where a cut is kept between fits (a ledger's, with slack): None, cut afresh each time
        # (not while the current turn is shrunk: older turns give way first, so cut afresh)
        steady = layout.slack > 0 and layout.steady
        keeps = layout.cache if steady and not system_truncated and not in_turn else None
        if keeps is not None:
            held = keeps.get("steady")
            if isinstance(held, Steady) and held.key == steady_key:
                reused = again(
                    self.name,
                    self.recall,
                    held,
                    messages,
                    layout,
                    system_cost,
                    budget,
                    counter,
                    search,
                    searched,
                )
                if reused is not None:
                    return with_shrunk(reused, originals, counter) if originals else reused

        # (a summary that yields, for a question about the past, lives in recall's room: the
        # newest turns keep the share they have under recall)
        inside = past and self.summary_yields
        extra_room = self._extras_reserve(available, summary_share, recall_share, inside)
        # (where the stable cut does not apply, what is kept free is at most the share it was
        # before there was one: an agent's turn needs the room)
        kept_free = min(layout.slack, STEADY_SLACK)
        reserve = int((available - extra_room) * kept_free) if keeps is not None else 0
        try:
            # the room is too small to leave any free, then to hold a summary or recall
            tries = dict.fromkeys([(extra_room, reserve), (extra_room, 0), (0, 0)])
            for attempt, (extra_room, reserve) in enumerate(tries):
                try:
                    recent = fit_recent(
                        messages,
                        layout,
                        available - extra_room - reserve,
                        counter,
                        turn,
                        shrunk_at,
                        finished,
                    )
                    break
                except ValueError:
                    if attempt == len(tries) - 1:
                        raise
        except ValueError as exc:  # not even the newest user message, cut down, fits
            newest = max(k for k, u in enumerate(layout.units) if u.starts_turn)
            smallest = counter.count_message(
                messages[layout.units[newest].indices[0]].replace(content=ELLIPSIS)
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
            left = cost_up_to(layout, messages, counter, newest_cut, extra_room)
            need = left + note_reserve(messages, layout, counter) if left else 0
            if need < extra_room:
                recent = fit_recent(
                    messages, layout, available - need - reserve, counter, turn, shrunk_at, finished
                )
        if (extra_room or reserve) and turn_squeezed(recent, layout, turn, messages):
            # the current turn's work comes before a summary, recall or free room
            reserve = 0
            recent = fit_recent(messages, layout, available, counter, turn, shrunk_at, finished)
        if not turn_kept(recent, layout, turn, messages) and not finished:
            whole_system = sum(counter.count_message(messages[i]) for i in layout.system)
            fixed = REPLY_PRIMING + whole_system
            check_turn_kept(recent, layout, turn, messages, budget, fixed, counter, shrunk_at)
        room = available - recent.cost - reserve

        recalled: list[Message] = []
        recalled_at: list[int] = []
        recall_room = first_room = recalled_cost = grew = when_room = 0
        if self.recall and any(recent.cut):
            note_room = note_reserve(messages, layout, counter)
            # (the lead says on which days the recalled turns were said: room for that line)
            when_room = min(WHEN_RESERVE, available // 10) if messages[-1].timestamp else 0
            summary_room = self._summary_room(available, summary_share)
            recall_room = room - when_room - max(note_room, summary_room)
            # a summary that yields: the turns recall finds may take its room too (what they
            # leave is the summary's); the newest turns take only what recall left of its own
            first_room = recall_room
            if self.summary_yields:
                first_room += max(0, summary_room - note_room)
            # imported here: recall brings numpy in, which a fit without it does not need
            from session_migrator.recall._recall import fill_turns, recall_turns

            recalled, recalled_at, recalled_cost = recall_turns(
                messages,
                layout,
                recent.cut,
                first_room,
                counter,
                search,
                incremental=len([r for r in recent.cut if r]) == 1 and layout.contiguous,
                searched=searched,
            )
            room -= recalled_cost
            # what recall left goes to turns, not to the summary (which keeps its own
            # room): the newest turns before the cut take it, down to the newest recalled
            # turn (the lead keeps its reserve)
            grown = grow_recent(
                messages,
                layout,
                recent,
                max(0, recall_room - recalled_cost),
                counter,
                recalled_at[-1] if recalled_at else -1,
            )
            grew = grown.cost - recent.cost
            room -= grew
            recent = grown
            # what neither took (the newest turns stop at the newest recalled one) goes to
            # the newest cut turns not recalled, so the budget is used
            more, more_cost = fill_turns(
                messages, layout, recent.cut, max(0, recall_room - recalled_cost - grew), counter,
                recalled_at,
            )  # fmt: skip
            if more:
                recalled_at = sorted(recalled_at + more)
                recalled = [messages[i] for i in recalled_at]
                recalled_cost += more_cost
                room -= more_cost

        # the summary covers the whole cut stretch (recalled turns too), so that its range is
        # contiguous and the next call can extend it with only the newly cut messages
        cut, span = cut_messages(messages, layout, recent.cut)
        if recalled:
            recalled_ids = {m.id for m in recalled}
            left_out = [m for m in cut if m.id not in recalled_ids]
        else:
            left_out = cut
        lead: Message | None = None
        summary: Summary | None = None
        covered: list[Message] = []
        if left_out:
            # the days the recalled turns were said on, and how long the session was idle
            when, when_cost = "", 0
            named = named_days(query, messages[-1].timestamp) if messages[-1].timestamp else []
            for shown in (12, 6, 3, 1, 0) if messages[-1].timestamp else ():
                when = when_line(recalled, messages, shown, named)
                when_cost = counter.count_text(when) + 2 if when else 0
                if when_cost <= (when_room or WHEN_RESERVE):  # (the room kept for it)
                    break
                when, when_cost = "", 0
            if self.summarizer is not None:
                lead, summary = summary_message(
                    self.summarizer,
                    messages,
                    cut,
                    room - when_cost,
                    counter,
                    previous_summary,
                    fallbacks,
                )
                covered = left_out if summary is not None else []
            if lead is None:
                lead = note(left_out, room - when_cost, counter, read_back_room=False)
                if lead is None and when_cost:  # (the note first, the days if they fit)
                    lead = note(left_out, room, counter)
            if lead is not None and when:
                dated = lead.replace(content=f"{lead.text}\n{when}")
                if counter.count_message(dated) <= room:
                    lead = dated
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
        if originals and keeps is None:
            return given_back(result, originals, budget, counter)
        if originals:  # a kept cut's free room stays free (its slack): nothing is given back
            result = with_shrunk(result, originals, counter)
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
                first_room,
                grew,
                query,
                recalled,
                recalled_at,
                recalled_cost,
                result,
            )
        return result

    # -- pieces ------------------------------------------------------------------------------

    def _summary_room(self, available: int, summary_share: float) -> int:
        """The room a summary of the cut part is given: its share, at most
        ``max_summary_tokens`` (none without a summarizer)."""
        if self.summarizer is None:
            return 0
        return min(int(available * summary_share), self.max_summary_tokens)

    def _extras_reserve(
        self, available: int, summary_share: float, recall_share: float, inside: bool = False
    ) -> int:
        """The room kept from the newest turns for a summary and recall (``inside``: the
        summary's is within recall's)."""
        extras = self._summary_room(available, summary_share)
        if self.recall:
            recalled = int(available * recall_share)
            extras = max(extras, recalled) if inside else extras + recalled
        minimum = min(64, available // 4)
        return max(minimum, extras)

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


def _newest_counted_enough(layout: Layout, messages: Sequence[Message], budget: int) -> bool:
    """Whether a fit reads no uncounted cost: the counted newest units alone are over
    ``budget`` and hold the start of the newest turn in the user's own words (a step's result
    sent as a user message does not start one).
    """
    total = 0
    turn = False
    for unit in reversed(layout.units):
        if unit.indices[0] < layout.counted_from:
            return False
        total += unit.cost
        turn = turn or (unit.starts_turn and not is_step_result(messages[unit.indices[0]]))
        if total > budget and turn:
            return True
    return False
