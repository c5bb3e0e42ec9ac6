"""Recall across a user's (or a workspace's) other sessions: ``related_sessions`` and
``migrate(..., related=...)`` on real stores (SQLite and memory://)."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from session_migrator import (
    Message,
    ModelWindow,
    RelatedSession,
    RelatedSessions,
    SessionFitter,
    chat_rule_violations,
    counter_for,
    migrate,
)
from session_migrator.recall._related import MAX_EXCERPTS, PAST_SHARE, check_scope
from session_migrator.store import (
    BaseSessionStore,
    arelated_sessions,
    open_store,
    related_sessions,
)

TRIP_DAY = datetime(2026, 11, 22, 18, 30, tzinfo=UTC)
TODAY = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
QUESTION = "What hotel did we pick last week?"


def _at(when: datetime, *pairs: tuple[str, str]) -> list[Message]:
    out: list[Message] = []
    for k, (question, answer) in enumerate(pairs):
        said = when + timedelta(minutes=3 * k)
        out += [
            Message("user", question, timestamp=said),
            Message("assistant", answer, timestamp=said + timedelta(seconds=20)),
        ]
    return out


class Clock:
    """The store's clock (epoch seconds), set to when each session was last active."""

    def __init__(self) -> None:
        self.now = TRIP_DAY

    def __call__(self) -> float:
        return self.now.timestamp()


def fill(store: BaseSessionStore, clock: Clock) -> None:
    """Ann's three sessions (the trip, groceries, today's), Bob's trip, and Ann's session in
    another workspace (the most recently active of her others)."""
    ann = {"user_id": "ann"}
    clock.now = TRIP_DAY + timedelta(minutes=10)
    store.append(
        "trip-1",
        _at(
            TRIP_DAY,
            (
                "Find a hotel in Kyoto near the station for our trip.",
                "Hotel Granvia, Hotel Sakura Kyoto or Dormy Inn are close to the station.",
            ),
            (
                "Let's pick the Hotel Sakura Kyoto, it has the onsen.",
                "Booked: Hotel Sakura Kyoto, 28 Nov to 1 Dec, confirmation SK-4411.",
            ),
        ),
        workspace="home",
        metadata={**ann, "title": "trip-planning"},
    )
    clock.now = TRIP_DAY + timedelta(days=3)
    store.append(
        "groceries",
        _at(TRIP_DAY + timedelta(days=3), ("Make a grocery list.", "Eggs, rice, miso, tofu.")),
        workspace="home",
        metadata=ann,
    )
    clock.now = TRIP_DAY + timedelta(days=3, hours=1)
    store.append(
        "bob-trip",
        _at(TRIP_DAY, ("Which hotel did we pick last week?", "You picked Hotel Bobby, Osaka.")),
        workspace="home",
        metadata={"user_id": "bob"},
    )
    clock.now = TRIP_DAY + timedelta(days=4)
    store.append(
        "ann-work",
        _at(TRIP_DAY, ("Pick a hotel for the offsite.", "Hotel Offsite Berlin is picked.")),
        workspace="work",
        metadata=ann,
    )
    clock.now = TODAY
    store.append(
        "today",
        [
            Message("system", "You are Ann's personal assistant."),
            Message("user", "Good morning!", timestamp=TODAY - timedelta(minutes=5)),
            Message("assistant", "Good morning, Ann.", timestamp=TODAY - timedelta(minutes=5)),
            Message("user", QUESTION, timestamp=TODAY),
        ],
        workspace="home",
        metadata=ann,
    )


def filled_sqlite(path: Path) -> str:
    """The URL of a SQLite store at ``path`` holding :func:`fill`'s sessions."""
    url = f"sqlite:///{path}"
    clock = Clock()
    with open_store(url, clock=clock) as store:
        fill(store, clock)
    return url


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseSessionStore]:
    url = f"sqlite:///{tmp_path / 'related.db'}" if request.param == "sqlite" else "memory://"
    clock = Clock()
    with open_store(url, clock=clock) as s:
        fill(s, clock)
        yield s


def _related_message(messages: list[Message]) -> Message:
    found = [m for m in messages if (m.marker or {}).get("kind") == "related"]
    assert len(found) == 1, [m.text for m in messages]
    return found[0]


def test_last_weeks_answer_comes_back_dated_and_named(store: BaseSessionStore) -> None:
    related = related_sessions(store, "today", "user")
    assert [s.id for s in related.sessions] == ["ann-work", "groceries", "trip-1"]
    assert related.notes == ()
    messages = store.load("today")
    result = migrate(messages, "gpt-4o", related=related)
    report = result.report
    assert report.decision == "fits"
    # the session goes over whole, the same objects; the excerpts follow the system prompt
    sent = result.messages
    assert sent[0] is messages[0]
    assert all(a is b for a, b in zip(sent[2:], messages[1:], strict=True))
    excerpt = _related_message(sent)
    assert sent[1] is excerpt
    assert excerpt.role == "system"
    assert 'From your session "trip-planning" on 2026-11-22 (9 days ago):' in excerpt.text
    assert "user: Let's pick the Hotel Sakura Kyoto" in excerpt.text
    assert "assistant: Booked: Hotel Sakura Kyoto" in excerpt.text
    assert "Hotel Bobby" not in excerpt.text  # another user's session: never
    assert set(report.related_ids) <= {"trip-1", "ann-work"}
    trip = store.load("trip-1")
    assert report.related_ids["trip-1"] == [m.id for m in trip]  # whole exchanges, in order
    assert "groceries" not in report.related_ids  # nothing there bears on the question
    assert chat_rule_violations(sent) == []
    counter = counter_for("o200k_base")
    assert report.tokens_after == counter.count_messages(sent) <= report.budget
    assert report.messages_after == len(sent) == len(messages) + 1
    assert any("recalled" in n and "'trip-planning' (2026-11-22)" in n for n in report.notes)
    assert json.loads(report.to_json())["related_ids"] == report.related_ids


def test_user_scope_never_crosses_users(store: BaseSessionStore) -> None:
    bob = related_sessions(store, "bob-trip", "user")
    assert bob.sessions == ()  # bob has no other session; ann's are not his
    store.append("bob-2", [Message("user", QUESTION, timestamp=TODAY)], metadata={"user_id": "bob"})
    related = related_sessions(store, "bob-2", "user")
    assert [s.id for s in related.sessions] == ["bob-trip"]
    result = migrate(store.load("bob-2"), "gpt-4o", related=related)
    text = _related_message(result.messages).text
    assert "Hotel Bobby" in text
    assert "Sakura" not in text
    assert "Offsite" not in text


def test_workspace_scope_never_crosses_workspaces(store: BaseSessionStore) -> None:
    related = related_sessions(store, "today", "workspace")
    assert {s.id for s in related.sessions} == {"trip-1", "groceries", "bob-trip"}
    assert all(s.workspace == "home" for s in related.sessions)
    result = migrate(store.load("today"), "gpt-4o", related=related)
    text = _related_message(result.messages).text
    assert "Offsite" not in text  # ann's session of another workspace
    assert 'From session "trip-planning"' in text  # (not "your": a workspace is shared)
    assert "of this workspace" in text


def test_without_a_user_id_recall_stays_in_the_session_and_says_so(
    store: BaseSessionStore,
) -> None:
    store.append("anon", [Message("user", QUESTION, timestamp=TODAY)])
    related = related_sessions(store, "anon", "user")
    assert related.sessions == ()
    assert "no user_id" in related.notes[0]
    plain = migrate(store.load("anon"), "gpt-4o")
    result = migrate(store.load("anon"), "gpt-4o", related=related)
    assert result.messages == plain.messages
    assert result.report.related_ids == {}
    assert any("no user_id" in n for n in result.report.notes)
    missing = related_sessions(store, "nowhere", "workspace")
    assert missing.sessions == ()
    assert "not in the store" in missing.notes[0]


def test_the_session_scope_changes_nothing(store: BaseSessionStore) -> None:
    messages = store.load("today")
    assert related_sessions(store, "today", "session") == RelatedSessions("session")
    plain = migrate(messages, "gpt-4o")
    same = migrate(messages, "gpt-4o", related=RelatedSessions("session"))
    assert same.messages == plain.messages
    assert same.report.notes == plain.report.notes == []
    assert "related_ids" in plain.report.to_dict()


def test_a_question_nothing_matches_adds_nothing(store: BaseSessionStore) -> None:
    messages = [*store.load("today"), Message("user", "Tell me a joke about penguins.")]
    messages.insert(-1, Message("assistant", "Sure."))
    related = related_sessions(store, "today", "user")
    result = migrate(messages, "gpt-4o", related=related)
    assert result.messages == messages
    assert result.report.related_ids == {}
    assert any("matched the question" in n for n in result.report.notes)


def _long_today(store: BaseSessionStore, turns: int = 60) -> list[Message]:
    start = TODAY - timedelta(hours=turns)
    history = _at(
        start,
        *[(f"Plan step {k}: what should I cook tonight?", f"Try the recipe number {k}, "
           "with rice and vegetables and a long explanation of every step.") for k in
          range(turns)],
    )  # fmt: skip
    store.append("long", history, workspace="home", metadata={"user_id": "ann"})
    return history


@pytest.mark.parametrize("strategy", ["auto", "trim", "recall", "summarize"])
def test_a_cut_session_holds_room_for_a_question_about_the_past(
    store: BaseSessionStore, strategy: str
) -> None:
    history = _long_today(store)
    messages = [*history, Message("user", QUESTION, timestamp=TODAY)]
    counter = counter_for("o200k_base")
    window = counter.count_messages(messages) // 3
    target = ModelWindow("small", "test", window, window, 0, "o200k_base", "explicit")
    related = related_sessions(store, "long", "user")
    frozen = copy.deepcopy(messages)
    result = migrate(messages, target, strategy=strategy, reserve_output=0, related=related)
    report = result.report
    assert report.decision == "compressed"
    assert messages == frozen
    assert counter.count_messages(result.messages) == report.tokens_after <= report.budget
    assert chat_rule_violations(result.messages) == []
    excerpt = _related_message(result.messages)
    assert counter.count_message(excerpt) <= PAST_SHARE * report.budget
    assert "Hotel Sakura Kyoto" in excerpt.text
    assert result.messages[-1] is messages[-1]
    again = migrate(messages, target, strategy=strategy, reserve_output=0, related=related)
    assert again.messages == result.messages
    assert again.report.related_ids == report.related_ids


def test_a_cut_session_gives_other_questions_only_what_the_fit_leaves(
    store: BaseSessionStore,
) -> None:
    history = _long_today(store)
    messages = [*history, Message("user", "Book a hotel in Kyoto for us.", timestamp=TODAY)]
    counter = counter_for("o200k_base")
    window = counter.count_messages(messages) // 3
    target = ModelWindow("small", "test", window, window, 0, "o200k_base", "explicit")
    related = related_sessions(store, "long", "user")
    plain = migrate(messages, target, strategy="trim", reserve_output=0)
    result = migrate(messages, target, strategy="trim", reserve_output=0, related=related)
    # the session's own fit is untouched: the excerpts, if any, take only the room left
    assert [m for m in result.messages if (m.marker or {}).get("kind") != "related"] == (
        plain.messages
    )
    assert result.report.tokens_after <= result.report.budget


def test_caps_bound_what_is_read(store: BaseSessionStore) -> None:
    one = related_sessions(store, "today", "user", max_sessions=1)
    assert [s.id for s in one.sessions] == ["ann-work"]  # the most recently active
    assert "searched the 1 most recently active of 3" in one.notes[0]
    few = related_sessions(store, "today", "user", max_messages=3)
    assert [len(s.messages) for s in few.sessions] == [2, 1]  # the newest, to the cap
    assert few.sessions[1].messages[0].text.startswith("Eggs")
    assert "the most messages" in few.notes[-1]


def test_a_later_collection_reuses_unchanged_sessions(store: BaseSessionStore) -> None:
    first = related_sessions(store, "today", "user")
    store.append("groceries", [Message("user", "And bread.", timestamp=TODAY)])
    second = related_sessions(store, "today", "user", previous=first)
    by_id = {s.id: s for s in first.sessions}
    for s in second.sessions:
        if s.id == "groceries":
            assert len(s.messages) == 3
        else:
            assert all(a is b for a, b in zip(s.messages, by_id[s.id].messages, strict=True))


def test_async_twin_gives_the_same(store: BaseSessionStore) -> None:
    sync = related_sessions(store, "today", "user")
    got = asyncio.run(arelated_sessions(store, "today", "user"))
    assert got == sync


def test_the_fitter_recalls_across_sessions_and_sees_them_change(
    store: BaseSessionStore,
) -> None:
    fitter = SessionFitter("today", store=store, recall_scope="user")
    first = fitter.fit("gpt-4o")
    assert "Hotel Sakura Kyoto" in _related_message(first.messages).text
    assert fitter.fit("gpt-4o") is first  # nothing changed: the cached answer
    store.append(
        "trip-1",
        _at(TODAY - timedelta(days=1), ("Change the hotel pick to Dormy Inn.", "Done: Dormy Inn.")),
    )
    second = fitter.fit("gpt-4o")
    assert second is not first
    assert "Dormy Inn" in _related_message(second.messages).text
    plain = SessionFitter("today", store=store).fit("gpt-4o")
    assert plain.report.related_ids == {}
    assert [m.id for m in plain.messages] == [m.id for m in store.load("today")]


def test_excerpts_are_bounded_in_number_and_room() -> None:
    when = TODAY - timedelta(days=2)
    many = [
        RelatedSession(
            f"s{k}",
            _at(when + timedelta(hours=8 * k), (f"hotel question {k}", f"hotel answer {k}")),
        )
        for k in range(20)
    ]
    # a remark brings at most MAX_EXCERPTS exchanges, within RELATED_SHARE of the budget
    remark = [Message("user", "The hotel answer was fine.", timestamp=TODAY)]
    noted = migrate(remark, "gpt-4o", related=many)
    assert sum(len(v) for v in noted.report.related_ids.values()) == 2 * MAX_EXCERPTS
    # a question takes the room it needs: every matching exchange that fits
    messages = [Message("user", "Which hotel did I choose?", timestamp=TODAY)]
    result = migrate(messages, "gpt-4o", related=many)
    excerpt = _related_message(result.messages)
    assert sum(len(v) for v in result.report.related_ids.values()) == 2 * len(many)
    tight = ModelWindow("tight", "test", 400, 400, 0, "o200k_base", "explicit")
    bounded = migrate(messages, tight, reserve_output=0, related=many)
    assert 0 < len(bounded.report.related_ids) < len(many)
    assert bounded.report.tokens_after <= bounded.report.budget
    assert 'From session "s' in excerpt.text  # (a plain list: no scope, no "your")
    titled = [
        RelatedSession("t", many[0].messages, title="line one\nFrom your session " + "x" * 99)
    ]
    shown = _related_message(migrate(messages, "gpt-4o", related=titled).messages).text
    assert 'From session "line one From your session xxx' in shown  # one line, cut to 80
    assert len(shown.splitlines()[1]) <= len('From session "" on 2026-11-29 (2 days ago):') + 80
    tiny = ModelWindow("tiny", "test", 60, 60, 0, "o200k_base", "explicit")
    small = migrate(messages, tiny, reserve_output=0, related=many)
    assert small.report.tokens_after <= small.report.budget
    assert small.report.related_ids == {}  # no room: nothing added, and said
    assert any("none fit" in n for n in small.report.notes)


def test_bad_arguments_say_what_to_pass() -> None:
    with pytest.raises(ValueError, match="choose one of session, user, workspace"):
        check_scope("team")
    with pytest.raises(ValueError, match="unknown recall scope"):
        RelatedSessions("everyone")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="RelatedSession"):
        migrate([Message("user", "hi")], "gpt-4o", related=["s1"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="unknown recall scope"):
        SessionFitter("x", store="memory://", recall_scope="all")  # type: ignore[arg-type]
