"""The note of the gap before the newest user message: "The user returns after 9 days (last
message 2026-11-26)."

When the newest user message (one that starts a turn) comes at least a threshold (default
:data:`~session_migrator.recall._when.GAP_THRESHOLD`, 30 minutes) after the message before it,
both with times, every fit sends one note of that gap, graded in minutes, hours or days, just
before that message: whether the session fits whole or is cut. The note is a user message
marked ``{"kind": "gap_note"}`` (a system message after the conversation started breaks a chat
rule), one per fit. It is always within the budget: a cut session's fit holds its room back, and
when no room is left (a session that fits whole with too little to spare, or a budget that
cannot hold it) the note is left out and the report says so. ``gap_note=False`` turns it off;
``gap_note=timedelta(hours=2)`` sets the threshold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._units import stable_id
from session_migrator.messages._messages import MARKER_KEY, Message
from session_migrator.migration._report import MigrationResult
from session_migrator.recall._when import GAP_THRESHOLD, gap_between, gap_note

__all__ = ["GapNote", "check_gap_note", "gap_message", "with_gap"]

#: ``gap_note=``: ``True`` (the default threshold), ``False`` (off) or a threshold.
GapNote = bool | timedelta


def check_gap_note(value: object) -> timedelta | None:
    """The threshold ``gap_note=`` asks for (``None``: off); a wrong value raises."""
    if value is True:
        return GAP_THRESHOLD
    if value is False or value is None:
        return None
    if isinstance(value, timedelta):
        if value <= timedelta(0):
            raise ValueError(f"gap_note must be a positive timedelta, got {value!r}")
        return value
    raise TypeError(
        "gap_note must be True, False or a timedelta (the threshold, e.g. timedelta(hours=2)), "
        f"got {type(value).__name__}"
    )


def gap_message(
    messages: Sequence[Message],
    threshold: timedelta | None,
    times: Mapping[str, datetime] | None = None,
) -> Message | None:
    """The note of the gap before the newest user message of ``messages``, marked with that
    message's id (``None``: off, no times, or a gap under ``threshold``); ``times``: when the
    messages without a timestamp were said, by id."""
    if threshold is None:
        return None
    text = gap_note(messages, threshold, times)
    found = gap_between(messages, times)
    if text is None or found is None:
        return None
    at, gap, _ = found
    newest = messages[at]
    return Message(
        "user",
        f"[session-migrator: {text}]",
        id=stable_id("sm-gap", [newest.id, text]),
        extra={
            MARKER_KEY: {
                "kind": "gap_note",
                "of": newest.id,
                "seconds": int(gap.total_seconds()),
            }
        },
    )


def with_gap(
    result: MigrationResult, note: Message, budget: int, counter: TokenCounter
) -> MigrationResult:
    """``result`` with ``note`` just before the message it is of, when that message was sent
    and the note fits in what ``result`` leaves of ``budget`` (else ``result``, the report
    saying the note was left out)."""
    of = (note.marker or {}).get("of")
    sent = result.messages
    at = next((k for k, m in enumerate(sent) if m.id == of), None)
    if at is None or any((m.marker or {}).get("kind") == "gap_note" for m in sent):
        return result
    report = result.report
    cost = counter.count_message(note)
    if report.tokens_after + cost > budget:
        report.notes = [
            *report.notes,
            f"the note of the gap before the newest user message was left out: it takes {cost} "
            f"tokens and {max(budget - report.tokens_after, 0)} were left",
        ]
        return result
    report.tokens_after += cost
    report.messages_after += 1
    return replace(result, messages=[*sent[:at], note, *sent[at:]])
