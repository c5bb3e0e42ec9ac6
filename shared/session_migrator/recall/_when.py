"""When things were said: the dates recall searches by, and the words that show a question is
about the past.

A turn's search text carries a token for the day it was said (:func:`day_token`); a question
that names a day ("what did I book on 3 March?", "March 3", "2026-03-03", "yesterday") is
searched by the same token (:func:`day_tokens`), so the turns of that day rank first. A question
about the past (:func:`about_the_past`) gives recall most of the room the newest turns would
take.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta

from session_migrator.fitting._units import is_step_result
from session_migrator.messages._messages import Message

__all__ = [
    "GAP_THRESHOLD",
    "about_the_past",
    "asks",
    "day_token",
    "day_tokens",
    "gap_between",
    "gap_note",
    "named_days",
    "opens_with_a_question",
    "when_line",
]

_MONTH_NAMES = (
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
    ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
    ("october", "oct"), ("november", "nov"), ("december", "dec"),
)  # fmt: skip
_MONTHS = {name: k for k, names in enumerate(_MONTH_NAMES, 1) for name in names}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY = r"([0-3]?\d)(?:st|nd|rd|th)?"
_DAY_MONTH = re.compile(rf"\b{_DAY}(?:\s+of)?\s+({_MONTH})\b\.?", re.I)
_MONTH_DAY = re.compile(rf"\b({_MONTH})\.?\s+{_DAY}\b", re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_RELATIVE = re.compile(r"\b(yesterday|today|this morning|last night)\b", re.I)
_PAST = re.compile(
    r"\b(did|was|were|had|earlier|previous(?:ly)?|last time|back then|ago|"
    r"remind me|remember|recall|told you|you said|i said|we (?:talked|spoke|discussed)|"
    r"what (?:was|were)|which (?:one|day)|in the end|ended up|booked|picked|chose|"
    r"yesterday|last (?:week|month|year|night))\b",
    re.I,
)


def day_token(when: datetime) -> str:
    """The search token of a day (month and day: a question names a day without its year)."""
    return f"smday{when.month:02d}{when.day:02d}"


def _dates(question: str, now: datetime | None) -> list[date]:
    out: list[date] = []
    for day, month in _DAY_MONTH.findall(question):
        out += _valid(2000, _MONTHS[month.lower()], int(day))
    for month, day in _MONTH_DAY.findall(question):
        out += _valid(2000, _MONTHS[month.lower()], int(day))
    for year, month, day in _ISO.findall(question):
        out += _valid(int(year), int(month), int(day))
    if now is not None:
        for word in _RELATIVE.findall(question):
            back = 0 if word.lower() in ("today", "this morning") else 1
            out.append((now - timedelta(days=back)).date())
    return out


def _valid(year: int, month: int, day: int) -> list[date]:
    try:
        return [date(year, month, day)]
    except ValueError:
        return []


def day_tokens(question: str, now: datetime | None = None) -> list[str]:
    """The day tokens of the days ``question`` names (``now``: when it is asked, for
    "yesterday" and "today")."""
    seen: dict[str, None] = {}
    for d in _dates(question, now):
        seen.setdefault(f"smday{d.month:02d}{d.day:02d}", None)
    return list(seen)


#: The words that point past the last turns ("what did I say last time?"), not the past tense
#: alone ("did you make it?" asks about the message before as often as about one long cut)
_LONG_AGO = re.compile(
    r"\b(earlier|previous(?:ly)?|last time|back then|ago|remind me|remember|recall|told you|"
    r"you said|i said|we (?:talked|spoke|discussed)|yesterday|last (?:week|month|year|night))\b",
    re.I,
)
_ASKING = re.compile(
    r"^\W*(who|whom|whose|what|when|where|which|why|how|did|do|does|was|were|is|are|had|has|"
    r"have|can|could|would|will|should|remind|tell)\b",
    re.I,
)


def asks(text: str) -> bool:
    """Whether ``text`` asks something (a question mark, or a question's first word)."""
    return "?" in text or bool(_ASKING.match(text))


_FIRST_SENTENCE = re.compile(r"^\s*(.+?[.!?])(?=\s|$)", re.S)


def opens_with_a_question(text: str) -> bool:
    """Whether ``text`` is asked as a question: its first sentence is one ("What did we pick
    for the venue?"), not a remark that ends with one ("Wow, that's great! How was it?")."""
    first = _FIRST_SENTENCE.match(text)
    return first.group(1).endswith("?") if first else asks(text)


def about_the_past(question: str, long_ago: bool = False) -> bool:
    """Whether ``question`` asks about something said before (its words, or a day it names);
    ``long_ago``: by the words that point past the last turns (or a day), not the past tense
    alone."""
    dated = bool(_DAY_MONTH.search(question) or _ISO.search(question)) or bool(
        _MONTH_DAY.search(question)
    )
    return dated or bool((_LONG_AGO if long_ago else _PAST).search(question))


def show_day(when: datetime) -> str:
    """A day as a note shows it: ``Tue 3 Mar 2026``."""
    return f"{when:%a} {when.day} {when:%b %Y}"


#: The gap before the newest user message past which a fit sends a note of it (the default of
#: ``gap_note=`` on :func:`~session_migrator.migrate` and the fitters).
GAP_THRESHOLD = timedelta(minutes=30)


def gap_between(
    messages: Sequence[Message], times: Mapping[str, datetime] | None = None
) -> tuple[int, timedelta, datetime] | None:
    """The newest user message's place (one that starts a turn: not a step's result), the gap
    since the message before it (the nearest that is not a system message) and when that one
    was said; ``None`` without such a pair, or without both times (a message's ``timestamp``,
    else ``times`` by its id)."""
    known = times or {}
    for at in range(len(messages) - 1, 0, -1):
        m = messages[at]
        if m.role != "user" or is_step_result(m):
            continue
        before = next((p for p in reversed(messages[:at]) if p.role != "system"), None)
        if before is None:
            return None
        newest = m.timestamp or known.get(m.id)
        then = before.timestamp or known.get(before.id)
        if newest is None or then is None:
            return None
        return at, newest - then, then
    return None


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}{'s' if n != 1 else ''}"


def gap_note(
    messages: Sequence[Message],
    threshold: timedelta = GAP_THRESHOLD,
    times: Mapping[str, datetime] | None = None,
) -> str | None:
    """What the note of the gap before the newest user message says, graded by its length:
    ``The user returns after 9 days (last message 2026-11-26).``, ``... after 3 hours (last
    message 2026-11-26 14:05 UTC).``, ``... after 45 minutes (...)``; ``None`` when the gap is
    under ``threshold`` or not known (see :func:`gap_between`).
    """
    found = gap_between(messages, times)
    if found is None:
        return None
    _, gap, before = found
    if gap < threshold or gap <= timedelta(0):
        return None
    if gap >= timedelta(days=1):
        return (
            f"The user returns after {_plural(gap.days, 'day')} (last message {before:%Y-%m-%d})."
        )
    if gap >= timedelta(hours=1):
        after = _plural(int(gap.total_seconds() // 3600), "hour")
    else:
        after = _plural(max(1, int(gap.total_seconds() // 60)), "minute")
    zone = f" {before.tzname()}" if before.tzname() else ""
    return f"The user returns after {after} (last message {before:%Y-%m-%d %H:%M}{zone})."


def when_line(
    recalled: Sequence[Message],
    messages: Sequence[Message],
    days_shown: int = 6,
    named: Sequence[date] = (),
) -> str:
    """What a lead note says of time: the day each run of recalled messages was said on (those
    of another day than the newest message's), by their places among the messages brought
    back: at most ``days_shown`` days, those ``named`` (the days a question names, by month and
    day) first, then the earliest (the gap before the newest user message has a note of its own: see
    :func:`gap_note`)."""
    parts: list[str] = []
    newest = messages[-1].timestamp if messages else None
    today = newest.date() if newest else None
    runs: list[tuple[date, int, int]] = []  # (day, first, last): places from 1
    for place, m in enumerate(recalled, 1):
        when = m.timestamp
        if when is None or when.date() == today:
            continue
        day = when.date()
        if runs and runs[-1][0] == day and runs[-1][2] == place - 1:
            runs[-1] = (day, runs[-1][1], place)
        else:
            runs.append((day, place, place))
    if runs and days_shown > 0:
        days = list(dict.fromkeys(day for day, _, _ in runs))
        asked = {(d.month, d.day) for d in named}
        first = [d for d in days if (d.month, d.day) in asked]
        chosen = set((first + [d for d in days if d not in first])[:days_shown])
        shown = [
            f"{a}-{b} on {show_day(_at(day))}" if b > a else f"{a} on {show_day(_at(day))}"
            for day, a, b in runs
            if day in chosen
        ]
        more = len(days) - len(chosen)
        parts.append(
            "Of the earlier messages brought back below, "
            + ", ".join(shown[:1]).replace(" on ", " were said on ", 1)
            + "".join(f", {item}" for item in shown[1:])
            + (f" (and others on {more} more day{'s' if more != 1 else ''})" if more else "")
            + "."
        )
    return " ".join(parts)


def _at(day: date) -> datetime:
    return datetime(day.year, day.month, day.day)


def named_days(question: str, now: datetime | None = None) -> list[date]:
    """The days ``question`` names (``now``: when it is asked, for "yesterday")."""
    return _dates(question, now)
