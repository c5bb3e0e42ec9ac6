"""The store contract for repeated messages, run against every backend: a message sent once is
stored once, whatever its words repeat; only the caller's ids or a batch's idempotency key make
a resend a no-op."""

from __future__ import annotations

import asyncio
import threading

from session_migrator import Message, messages_from_openai
from session_migrator.store import BaseSessionStore


def _batch(*turns: tuple[str, str]) -> list[Message]:
    return messages_from_openai([{"role": r, "content": c} for r, c in turns])


def _log(store: BaseSessionStore, session_id: str = "s") -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in store.load(session_id)]


def test_the_same_words_again_are_a_new_message(store: BaseSessionStore) -> None:
    """The cases of issue 25: each was stored with a message lost."""
    yes = ("user", "yes")
    assert store.append("s", _batch(yes, ("assistant", "Shall I deploy to production?"), yes)) == 3
    assert _log(store) == [yes, ("assistant", "Shall I deploy to production?"), yes]

    assert store.append("hi", _batch(("user", "hi"), ("assistant", "Hello!"))) == 2
    assert store.append("hi", _batch(("user", "hi"))) == 1
    assert [t for _, t in _log(store, "hi")] == ["hi", "Hello!", "hi"]

    for _ in range(2):
        assert store.append("go", _batch(("user", "continue"))) == 1
    assert [t for _, t in _log(store, "go")] == ["continue", "continue"]


def test_concurrent_appends_of_the_same_words_are_all_stored(store: BaseSessionStore) -> None:
    writers, each = 4, 25
    start = threading.Barrier(writers)

    def write() -> None:
        start.wait()
        for _ in range(each):
            store.append("s", _batch(("user", "ok")))

    threads = [threading.Thread(target=write) for _ in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _log(store) == [("user", "ok")] * (writers * each)
    assert len({m.id for m in store.load("s")}) == writers * each


def test_an_idempotency_key_makes_a_resent_batch_a_no_op(store: BaseSessionStore) -> None:
    turn = _batch(("user", "ok"), ("assistant", "Deploying."), ("user", "ok"))
    assert store.append("s", turn, idempotency_key="turn-1") == 3
    assert store.append("s", turn, idempotency_key="turn-1") == 0  # a retry
    assert store.append("s", _batch(("user", "ok")), idempotency_key="turn-2") == 1
    # a reused key with other messages is a new batch: stored, never dropped
    assert store.append("s", _batch(("user", "stop")), idempotency_key="turn-1") == 1
    assert [t for _, t in _log(store)] == ["ok", "Deploying.", "ok", "ok", "stop"]
    # the caller's own ids are deduplicated on, key or not
    own = [Message("user", "mine", id="client-1")]
    assert store.append("s", own, idempotency_key="a") == 1
    assert store.append("s", own, idempotency_key="b") == 0


def test_concurrent_retries_under_one_key_store_the_batch_once(store: BaseSessionStore) -> None:
    turn = _batch(("user", "ok"), ("assistant", "Done."))
    start = threading.Barrier(4)
    added: list[int] = []

    def write() -> None:
        start.wait()
        added.append(store.append("s", turn, idempotency_key="k"))

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(added) == [0, 0, 0, 2]
    assert [t for _, t in _log(store)] == ["ok", "Done."]


def test_async_append_takes_the_key(store: BaseSessionStore) -> None:
    async def go() -> list[int]:
        turn = _batch(("user", "ok"))
        return [await store.aappend("s", turn, idempotency_key="k") for _ in range(2)]

    assert asyncio.run(go()) == [1, 0]


def test_a_stored_message_keeps_an_id_that_loads_and_deletes(store: BaseSessionStore) -> None:
    store.append("s", _batch(("user", "a"), ("assistant", "b")))
    first, second = store.load("s")
    assert store.load("s", after=first.id) == [second]
    assert store.delete_messages("s", [first.id]) == 1
    assert _log(store) == [("assistant", "b")]
