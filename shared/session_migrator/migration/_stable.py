"""The cache-stable cut: past the budget, consecutive requests share their prefix.

Providers cache the longest prefix a request shares with an earlier one and bill it at about a
tenth (OpenAI from 1,024 tokens in steps of 128; Anthropic up to a ``cache_control``
breakpoint). A cut that slides by a turn at every request, or a note whose count changes, or
recalled turns placed right after the system prompt, rewrite the prompt from its second
message, and nothing is ever reused. So, past the budget, a stable fit sends::

    system | lead (summary or note of the cut part) | kept turns | volatile | current turn
    <-------------------- the same from one request to the next ------->

- **The cut sits on a grid.** The kept turns start at the first turn at or past a multiple of
  ``step`` tokens from the conversation's start (``step``: the ``slack`` share of the room for
  the kept turns). The lowest grid point whose kept part fits is chosen, so the cut stays put
  while the conversation grows by less than a step, then moves a whole step (compact down to a
  low watermark, append up to the high one). No state is needed: the same conversation gives
  the same cut at every fit, in any process.
- **The lead is fixed.** It covers every message before the cut (recalled ones too), in a room
  of its own that does not depend on the current turn, so it stays byte for byte the same
  while the cut does not move.
- **What changes with the question goes last**: the recalled turns, with the line on when they
  were said, sit just before the newest turn the user opened.

With a kept state (a :class:`~session_migrator.fitting._units.Ledger` with a ``slack``: the
fitters, histories, memories and guards) the recalled turns take at most ``VOLATILE_SHARE`` of
the room for a question that is not about the past, and nothing for a turn that asks nothing
(a statement), so that most of each request is what the last one sent. A one-off fit
(:func:`~session_migrator.migrate` without a store) gives recall the strategy's share as before,
and the room the kept turns leave.

With a compactor (:mod:`session_migrator.sessions._compactor`), the summary of the part the
next cut leaves out is written in the background a step ahead, and a cut whose summary is not
ready yet leads with the offline one: no fit waits for the summarizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from session_migrator.counting._counter import REPLY_PRIMING, TokenCounter
from session_migrator.fitting._lead import note, note_reserve, summary_message
from session_migrator.fitting._result import CompressionResult
from session_migrator.fitting._units import Layout, Unit, build_units, cut_messages
from session_migrator.fitting._working import current_turn
from session_migrator.messages._messages import MARKER_KEY, Message
from session_migrator.migration._steady import ids_without
from session_migrator.recall._when import asks, named_days, opens_with_a_question, when_line
from session_migrator.summaries._ahead import Ahead, Plan, digest_of
from session_migrator.summaries._extractive import ExtractiveSummarizer
from session_migrator.summaries._summarizers import Summarizer, Summary

__all__ = ["ONE_OFF_STEP", "PAST_SHARE", "VOLATILE_SHARE", "Stable", "stable_fit"]

#: With a kept state: the most of the room the recalled turns take for a question that is not
#: about the past (what changes from one request to the next).
VOLATILE_SHARE = 0.03
#: ... and never less than this many tokens (a couple of turns)
VOLATILE_LEAST = 200
#: A question about the past (asked as a question) takes this share of the room, from the
#: newest kept turns before it where need be (one that says it is about long ago takes the
#: share a one-off fit gives it).
PAST_SHARE = 0.3
#: Without one (a one-off ``migrate()``): the grid's step, as a share of the kept turns' room.
ONE_OFF_STEP = 0.25
#: The room kept for the line on when the recalled turns were said.
WHEN_ROOM = 120


@dataclass(frozen=True)
class Stable:
    """What a strategy brings to a stable fit: its summarizer (``None``: a note), whether it
    recalls, its shares of the room, and its name (for the budget check)."""

    name: str
    summarizer: Summarizer | None
    recall: bool
    summary_room: int
    recall_share: float


def stable_fit(
    how: Stable,
    messages: Sequence[Message],
    layout: Layout,
    system: list[Message],
    system_cost: int,
    budget: int,
    counter: TokenCounter,
    search: str,
    query: str,
    past_share: float,
    previous_summary: Summary | None,
    searched: Sequence[Message],
) -> CompressionResult | None:
    """The cache-stable fit of ``messages`` (see the module docstring), or ``None`` when the
    current turn does not fit beside a lead (the caller cuts as before).

    ``search``: what recall searches by; ``query``: the question (for the days it names);
    ``past_share``: the share of the room recall takes for a question about the past (0: it is
    not; :data:`PAST_SHARE` by the past tense alone, more where it says long ago).
    """
    available = budget - REPLY_PRIMING - system_cost
    kept_state = layout.cache is not None and layout.slack > 0
    slack = layout.slack
    if layout.counted_from:
        # the grid is laid from the conversation's start: every unit's cost is read
        cache = layout.cache
        layout = build_units(
            messages,
            [counter.count_message(m) for m in messages],
            keep_pending=layout.keep_pending,
        )
        layout.cache = cache
    units = layout.units
    if not units or not layout.contiguous or not layout.system_first:
        return None
    dated = messages[-1].timestamp is not None
    when_room = min(WHEN_ROOM, available // 10) if how.recall and dated else 0
    lead_room = max(how.summary_room, note_reserve(messages, layout, counter, read_back=True))
    past_room = 0
    if kept_state:
        # (the kept turns' room must not move as the conversation grows: it is laid from the
        # budget alone)
        volatile = max(int(available * VOLATILE_SHARE), VOLATILE_LEAST) if how.recall else 0
        if how.recall and past_share and opens_with_a_question(query):
            past_room = int(available * past_share)
        step_share = slack
    else:
        volatile = int(available * how.recall_share) if how.recall else 0
        step_share = ONE_OFF_STEP
    high = available - lead_room - volatile - when_room
    # the newest turn the user opened (finished or not) is sent whole after the volatile part,
    # so the conversation still ends with what was said last
    turn = current_turn(messages, layout)
    suffix = [0] * (len(units) + 1)
    for k in range(len(units) - 1, -1, -1):
        suffix[k] = suffix[k + 1] + units[k].cost
    total = suffix[0]
    turn_from = min(turn, max((k for k, u in enumerate(units) if u.starts_turn), default=0))
    if high <= 0 or suffix[turn_from] > high:
        return None
    if turn < len(units) and any(messages[i].tool_calls for u in units[turn:] for i in u.indices):
        return None  # an agent's turn in progress: its steps come first (see _working)
    step = max(1, int(high * step_share))
    # the lowest grid point whose kept part fits: the first turn at or past j * step
    # the grid is laid so that the first cut (when the turns first outgrow the room) leaves a
    # whole step free: it falls at the low watermark, not just under the high one, from which
    # the next turn would move it again
    offset = (available - high) % step
    cut = _grid_cut(units, suffix, total, step, high, turn_from, offset)
    if cut is None or cut == 0:
        return None
    kept_cost = suffix[cut]
    start = units[cut].indices[0]
    turn_at = units[turn].indices[0] if turn < len(units) else len(messages)
    cut_part, span = cut_messages(messages, layout, (range(cut),))
    fallbacks: list[str] = []
    lead: Message | None = None
    summary: Summary | None = None
    notes: list[str] = []
    # a lead made for this cut and room is the lead while the cut stays (another reader of the
    # session, with another room, may store a summary of its own in between)
    leads = layout.cache.setdefault("leads", {}) if layout.cache is not None else None
    key = (cut_part[0].id, cut_part[-1].id, len(cut_part), how.name, how.summary_room, lead_room)
    held = leads.get(key) if leads is not None else None
    if held is not None:
        lead, summary = held
    else:
        lead, summary, settled = _lead(
            how, messages, layout, cut_part, lead_room, counter, previous_summary, fallbacks, notes
        )
        if leads is not None and settled:
            if len(leads) >= 8:
                leads.clear()
            leads[key] = (lead, summary)
    if isinstance(ahead := (layout.cache or {}).get("ahead"), Ahead) and summary is not None:
        _plan_next(
            ahead,
            how,
            messages,
            layout,
            units,
            suffix,
            total,
            cut,
            step,
            offset,
            turn_from,
            summary,
        )
    lead_cost = counter.count_message(lead) if lead is not None else 0

    recalled: list[Message] = []
    recalled_at: list[int] = []
    recalled_cost = 0
    room = available - lead_cost - kept_cost
    # a question about the past takes its room from the newest kept turns before the current
    # one, not the oldest: the head of the prompt stays what the last request sent
    gap = turn
    if kept_state and how.recall and past_room:
        while room - when_room < past_room:
            before = max((k for k in range(cut + 1, gap) if units[k].starts_turn), default=None)
            if before is None:
                break
            room += suffix[before] - suffix[gap]
            kept_cost -= suffix[before] - suffix[gap]
            gap = before
    gap_at = units[gap].indices[0] if gap < len(units) else len(messages)
    if how.recall:
        recall_room = room - when_room
        if kept_state:
            # a turn that asks nothing brings nothing back: what recall brings is new to the
            # provider's cache at every turn, and a statement seldom needs it
            recall_room = min(recall_room, max(volatile, past_room)) if asks(query) else 0
        # imported here: recall brings numpy in, which a fit without it does not need
        from session_migrator.recall._recall import fill_turns, recall_turns

        # (the turns a question about the past took room from are searched too)
        searched_part = (range(cut),) if gap == turn else (range(cut), range(gap, turn))
        recalled, recalled_at, recalled_cost = recall_turns(
            messages,
            layout,
            searched_part,
            recall_room,
            counter,
            search,
            incremental=gap == turn,
            searched=searched,
        )
        if not kept_state:
            # a one-off fit: the room recall left goes to the newest cut turns not recalled
            more, more_cost = fill_turns(
                messages, layout, (range(cut),), recall_room - recalled_cost, counter, recalled_at
            )
            if more:
                recalled_at = sorted(recalled_at + more)
                recalled = [messages[i] for i in recalled_at]
                recalled_cost += more_cost
        if recalled and dated:
            recalled, recalled_cost = _dated(
                recalled, messages, query, room - recalled_cost, counter, recalled_cost
            )
    parts = [*system, *([lead] if lead is not None else [])]
    parts += messages[start:gap_at]
    stable_through = parts[-1].id if parts else None
    parts += recalled
    parts += messages[turn_at:]
    older = [i for i in recalled_at if i < start]
    left_out = ids_without(layout.ids, span, older) if span is not None else []
    back = set(recalled_at)
    left_out += [layout.ids[i] for i in range(gap_at, turn_at) if i not in back]
    total_sent = REPLY_PRIMING + system_cost + lead_cost + kept_cost + recalled_cost
    if total_sent > budget:  # pragma: no cover - guarded by construction; a bug if reached
        raise AssertionError(f"{how.name} produced {total_sent} tokens for a budget of {budget}")
    return CompressionResult(
        messages=parts,
        dropped_ids=[] if summary is not None else left_out,
        summarized_ids=left_out if summary is not None else [],
        recalled_ids=[m.id for m in recalled],
        truncated_ids=[],
        summary=summary,
        fallbacks=fallbacks,
        notes=notes,
        tokens=total_sent,
        stable_through=stable_through,
    )


def _lead(
    how: Stable,
    messages: Sequence[Message],
    layout: Layout,
    cut_part: list[Message],
    lead_room: int,
    counter: TokenCounter,
    previous_summary: Summary | None,
    fallbacks: list[str],
    notes: list[str],
) -> tuple[Message | None, Summary | None, bool]:
    """The summary or note of the cut part, its summary, and whether it stands for as long as
    the cut does (not an offline summary standing in, not one written after a failure)."""
    lead: Message | None = None
    summary: Summary | None = None
    settled = True
    if how.summarizer is not None and how.summary_room > 0:
        summarizer: Summarizer = how.summarizer
        previous = previous_summary
        ahead = layout.cache.get("ahead") if layout.cache is not None else None
        if isinstance(ahead, Ahead):
            # written ahead, off the request path: the fit that moves the cut does not wait
            summarizer, previous = _ahead_of(ahead, how, cut_part, previous_summary, notes)
            settled = summarizer is how.summarizer
        before = len(fallbacks)
        lead, summary = summary_message(
            summarizer, messages, cut_part, how.summary_room, counter, previous, fallbacks
        )
        settled = settled and len(fallbacks) == before
    if lead is None:
        lead = note(cut_part, lead_room, counter)
    return lead, summary, settled


def _real(summary: Summary | None, how: Stable) -> bool:
    """Whether ``summary`` is the strategy's summarizer's (not the offline stand-in's)."""
    return (
        summary is not None
        and how.summarizer is not None
        and summary.summarizer == how.summarizer.name
    )


def _ahead_of(
    ahead: Ahead,
    how: Stable,
    cut_part: list[Message],
    stored: Summary | None,
    notes: list[str],
) -> tuple[Summarizer, Summary | None]:
    """The summarizer and the summary to build on for this cut, with compaction in the
    background: the summary written ahead of this very cut part, else the stored one where it
    covers it, else the offline summary now (and this cut part's summary asked for)."""
    assert how.summarizer is not None
    ready = ahead.summary_for(cut_part)
    if ready is not None:
        notes.append("the summary of the cut part was written in the background, ahead of the cut")
        return how.summarizer, ready
    covers = stored is not None and (stored.first_id, stored.last_id) == (
        cut_part[0].id,
        cut_part[-1].id,
    )
    if covers and _real(stored, how):
        return how.summarizer, stored  # (the summary in use: no call)
    # not ready: the offline summary stands in, and the summarizer's is written in the
    # background (built on the stored one where that is the summarizer's, of the part before)
    if not ahead.wants(cut_part):
        real = stored if _real(stored, how) else None
        base = real if real is not None and real.first_id == cut_part[0].id else None
        ahead.want(Plan(tuple(cut_part), how.summary_room, base, digest_of(cut_part)))
    notes.append(
        "the summary of the cut part is being written in the background; the offline summary "
        "stands in until it is ready"
    )
    return ExtractiveSummarizer(), None


def _plan_next(
    ahead: Ahead,
    how: Stable,
    messages: Sequence[Message],
    layout: Layout,
    units: Sequence[Unit],
    suffix: list[int],
    total: int,
    cut: int,
    step: int,
    offset: int,
    latest: int,
    summary: Summary,
) -> None:
    """Once this cut's summary is the summarizer's, ask for the summary of the part the next
    cut will leave out (the first turn at or past the next grid point; its messages are all
    said by then, the kept turns holding more than a step), built on this one: it has a whole
    step of the conversation's time to be written."""
    if not _real(summary, how):
        return  # (this cut's own summary first: it is being written)
    mark = ((total - suffix[cut] - offset) // step + 1) * step + offset
    k = cut + 1
    while k <= latest and (total - suffix[k] < mark or not units[k].starts_turn):
        k += 1
    if k > latest or ahead.next_cut == k:
        return
    ahead.next_cut = k
    covered, _ = cut_messages(messages, layout, (range(k),))
    if covered:
        # (built on this cut's summary where that is the summarizer's, else from the start)
        base = summary if _real(summary, how) and covered[0].id == summary.first_id else None
        ahead.want(Plan(tuple(covered), how.summary_room, base, digest_of(covered)))


def _grid_cut(
    units: Sequence[Unit],
    suffix: list[int],
    total: int,
    step: int,
    high: int,
    latest: int,
    offset: int = 0,
) -> int | None:
    """The first unit at or past the lowest multiple of ``step`` (tokens from the start) whose
    suffix fits in ``high``, starting a turn, at most ``latest``."""
    j = max(0, -(-(total - high - offset) // step))
    k = 0
    while True:
        mark = j * step + offset
        # the first unit whose start is at or past the mark, starting a turn
        while k <= latest and (total - suffix[k] < mark or not units[k].starts_turn):
            k += 1
        if k > latest:
            return None
        if suffix[k] <= high:
            return k
        j += 1


def _dated(
    recalled: list[Message],
    messages: Sequence[Message],
    query: str,
    room: int,
    counter: TokenCounter,
    cost: int,
) -> tuple[list[Message], int]:
    """The recalled turns, the first one opening with the line on when they were said (and
    how long the session was idle) where it fits in ``room``."""
    first = recalled[0]
    if not isinstance(first.content, str):
        return recalled, cost
    named = named_days(query, messages[-1].timestamp)
    for shown in (12, 6, 3, 1):
        when = when_line(recalled, messages, shown, named)
        if not when:
            return recalled, cost
        dated = first.replace(
            content=f"[session-migrator: recalled from earlier in this conversation. {when}]\n"
            f"{first.text}",
            extra={**first.extra, MARKER_KEY: {"kind": "recalled", "of": first.id}},
        )
        extra_cost = counter.count_message(dated) - counter.count_message(first)
        if extra_cost <= room:
            return [dated, *recalled[1:]], cost + extra_cost
    return recalled, cost
