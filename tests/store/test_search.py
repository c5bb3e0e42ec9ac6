"""The search index every backend keeps as messages are appended (issue 43): all of a user's
(or a workspace's) sessions are searchable without loading them, never another user's, and a
message that goes (deleted, erased, purged, its session deleted) leaves the index with it."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import pytest

from session_migrator import Message, ModelWindow, SessionFitter
from session_migrator.messages._messages import ContentPart
from session_migrator.store import (
    BaseSessionStore,
    arelated_sessions,
    open_store,
    related_sessions,
)
from session_migrator.store._related import MAX_RECENT_MESSAGES, MAX_RELATED_MESSAGES, WINDOW
from tests.store.conftest import FakeClock, StoreFactory

FACT = "The wifi password at the cabin is maple-otter-22."


def _filler(session: int, n: int) -> list[Message]:
    return [
        Message(
            "user" if k % 2 == 0 else "assistant",
            f"Session {session} note {k}: coffee and a walk in the garden, then lunch.",
            id=f"s{session}-m{k}",
        )
        for k in range(n)
    ]


def _texts(hits: list[tuple[str, Message]]) -> list[str]:
    return [m.text for _, m in hits]


def test_a_search_finds_every_session_of_the_user_and_never_another_users(
    store: BaseSessionStore,
) -> None:
    store.append("ann-old", [Message("user", FACT, id="f")], metadata={"user_id": "ann"})
    for i in range(5):
        store.append(f"ann-{i}", _filler(i, 6), metadata={"user_id": "ann"})
    store.append(
        "bob-1",
        [Message("user", "The wifi password at the cabin is bob-secret-9.", id="b")],
        metadata={"user_id": "bob"},
        workspace="other",
    )
    hits = store.search_messages("What is the wifi password at the cabin?", user_id="ann")
    assert hits[0][0] == "ann-old"
    assert _texts(hits) == [FACT]
    assert {sid for sid, _ in store.search_messages("cabin wifi", user_id="bob")} == {"bob-1"}
    assert _texts(store.search_messages("cabin", workspace="other")) == [
        "The wifi password at the cabin is bob-secret-9."
    ]
    assert store.search_messages("cabin", workspace="default") != []
    assert {sid for sid, _ in store.search_messages("cabin", workspace="default")} == {"ann-old"}
    assert len(store.search_messages("coffee garden", user_id="ann", limit=7)) == 7
    assert store.search_messages("coffee", user_id="carol") == []
    assert store.search_messages("the what is", user_id="ann") == []  # stop words only
    assert store.search_messages("cabin", user_id="ann", limit=0) == []
    with pytest.raises(ValueError, match="exactly one"):
        store.search_messages("cabin")
    with pytest.raises(ValueError, match="exactly one"):
        store.search_messages("cabin", user_id="ann", workspace="default")
    assert asyncio.run(store.asearch_messages("cabin", user_id="ann"))[0][0] == "ann-old"


def test_content_parts_and_odd_text_are_searched(store: BaseSessionStore) -> None:
    parts = (ContentPart("text", "the lighthouse keeper"), ContentPart("text", "rowing boat"))
    store.append(
        "s",
        [
            Message("user", parts, id="p"),
            Message("user", "a kayak \\u0000 text, then a nul \x00 inside", id="n"),
        ],
        metadata={"user_id": "ann"},
    )
    assert [m.id for _, m in store.search_messages("lighthouse", user_id="ann")] == ["p"]
    assert [m.id for _, m in store.search_messages("rowing", user_id="ann")] == ["p"]
    assert [m.id for _, m in store.search_messages("kayak", user_id="ann")] == ["n"]


def test_a_message_that_goes_leaves_the_index(make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(clock=clock)
    meta = {"user_id": "ann"}
    store.append("a", [Message("user", "my locker code is 4471", id="m1")], metadata=meta)
    store.append("a", [Message("assistant", "noted, the locker", id="m2")])
    store.append("b", [Message("user", "locker by the pool", id="m3")], metadata=meta)
    store.append("c", [Message("user", "a locker at the station", id="m4")], metadata=meta)
    assert len(store.search_messages("locker", user_id="ann")) == 4
    assert store.delete_messages("a", ["m1"]) == 1
    assert sorted(m.id for _, m in store.search_messages("locker", user_id="ann")) == [
        "m2",
        "m3",
        "m4",
    ]
    assert store.search_messages("4471", user_id="ann") == []
    assert store.delete_session("b")
    assert sorted(m.id for _, m in store.search_messages("locker", user_id="ann")) == ["m2", "m4"]
    # the same id again, with other words: the old words are gone, the new ones found
    store.append("a", [Message("user", "my bike lock code is 9090", id="m1")])
    assert store.search_messages("4471", user_id="ann") == []
    assert [m.id for _, m in store.search_messages("bike", user_id="ann")] == ["m1"]
    clock.advance(10 * 86_400)
    store.append("d", [Message("user", "a new locker", id="m5")], metadata=meta)
    assert store.purge_older_than(5) == 3
    assert [m.id for _, m in store.search_messages("locker bike", user_id="ann")] == ["m5"]
    assert store.erase_user("ann") == 1
    assert store.search_messages("locker", user_id="ann") == []
    assert store.search_messages("locker", workspace="default") == []
    _assert_index_empty(store)


def _assert_index_empty(store: BaseSessionStore) -> None:
    """Nothing of an erased message is left in the index, read raw."""
    from session_migrator.store._postgres import PostgresStore
    from session_migrator.store._redis import RedisStore
    from session_migrator.store._sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        conn = sqlite3.connect(store.path)
        try:
            (n,) = conn.execute(
                "SELECT count(*) FROM message_search WHERE message_search MATCH "
                "'locker OR bike OR 4471 OR pool'"
            ).fetchone()
        finally:
            conn.close()
        assert n == 0
    elif isinstance(store, RedisStore):
        keys = list(store._client.scan_iter(match=f"{store.prefix}*"))
        assert [k for k in keys if b":w:" in k or b":words" in k or b":wordcounts" in k] == []
    elif isinstance(store, PostgresStore):
        assert store._read("SELECT count(*) FROM sm_messages WHERE search IS NOT NULL") == [(0,)]


def test_related_sessions_reads_the_old_sessions_the_index_finds(store: BaseSessionStore) -> None:
    meta = {"user_id": "ann"}
    # the oldest session holds the fact; the newer ones pass the cap on messages read by recency
    store.append("day-000", [*_filler(0, 10), Message("user", FACT, id="fact")], metadata=meta)
    per = 100
    for i in range(1, MAX_RELATED_MESSAGES // per + 3):
        store.append(f"day-{i:03d}", _filler(i, per), metadata=meta)
    store.append("other", [Message("user", FACT, id="x")], metadata={"user_id": "bob"})
    store.append("today", [Message("user", "hi", id="q")], metadata=meta)
    by_recency = related_sessions(store, "today", "user")
    assert "day-000" not in {s.id for s in by_recency.sessions}
    asked = "What is the wifi password at the cabin?"
    found = related_sessions(store, "today", "user", query=asked)
    ids = [s.id for s in found.sessions]
    assert ids[0] == "day-000"
    assert "other" not in ids
    assert "today" not in ids
    assert sum(len(s.messages) for s in found.sessions) < MAX_RELATED_MESSAGES
    assert any("search index" in n for n in found.notes)
    question = [Message("user", asked, id="q2")]
    again = related_sessions(store, "today", "user", query=question)
    assert again.sessions[0].id == "day-000"
    got = asyncio.run(arelated_sessions(store, "today", "user", query=asked))
    assert [s.id for s in got.sessions] == ids


def test_a_new_session_recalls_an_old_fact_and_never_another_users(
    store: BaseSessionStore,
) -> None:
    meta = {"user_id": "ann"}
    store.append("day-000", [Message("user", FACT, id="fact")], metadata=meta)
    for i in range(1, 60):
        store.append(f"day-{i:03d}", _filler(i, 100), metadata=meta)
    bob = "The wifi password at the cabin is bob-secret-9."
    store.append("bob", [Message("user", bob, id="b")], metadata={"user_id": "bob"})
    fitter = SessionFitter("new", store=store, recall_scope="user", metadata=meta)
    fitter.append([Message("user", "What is the wifi password at the cabin?", id="q")])
    window = ModelWindow("m", "m", 8192, 8192, 0, "o200k_base", "explicit")
    sent = "\n".join(m.text for m in fitter.fit(window).messages)
    assert "maple-otter-22" in sent
    assert "bob-secret-9" not in sent


@pytest.mark.redis
def test_redis_indexes_the_messages_of_a_store_of_schema_three(redis_url: str) -> None:
    store: Any = open_store(redis_url)
    store.append("s", [Message("user", FACT, id="m1")], metadata={"user_id": "ann"})
    client, prefix = store._client, store.prefix
    for key in client.scan_iter(match=f"{prefix}*"):
        if b":w:" in key or key.endswith((b":words", b":wordcounts")):
            client.delete(key)
    client.set(f"{prefix}schema", "3")
    assert store.search_messages("cabin", user_id="ann") == []
    with open_store(redis_url) as reopened:
        assert client.get(f"{prefix}schema") == b"4"
        assert [m.id for _, m in reopened.search_messages("cabin", user_id="ann")] == ["m1"]
        assert reopened.delete_session("s")
        assert list(client.scan_iter(match=f"{prefix}w:*")) == []
    store.close()


def test_sqlite_indexes_the_messages_stored_before_the_index(tmp_path: Any) -> None:
    path = tmp_path / "old.db"
    with open_store(f"sqlite:///{path}") as store:
        store.append("s", [Message("user", FACT, id="m1")], metadata={"user_id": "ann"})
    conn = sqlite3.connect(path)
    conn.executescript(
        "DROP TRIGGER message_search_add; DROP TRIGGER message_search_drop; "
        "DROP TABLE message_search; "
        "DELETE FROM schema_migrations WHERE name = '0008_message_search';"
    )
    conn.close()
    with open_store(f"sqlite:///{path}") as store:
        assert [m.id for _, m in store.search_messages("cabin", user_id="ann")] == ["m1"]


def test_sqlite_indexes_the_words_after_a_nul(tmp_path: Any) -> None:
    from session_migrator.store._sqlite_schema import MIGRATIONS

    path = tmp_path / "nul.db"
    url = f"sqlite:///{path}"
    nul = Message("user", "a kayak \\u0000 then \x00 a zebra", id="n")

    def matches(words: str) -> int:
        conn = sqlite3.connect(path)
        try:
            (n,) = conn.execute(
                "SELECT count(*) FROM message_search WHERE message_search MATCH ?", (words,)
            ).fetchone()
        finally:
            conn.close()
        return int(n)

    with open_store(url) as store:
        store.append("s", [nul], metadata={"user_id": "ann"})
        assert [m.id for _, m in store.search_messages("zebra", user_id="ann")] == ["n"]
        assert [m.id for _, m in store.search_messages("kayak", user_id="ann")] == ["n"]
        assert store.delete_messages("s", ["n"]) == 1
        assert store.search_messages("zebra kayak", user_id="ann") == []
        store.append("s", [nul])
    assert matches("zebra OR kayak") == 1
    # a store indexed before (0008: the words after a NUL left out) is indexed again
    conn = sqlite3.connect(path)
    conn.executescript(
        "DROP TRIGGER message_search_add; DROP TRIGGER message_search_drop; "
        "INSERT INTO message_search (message_search) VALUES ('delete-all'); "
        "DELETE FROM schema_migrations WHERE name = '0009_search_after_nul';"
    )
    for step in dict(MIGRATIONS)["0008_message_search"][1:]:
        assert isinstance(step, str)
        conn.execute(step)
    conn.commit()
    conn.close()
    assert matches("zebra") == 0
    assert matches("kayak") == 1
    with open_store(url) as store:
        assert [m.id for _, m in store.search_messages("zebra", user_id="ann")] == ["n"]
        assert store.delete_messages("s", ["n"]) == 1
    assert matches("zebra OR kayak") == 0


def test_load_around_reads_the_neighbours_of_the_messages_found(store: BaseSessionStore) -> None:
    store.append("s", _filler(0, 20), metadata={"user_id": "ann"})
    assert store.delete_messages("s", ["s0-m5"]) == 1  # places are counted as stored now
    got = store.load_around("s", ["s0-m3", "s0-m12", "unknown"], before=1, after=2)
    assert [m.id for m in got] == [
        "s0-m2", "s0-m3", "s0-m4", "s0-m6", "s0-m11", "s0-m12", "s0-m13", "s0-m14",
    ]  # fmt: skip
    assert got == [m for m in store.load("s") if m.id in {x.id for x in got}]
    edges = store.load_around("s", ["s0-m0", "s0-m19"], before=3, after=3)
    assert [m.id for m in edges] == ["s0-m0", "s0-m1", "s0-m2", "s0-m3", "s0-m16", "s0-m17",
                                     "s0-m18", "s0-m19"]  # fmt: skip
    assert [m.id for m in store.load_around("s", ["s0-m7"], before=0, after=0)] == ["s0-m7"]
    assert store.load_around("s", []) == []
    assert store.load_around("s", ["unknown"]) == []
    assert store.load_around("nope", ["s0-m3"]) == []
    with pytest.raises(ValueError, match="negative"):
        store.load_around("s", ["s0-m3"], before=-1)
    twin = asyncio.run(store.aload_around("s", ["s0-m3"], before=1, after=1))
    assert [m.id for m in twin] == ["s0-m2", "s0-m3", "s0-m4"]


def test_an_old_session_found_is_read_around_its_hits_only(store: BaseSessionStore) -> None:
    meta = {"user_id": "ann"}
    old = [*_filler(0, 40)]
    old[20] = Message("user", FACT, id="fact")
    old[21] = Message("assistant", "Noted: maple-otter-22 for the cabin.", id="reply")
    store.append("day-000", old, metadata=meta)
    for i in range(1, MAX_RECENT_MESSAGES // 100 + 2):  # the newer ones fill the recent read
        store.append(f"day-{i:03d}", _filler(i, 100), metadata=meta)
    store.append("today", [Message("user", "hi", id="q")], metadata=meta)
    asked = "What is the wifi password at the cabin?"
    for found in (
        related_sessions(store, "today", "user", query=asked),
        asyncio.run(arelated_sessions(store, "today", "user", query=asked)),
    ):
        first = found.sessions[0]
        assert first.id == "day-000"
        assert [m.id for m in first.messages] == [
            m.id for m in old[20 - WINDOW : 22 + WINDOW]
        ]  # (the reply is found too)
        assert first.message_count == 40
        newest = next(s for s in found.sessions if s.id != "day-000")
        assert len(newest.messages) == 100  # the recently active are read whole
        assert any("around the messages found" in n for n in found.notes)
    fitter = SessionFitter("today", store=store, recall_scope="user", metadata=meta)
    fitter.append([Message("user", asked, id="q2")])
    window = ModelWindow("m", "m", 8192, 8192, 0, "o200k_base", "explicit")
    sent = "\n".join(m.text for m in fitter.fit(window).messages)
    assert FACT in sent
    assert "Noted: maple-otter-22" in sent


def test_a_found_session_among_the_recent_is_read_whole(store: BaseSessionStore) -> None:
    meta = {"user_id": "ann"}
    store.append("day-000", [*_filler(0, 30), Message("user", FACT, id="fact")], metadata=meta)
    store.append("day-001", _filler(1, 30), metadata=meta)
    store.append("today", [Message("user", "hi", id="q")], metadata=meta)
    found = related_sessions(store, "today", "user", query="wifi password at the cabin?")
    assert [(s.id, len(s.messages)) for s in found.sessions] == [("day-000", 31), ("day-001", 30)]


def test_a_word_too_common_is_left_out_when_the_question_has_rarer_ones(
    store: BaseSessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from session_migrator.store import _redis_search, _search_sql

    monkeypatch.setattr(_search_sql, "COMMON_MESSAGES", 3)
    monkeypatch.setattr(_redis_search, "COMMON_SESSIONS", 3)
    meta = {"user_id": "ann"}
    for k in range(6):
        store.append(
            f"walk-{k}", [Message("user", f"the city walk {k}", id=f"c{k}")], metadata=meta
        )
    store.append("p", [Message("user", "my sister Priya lives in the city", id="p")], metadata=meta)
    hits = store.search_messages("Which city did my sister Priya move to?", user_id="ann")
    assert hits[0][1].id == "p"
    if not store.url.startswith("memory"):  # (the index of the others counts a word's holders)
        assert [m.id for _, m in hits] == ["p"]
    # a question of common words only is searched by them all
    assert len(store.search_messages("city walk", user_id="ann")) == 7
