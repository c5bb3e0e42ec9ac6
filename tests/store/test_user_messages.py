"""All of a user's messages over the last N days as one call (issue 43): across every session of
the user, in any workspace, oldest first, each with its session id, on every backend."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from session_migrator import Message
from session_migrator.store import BaseSessionStore, set_user_fact, user_messages

StoreFactory = Callable[..., BaseSessionStore]

DAY = 86_400.0


def _fill(make_store: StoreFactory, clock: Any) -> BaseSessionStore:
    store = make_store(clock=clock)
    ann = {"user_id": "ann"}
    # ten days ago: outside a week
    store.append("old", [Message("user", "old trip", id="o1")], metadata=ann)
    clock.advance(5 * DAY)  # five days ago
    store.append("mon", [Message("user", "Book Kyoto", id="m1")], metadata=ann)
    clock.advance(60)
    store.append("other", [Message("user", "not ann's", id="x1")], metadata={"user_id": "bob"})
    store.append("anon", [Message("user", "no user", id="n1")])
    store.append(
        "work", [Message("user", "ann at work", id="w1")], workspace="office", metadata=ann
    )
    clock.advance(60)
    store.append("mon", [Message("assistant", "Booked.", id="m2")])
    clock.advance(2 * DAY)  # three days ago
    store.append("wed", [Message("user", "And Osaka?", id="t1")], metadata=ann)
    clock.advance(60)
    store.append("mon", [Message("user", "Add a day", id="m3")])
    clock.advance(3 * DAY)  # now
    set_user_fact(store, "ann", "diet", "I'm vegetarian.")  # (a facts record: no message)
    return store


def test_every_message_of_the_users_sessions_over_the_last_days_oldest_first(
    make_store: StoreFactory, clock: Any
) -> None:
    clock.now = 1_780_000_000.0
    store = _fill(make_store, clock)
    rows = user_messages(store, "ann", days=7)
    assert [(sid, m.id) for sid, m in rows] == [
        ("mon", "m1"),
        ("work", "w1"),
        ("mon", "m2"),
        ("wed", "t1"),
        ("mon", "m3"),
    ]
    times = [m.timestamp for _, m in rows]
    assert times == sorted(times)
    assert [m.text for _, m in rows][:2] == ["Book Kyoto", "ann at work"]
    # a shorter window, a longer one, one that ends earlier
    assert [m.id for _, m in user_messages(store, "ann", days=3.5)] == ["t1", "m3"]
    assert len(user_messages(store, "ann", days=30)) == 6
    earlier = clock.now - 4 * DAY
    assert [m.id for _, m in user_messages(store, "ann", days=2, now=earlier)] == ["m1", "w1", "m2"]
    as_datetime = datetime.fromtimestamp(earlier, UTC)
    assert user_messages(store, "ann", days=2, now=as_datetime) == user_messages(
        store,
        "ann",
        days=2,
        now=earlier,
    )
    # never another user's, nor a session without a user
    assert [m.id for _, m in user_messages(store, "bob")] == ["x1"]
    assert user_messages(store, "nobody") == []


def test_a_message_with_a_time_of_its_own_is_placed_by_it(
    make_store: StoreFactory, clock: Any
) -> None:
    store = make_store(clock=clock)
    said = datetime.fromtimestamp(clock.now, UTC) - timedelta(days=2)
    store.append(
        "s",
        [
            Message("user", "said two days ago", id="a", timestamp=said),
            Message("user", "now", id="b"),
        ],
        metadata={"user_id": 42},
    )
    assert [m.id for _, m in user_messages(store, 42, days=3)] == ["a", "b"]
    assert [m.id for _, m in user_messages(store, "42", days=1)] == ["b"]  # (42 and "42": one user)


def test_an_erased_user_has_no_messages(make_store: StoreFactory, clock: Any) -> None:
    store = make_store(clock=clock)
    store.append("s", [Message("user", "hi", id="a")], metadata={"user_id": "ann"})
    assert len(user_messages(store, "ann")) == 1
    store.erase_user("ann")
    assert user_messages(store, "ann") == []


def test_wrong_arguments_are_refused(make_store: StoreFactory) -> None:
    store = make_store()
    with pytest.raises(ValueError, match="user_id"):
        user_messages(store, "")
    with pytest.raises(ValueError, match="days"):
        user_messages(store, "ann", days=-1)
