"""Leases: one owner at a time per session and name, on every backend, until released or
expired; only the owner renews or releases; a lease goes with its session."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest

from session_migrator import InvalidIdError, Message, SessionNotFoundError, StoreError
from session_migrator.store import BaseSessionStore


def _session(store: BaseSessionStore, session_id: str = "s") -> None:
    store.append(session_id, [Message("user", "hello", id="m1")])


def test_one_owner_at_a_time(store: BaseSessionStore) -> None:
    _session(store)
    assert store.acquire_lease("s", "compaction", "a", 30)
    assert not store.acquire_lease("s", "compaction", "b", 30)  # a second owner is refused
    assert store.acquire_lease("s", "compaction", "a", 30)  # the owner renews
    # another name, another session: other leases
    assert store.acquire_lease("s", "other", "b", 30)
    _session(store, "t")
    assert store.acquire_lease("t", "compaction", "b", 30)


def test_only_the_owner_releases(store: BaseSessionStore) -> None:
    _session(store)
    assert store.acquire_lease("s", "compaction", "a", 30)
    assert not store.release_lease("s", "compaction", "b")
    assert not store.acquire_lease("s", "compaction", "b", 30)  # still a's
    assert store.release_lease("s", "compaction", "a")
    assert not store.release_lease("s", "compaction", "a")  # (released already)
    assert store.acquire_lease("s", "compaction", "b", 30)  # free: b takes it
    assert not store.release_lease("s", "nothing", "b")
    assert not store.release_lease("unknown", "compaction", "b")


def test_an_expired_lease_lets_another_owner_in(store: BaseSessionStore) -> None:
    _session(store)
    assert store.acquire_lease("s", "compaction", "a", 0.2)
    assert not store.acquire_lease("s", "compaction", "b", 30)
    time.sleep(0.35)
    assert store.acquire_lease("s", "compaction", "b", 30)
    assert not store.acquire_lease("s", "compaction", "a", 30)
    assert not store.release_lease("s", "compaction", "a")  # (a's time ran out: b's now)


def test_renewing_extends_the_owners_time(store: BaseSessionStore) -> None:
    _session(store)
    assert store.acquire_lease("s", "compaction", "a", 0.3)
    time.sleep(0.2)
    assert store.acquire_lease("s", "compaction", "a", 5)  # renewed before it ran out
    time.sleep(0.25)  # (past the first time)
    assert not store.acquire_lease("s", "compaction", "b", 30)


def test_a_lease_goes_with_its_session(store: BaseSessionStore) -> None:
    _session(store)
    assert store.acquire_lease("s", "compaction", "a", 30)
    assert store.delete_session("s")
    with pytest.raises(SessionNotFoundError):
        store.acquire_lease("s", "compaction", "b", 30)
    _session(store)  # the same id again: a new session, no lease
    assert store.acquire_lease("s", "compaction", "b", 30)
    # erased with its workspace or user, purged with its messages
    store.append("w", [Message("user", "hi", id="m1")], workspace="ws", metadata={"user_id": "u"})
    assert store.acquire_lease("w", "compaction", "a", 30)
    assert store.erase_user("u") == 1
    store.append("w", [Message("user", "hi", id="m1")], workspace="ws")
    assert store.acquire_lease("w", "compaction", "b", 30)
    assert store.erase_workspace("ws") == 1
    store.append("w", [Message("user", "hi", id="m1")])
    assert store.acquire_lease("w", "compaction", "c", 30)
    assert store.purge_older_than(0, now=time.time() + 60) >= 1
    assert store.get_session("w") is None
    store.append("w", [Message("user", "hi", id="m1")])
    assert store.acquire_lease("w", "compaction", "d", 30)


def test_lease_arguments_are_checked(store: BaseSessionStore) -> None:
    _session(store)
    with pytest.raises(SessionNotFoundError):
        store.acquire_lease("unknown", "compaction", "a", 30)
    for ttl in (0, -1, float("nan"), float("inf")):
        with pytest.raises(StoreError, match="ttl_seconds"):
            store.acquire_lease("s", "compaction", "a", ttl)
    with pytest.raises(InvalidIdError):
        store.acquire_lease("s", "", "a", 30)
    with pytest.raises(InvalidIdError):
        store.acquire_lease("s", "compaction", "", 30)
    with pytest.raises(InvalidIdError):
        store.release_lease("", "compaction", "a")


def test_hostile_names_and_owners_are_data(store: BaseSessionStore) -> None:
    _session(store)
    for n, text in enumerate(["a\x00b", "x' OR '1'='1", "\\", "é" * 2000, "lease:*"]):
        assert store.acquire_lease("s", text, text, 30), n
        assert not store.acquire_lease("s", text, text + "!", 30), n
        assert store.release_lease("s", text, text), n


def test_of_many_asking_at_once_one_gets_it(
    make_store: Callable[..., BaseSessionStore], backend: str
) -> None:
    first = make_store()
    _session(first)
    # (memory:// is new at each open: its threads share one store)
    stores = [first] * 8 if backend == "memory" else [make_store() for _ in range(8)]
    won: list[str] = []
    start = threading.Barrier(len(stores))

    def ask(n: int) -> None:
        start.wait()
        if stores[n].acquire_lease("s", "compaction", f"owner-{n}", 30):
            won.append(f"owner-{n}")

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1


def test_the_async_twins(store: BaseSessionStore) -> None:
    _session(store)

    async def run() -> None:
        assert await store.aacquire_lease("s", "compaction", "a", 30)
        assert not await store.aacquire_lease("s", "compaction", "b", 30)
        assert not await store.arelease_lease("s", "compaction", "b")
        assert await store.arelease_lease("s", "compaction", "a")

    asyncio.run(run())
