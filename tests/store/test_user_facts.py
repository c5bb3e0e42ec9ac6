"""A user's facts in every backend: read by rules from what the user says, kept per user (a
later statement replaces an earlier one), sent in a note after the system prompt of every fit of
that user's sessions within FACTS_SHARE of the window, never another user's, and erased with
the user."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from session_migrator import Message, ModelWindow, SessionFitter, counter_for
from session_migrator.sessions._fitter import FACTS_SHARE
from session_migrator.store import (
    BaseSessionStore,
    delete_user_fact,
    open_store,
    set_user_fact,
    user_facts,
)
from session_migrator.summaries._facts import extract_facts
from tests.store.conftest import StoreFactory


@pytest.fixture(params=["sqlite", "memory", "redis", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseSessionStore]:
    kind = request.param
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path / 's.db'}"
    elif kind == "memory":
        url = "memory://"
    else:
        url = request.getfixturevalue(f"{kind}_url")
    store = open_store(url)
    yield store
    store.close()


def _note(messages: list[Message]) -> Message | None:
    return next((m for m in messages if (m.marker or {}).get("kind") == "user_facts"), None)


def test_a_stated_preference_reaches_a_new_session(any_store: BaseSessionStore) -> None:
    monday = SessionFitter("mon", store=any_store, metadata={"user_id": "ann"}, user_facts=True)
    monday.append(
        [
            Message("user", "I'm vegetarian, and my daughter is allergic to peanuts."),
            Message("assistant", "Noted!"),
            Message("user", "My name is Ann. I'm not sure about Friday."),
        ]
    )
    SessionFitter("bob-1", store=any_store, metadata={"user_id": "bob"}, user_facts=True).append(
        [Message("user", "I am allergic to shellfish.")]
    )
    tuesday = SessionFitter("tue", store=any_store, metadata={"user_id": "ann"}, user_facts=True)
    tuesday.append(
        [Message("system", "You help with cooking."), Message("user", "What should I cook?")]
    )
    result = tuesday.fit("gpt-4o")
    sent = result.messages
    note = _note(sent)
    assert note is not None
    assert sent[1] is note
    assert sent[0].text == "You help with cooking."
    assert "I'm vegetarian." in note.text
    assert "My daughter is allergic to peanuts." in note.text
    assert "My name is Ann." in note.text
    assert "shellfish" not in note.text  # never another user's
    assert "Friday" not in note.text  # a hedge is not a fact
    assert result.report.tokens_after == counter_for("o200k_base").count_messages(sent)
    # kept with their source and date; a later statement about the same thing replaces it
    kept = {f.key: f for f in user_facts(any_store, "ann")}
    assert kept["my name"].source_id == any_store.load("mon")[2].id
    assert kept["my name"].stated_at is not None
    tuesday.append([Message("user", "My name is Anna, actually.")])
    assert "My name is Anna, actually." in _note(tuesday.fit("gpt-4o").messages).text  # type: ignore[union-attr]
    assert "My name is Ann." not in _note(tuesday.fit("gpt-4o").messages).text  # type: ignore[union-attr]
    # edited and deleted through the API
    set_user_fact(any_store, "ann", "diet", "I eat fish now.")
    assert delete_user_fact(any_store, "ann", "i am vegetarian")
    assert not delete_user_fact(any_store, "ann", "i am vegetarian")
    text = _note(tuesday.fit("gpt-4o").messages).text  # type: ignore[union-attr]
    assert "I eat fish now." in text
    assert "vegetarian" not in text
    # the facts' own session is never recalled from, and erasure takes them
    assert any_store.erase_user("ann") >= 1
    assert user_facts(any_store, "ann") == []
    assert [f.text for f in user_facts(any_store, "bob")] == ["I am allergic to shellfish."]


def test_the_note_stays_within_its_share_and_can_be_turned_off(tmp_path: Path) -> None:
    store = open_store("memory://")
    for k in range(200):
        set_user_fact(store, "ann", f"k{k}", f"My thing number {k} is a long fact {'x' * 40}.")
    window = ModelWindow("w", "test", 4000, 4000, 0, "o200k_base", "explicit")
    fitter = SessionFitter(
        "s", store=store, metadata={"user_id": "ann"}, reserve_output=0, user_facts=True
    )
    fitter.append([Message("user", "hello")])
    result = fitter.fit(window)
    note = _note(result.messages)
    counter = counter_for("o200k_base")
    assert note is not None
    assert counter.count_message(note) <= FACTS_SHARE * 4000
    assert "number 199" in note.text
    assert "number 0 " not in note.text
    assert result.report.tokens_after <= result.report.budget + counter.count_message(note)
    off = SessionFitter("s", store=store, metadata={"user_id": "ann"})  # off by default
    assert _note(off.fit(window).messages) is None
    assert _note(SessionFitter("t", store=store).fit("gpt-4o").messages) is None  # no user


def test_the_rules_read_plain_statements_only() -> None:
    def keys(text: str) -> list[str]:
        return [f.text for f in extract_facts(text)]

    assert keys("I'm vegetarian, and my daughter is allergic to peanuts.") == [
        "I'm vegetarian.",
        "My daughter is allergic to peanuts.",
    ]
    assert keys("I live in Lyon and I work at Airbus") == ["I live in Lyon.", "I work at Airbus."]
    assert keys("I prefer window seats. I am a nurse.") == [
        "I prefer window seats.",
        "I am a nurse.",
    ]
    assert keys("I'm going to the shop") == []
    assert keys("My card is 4111 1111 1111 1111") == []  # never a secret
    assert keys("My door code is 4417") == []
    assert keys("Is my name Ann?") == []
    assert keys("I'm not sure I prefer tea") == []
    with pytest.raises(ValueError, match="non-empty"):
        set_user_fact(open_store("memory://"), "ann", "", "x")


def test_concurrent_writers_of_a_users_facts_lose_nothing(
    make_store: StoreFactory, store_url: str
) -> None:
    # two writers, each with its own store (its own connections, as two processes have;
    # memory:// is one store in one process, shared)
    first = make_store()
    second = first if store_url.startswith("memory") else make_store()
    per = 12
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def writer(store: BaseSessionStore, name: str) -> None:
        try:
            start.wait()
            for k in range(per):
                set_user_fact(store, "ann", f"{name}-{k}", f"{name} fact {k}")
            for k in range(0, per, 3):
                assert delete_user_fact(store, "ann", f"{name}-{k}")
        except BaseException as exc:  # (reported by the test's thread)
            failures.append(exc)

    threads = [
        threading.Thread(target=writer, args=(first, "left")),
        threading.Thread(target=writer, args=(second, "right")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert sorted(f.key for f in user_facts(first, "ann")) == sorted(
        f"{name}-{k}" for name in ("left", "right") for k in range(per) if k % 3
    )
    assert not delete_user_fact(first, "bob", "x")
    assert first.get_session("session-migrator:facts:bob") is None
