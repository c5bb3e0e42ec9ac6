"""The offline summary on dialogue no one here wrote: Schema-Guided Dialogue (SGD) sessions,
read from ``../shared/data/sgd/dev`` as the retention benchmark reads them, stitched into one
user's dated history. What a later turn needs is in the summary, under its heading and dated:
the bookings made (the restaurant, the hotel), the value a changed booking ended with, the
request left unanswered."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from benchmarks import retention
from session_migrator import ExtractiveSummarizer, Message, ModelWindow, counter_for, migrate
from tests._sgd import sgd_dialogues
from tests.core.test_outline import sections

COUNTER = counter_for("o200k_base")
START = datetime(2026, 3, 2, 19, 5, tzinfo=UTC)  # a Monday
#: (dialogue, day after START, turns kept: None for all)
PLAN = [
    ("1_00000", 0, None),  # a table for 2 at Sino, San Jose, 11:30 am: booked
    ("6_00068", 3, None),  # a room at 45 Park Lane, London, 3 days: booked
    ("1_00019", 5, None),  # Tonayan for 3 today, then changed to 1, tomorrow: booked
    ("1_00004", 7, 4),  # a dinner in San Jose on March 5th: asked, and the user left
]


@pytest.fixture(scope="module")
def dialogues() -> dict[str, retention.Dialogue]:
    return {d.id: d for d in sgd_dialogues()}


def _history(dialogues: dict[str, retention.Dialogue], fillers: int) -> list[Message]:
    """:data:`PLAN`, then ``fillers`` other dialogues two days apart, then a question."""
    others = [i for i in sorted(dialogues) if i not in {p[0] for p in PLAN}]
    plan = PLAN + [
        (d, 9 + 2 * k, None) for k, d in enumerate(random.Random(5).sample(others, fillers))
    ]
    messages = [Message("system", retention.SYSTEM, id="system", timestamp=START)]
    for k, (dialogue, day, keep) in enumerate(plan):
        when = START + timedelta(days=day)
        for i, turn in enumerate(dialogues[dialogue].turns[:keep]):
            role = "user" if turn.speaker == "USER" else "assistant"
            stamp = when + timedelta(seconds=20 * i)
            messages.append(Message(role, turn.text, id=f"d{k}-t{i}", timestamp=stamp))
    later = START + timedelta(days=90)
    return [*messages, Message("user", "What do I have coming up?", id="q", timestamp=later)]


def _one(lines: list[str], *needles: str) -> int:
    """The index of the line holding every needle (there is exactly one)."""
    found = [k for k, line in enumerate(lines) if all(n in line for n in needles)]
    assert len(found) == 1, (needles, lines)
    return found[0]


def test_the_summary_says_what_was_booked_when_what_changed_and_what_is_still_open(
    dialogues: dict[str, retention.Dialogue],
) -> None:
    messages = _history(dialogues, 12)
    total = COUNTER.count_messages(messages)
    budget = total // 2
    target = ModelWindow("small", "example", budget, budget, 0, "o200k_base", "explicit")
    result = migrate(messages, target, strategy="summarize", reserve_output=0)
    assert result.report.tokens_after <= budget
    lead = result.messages[1]
    assert lead.marker is not None
    assert lead.marker["kind"] == "summary"
    assert "d3-t0" in result.report.summarized_ids  # the dialogues of PLAN were cut
    got = sections(lead.text, only=False)  # (after the lead's own header)
    assert list(got) == ["Decisions:", "Facts:", "Open tasks:"]  # in order, once each
    decisions = got["Decisions:"]
    # the bookings, each dated by the day it was made (and its weekday: "today", "next monday")
    sino = _one(decisions, "[Mon 2026-03-02] agreed:", "Sino in San Jose", "11:30 am", "(done)")
    hotel = _one(decisions, "[Thu 2026-03-05] agreed:", "45 Park Lane in London", "(done)")
    # the changed booking: the value it ended with is what was agreed to
    tonayan = _one(decisions, "[Sat 2026-03-07] agreed:", "table for 1 at Tonayan tomorrow")
    assert decisions[tonayan].endswith("(done)")
    assert sino < hotel < tonayan  # in the order they happened
    assert not any("for 3 at 12:30 pm" in line for line in decisions)  # asked, then changed
    # the request nothing answered: the user left before the restaurant was named
    tasks = got["Open tasks:"]
    _one(tasks, "[Mon 2026-03-09] user:", "dinner reservation on March 5th")
    assert all("2026-03-09" in line for line in tasks)  # the settled requests are not open
    # the facts are dated too
    assert all(line.startswith("- [") for line in got["Facts:"])


def test_a_changed_booking_shows_both_values_in_order_when_there_is_room(
    dialogues: dict[str, retention.Dialogue],
) -> None:
    messages = [m for m in _history(dialogues, 0) if m.id.startswith("d2-")]
    text = ExtractiveSummarizer().summarize(messages, max_tokens=2_000, counter=COUNTER)
    lines = text.splitlines()
    first = _one(lines, "for 3 at 12:30 pm today")  # what was proposed first (a fact)
    final = _one(lines, "agreed:", "table for 1 at Tonayan tomorrow")
    assert lines.index("Decisions:") < final < lines.index("Facts:") < first
    # the user's change is a decision of its own, dated
    _one(lines, "[Sat 2026-03-07] user:", "I'll only need a reservation for one")


@pytest.mark.parametrize("max_tokens", [16, 40, 100, 300, 1_000, 3_000])
def test_the_summary_of_a_long_history_fits_its_budget_and_is_deterministic(
    dialogues: dict[str, retention.Dialogue], max_tokens: int
) -> None:
    messages = _history(dialogues, 60)[1:-1]
    summarizer = ExtractiveSummarizer()
    text = summarizer.summarize(messages, max_tokens=max_tokens, counter=COUNTER)
    assert COUNTER.count_text(text) <= max_tokens
    assert text == ExtractiveSummarizer().summarize(
        messages, max_tokens=max_tokens, counter=COUNTER
    )
    if max_tokens >= 100:
        assert text.startswith("Decisions:\n- [")  # the bookings come first
        sections(text)  # each heading once


def test_a_rolling_summary_keeps_its_sections_and_drops_what_the_new_part_settled(
    dialogues: dict[str, retention.Dialogue],
) -> None:
    messages = _history(dialogues, 3)[1:-1]
    cut = next(k for k, m in enumerate(messages) if m.id == "d3-t2")  # the open request, asked
    first = ExtractiveSummarizer().summarize(messages[:cut], max_tokens=600, counter=COUNTER)
    assert "dinner reservation on March 5th" in "".join(sections(first)["Open tasks:"])
    # the rest of the dialogues: the next one starts another day, so the request stays open
    second = ExtractiveSummarizer().summarize(
        messages[cut:], max_tokens=1_200, counter=COUNTER, previous=first
    )
    after = sections(second)
    assert "dinner reservation on March 5th" in "".join(after["Open tasks:"])
    before = sections(first)["Decisions:"]
    assert after["Decisions:"][: len(before)] == before  # the earlier items are kept, first
    # the same day continued and closed: the open request goes
    asked = [m for m in messages if m.id.startswith("d3-")]
    rest = [
        Message(m.role, m.text, id=f"more-{k}", timestamp=asked[-1].timestamp)
        for k, m in enumerate(
            [Message("user", "Book Ludwig's German Table, please."),
             Message("assistant", "Your table has been reserved."),
             Message("user", "Thanks. That's all.")]
        )
    ]  # fmt: skip
    third = ExtractiveSummarizer().summarize(
        rest, max_tokens=1_200, counter=COUNTER, previous=first
    )
    assert "Open tasks:" not in third
    assert sections(third)["Decisions:"] == sections(first)["Decisions:"]
