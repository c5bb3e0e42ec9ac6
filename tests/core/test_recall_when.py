"""When messages were said: the timestamp a message carries (and a store records), the day a
question names, the dates a lead note shows (the session-gap note: test_gap_note.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from session_migrator import InvalidMessageError, Message, ModelWindow, counter_for, migrate
from session_migrator.store import open_store
from session_migrator.store._codec import message_from_json, message_to_json

START = datetime(2026, 2, 2, 10, 0, tzinfo=UTC)
PLACES = [
    "Sino", "Aster", "Bellweather", "Corvid", "Delmonico", "Ember", "Fennel", "Gallo",
    "Harbor", "Ivy", "Juniper", "Kettle", "Lumen", "Marrow", "Nectar", "Oriel", "Pimento",
    "Quince", "Rook", "Saffron", "Tamarind", "Umber", "Verbena", "Willow", "Yarrow", "Zest",
]  # fmt: skip


def _window(budget: int) -> ModelWindow:
    return ModelWindow("t", "test", budget, budget, 0, "o200k_base", "explicit")


def _history() -> tuple[list[Message], dict[str, datetime]]:
    """One dialogue a day, each booking a table somewhere else, in words that repeat."""
    out = [Message("system", "You are a helpful assistant.", id="s", timestamp=START)]
    days: dict[str, datetime] = {}
    for k, place in enumerate(PLACES):
        when = START + timedelta(days=2 * k)
        days[place] = when
        lines = [
            ("user", "I'd like to find somewhere nice to eat tonight, for two people."),
            ("assistant", "Sure. Which part of town, and any cuisine you prefer?"),
            ("user", "Somewhere central, anything but fast food. A quiet place would be good."),
            ("assistant", f"{place} is central and quiet, and they have a table at 7 pm."),
            ("user", "That sounds good, please go ahead and reserve it."),
            ("assistant", "Done: your table is reserved. Enjoy your dinner!"),
        ]
        for j, (role, text) in enumerate(lines):
            out.append(
                Message(role, text, id=f"d{k}-{j}", timestamp=when + timedelta(minutes=j))  # type: ignore[arg-type]
            )
    return out, days


def test_a_message_carries_when_it_was_said_without_it_changing_what_it_is() -> None:
    naive = Message("user", "hi", id="m", timestamp=datetime(2026, 3, 3, 9, 30))
    assert naive.timestamp == datetime(2026, 3, 3, 9, 30, tzinfo=UTC)
    assert naive == Message("user", "hi", id="m")  # not compared
    assert naive.replace(content="ho").timestamp == naive.timestamp
    assert "timestamp" not in naive.to_openai()
    later = naive.replace(timestamp=datetime(2026, 3, 3, 11, tzinfo=timezone(timedelta(hours=2))))
    assert message_from_json(message_to_json(later)).timestamp == later.timestamp
    with pytest.raises(InvalidMessageError, match="timestamp"):
        Message("user", "hi", timestamp="2026-03-03")  # type: ignore[arg-type]


def test_a_store_records_when_a_message_was_appended_unless_it_says() -> None:
    clock = iter([1_780_000_000.0, 1_780_000_100.0])
    with open_store("memory://", clock=lambda: next(clock)) as store:
        given = datetime(2026, 1, 1, tzinfo=UTC)
        store.append("s", [Message("user", "a", id="a", timestamp=given)])
        store.append("s", [Message("assistant", "b", id="b")])
        a, b = store.load("s")
    assert a.timestamp == given
    assert b.timestamp == datetime.fromtimestamp(1_780_000_100.0, UTC)


def test_a_question_naming_a_day_recalls_that_days_turns_shown_with_their_date() -> None:
    history, days = _history()
    counter = counter_for("o200k_base")
    asked = START + timedelta(days=60)
    for place in ("Delmonico", "Lumen", "Tamarind"):
        day = days[place]
        question = f"Which restaurant did I pick when we talked on {day.day} {day:%B}?"
        messages = [*history, Message("user", question, id="q", timestamp=asked)]
        budget = counter.count_messages(messages) // 5
        result = migrate(messages, _window(budget), strategy="recall", reserve_output=0)
        text = "\n".join(m.text for m in result.messages)
        assert f"{place} is central and quiet" in text, place
        lead = result.messages[1]
        assert lead.marker is not None
        assert f"{day:%a} {day.day} {day:%b %Y}" in lead.text  # the recalled turn's day
        # the gap before the question: its own note, just before it (not in the lead)
        assert "last active" not in lead.text
        assert "returns after" not in lead.text
        gap = result.messages[-2]
        assert (gap.marker or {}).get("kind") == "gap_note", place
        assert gap.text.startswith("[session-migrator: The user returns after ")


def test_without_times_a_day_in_the_question_changes_nothing() -> None:
    history, _ = _history()
    plain = [m.replace(timestamp=None) for m in history]
    messages = [*plain, Message("user", "Which restaurant did I pick on 3 March?", id="q")]
    budget = counter_for("o200k_base").count_messages(messages) // 5
    result = migrate(messages, _window(budget), strategy="recall", reserve_output=0)
    assert "last active" not in result.messages[1].text
    assert "brought back below" not in result.messages[1].text
    assert not any((m.marker or {}).get("kind") == "gap_note" for m in result.messages)


def test_a_question_about_the_past_gives_recall_the_room_the_newest_turns_would_take() -> None:
    history, _ = _history()
    counter = counter_for("o200k_base")

    def recalled(question: str) -> int:
        messages = [*history, Message("user", question, id="q")]
        budget = counter.count_messages(messages) // 4
        result = migrate(messages, _window(budget), strategy="auto", reserve_output=0)
        return len(result.report.recalled_ids)

    # the same words, asked about the past or not
    assert recalled("Which quiet central table did I reserve before?") > recalled(
        "Find a quiet central table to reserve."
    )


def test_the_lead_dates_each_run_of_recalled_messages_the_named_day_first() -> None:
    from session_migrator.recall._when import when_line

    days = [START + timedelta(days=d) for d in (0, 3, 7)]
    recalled = [
        Message("user", f"m{k}", id=f"m{k}", timestamp=days[k // 2] + timedelta(minutes=k))
        for k in range(6)
    ]
    newest = Message("user", "q", id="q", timestamp=START + timedelta(days=30))
    line = when_line(recalled, [*recalled, newest])
    assert line.endswith(
        "Of the earlier messages brought back below, 1-2 were said on Mon 2 Feb 2026, "
        "3-4 on Thu 5 Feb 2026, 5-6 on Mon 9 Feb 2026."
    )
    # (the gap before the question has a note of its own: tests/core/test_gap_note.py)
    assert line.startswith("Of the earlier messages brought back below")
    # room for one day: the day the question names, with the places of its messages
    one = when_line(recalled, [*recalled, newest], days_shown=1, named=[days[2].date()])
    assert one.endswith("5-6 were said on Mon 9 Feb 2026 (and others on 2 more days).")
