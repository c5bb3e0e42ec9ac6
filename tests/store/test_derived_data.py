"""What is derived from a message follows it, on every backend (issue 41).

A vector is kept only for the text it was made from and goes with its message; an erasure
leaves nothing (integer user ids included); NaN and infinite vectors are never kept; one
model's vectors can be deleted; Redis refuses a store of another schema version; the SQLite
vector table of the shipped ``0004`` is made a rowid table by ``0005``; PostgreSQL vector
writes racing deletes raise nothing into the fit. The stores are read raw (``_raw``).
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from session_migrator import (
    Embeddings,
    Message,
    ModelWindow,
    SessionFitter,
    StoreError,
    counter_for,
)
from session_migrator.recall._embeddings import embedded_text, text_digest
from session_migrator.store import BaseSessionStore, open_store
from tests.store._raw import raw_vectors, traces

StoreFactory = Callable[..., BaseSessionStore]


class Texts:
    """A deterministic embedder that records what it embeds; ``bad`` texts get ``bad_value``."""

    def __init__(self, bad: str = "\x00none", bad_value: float = math.nan, dims: int = 4) -> None:
        self.texts: list[str] = []
        self.bad, self.bad_value, self.dims = bad, bad_value, dims

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += texts
        return [self.vector(t) for t in texts]

    def vector(self, text: str) -> list[float]:
        if self.bad in text:
            return [self.bad_value] * self.dims
        seed = text_digest(text)
        return [1.0 + seed[k] / 255 for k in range(self.dims)]


def _history(tag: str = "", n: int = 12) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out += [
            Message("user", f"Turn {i} {tag}: the dog and the car. " + "words " * 30, id=f"u{i}"),
            Message("assistant", f"Reply {i} {tag} about a boat. " + "more " * 30, id=f"a{i}"),
        ]
    return out


def _window(messages: Sequence[Message]) -> ModelWindow:
    budget = counter_for("o200k_base").count_messages(list(messages)) // 3
    return ModelWindow("small", "example", budget, budget, 0, "o200k_base", "explicit")


def _fit(fitter: SessionFitter, question: str = "Which car?") -> Any:
    fitter.append([Message("user", question)])
    return fitter.fit(_window(_history()))


def _assert_every_vector_is_of_its_text(store: BaseSessionStore) -> None:
    for (sid, mid, _model), raw in raw_vectors(store).items():
        held = {m.id: m for m in store.load(sid)}
        assert mid in held, (sid, mid)  # no vector without its message
        assert raw[:16] == text_digest(embedded_text(held[mid])), (sid, mid)  # of its text


# -- 1: integer user ids ---------------------------------------------------------------------


def test_an_integer_user_id_is_erased_as_a_number_and_as_its_string(
    store: BaseSessionStore,
) -> None:
    for n, sid in enumerate(("a", "b", "c")):
        store.append(sid, [Message("user", f"hi {n}", id="m")], metadata={"user_id": 42})
    store.append("d", [Message("user", "other", id="m")], metadata={"user_id": 7})
    store.set_metadata("c", {"user_id": 43})
    assert store.erase_user(42) == 2
    assert store.erase_user("43") == 1
    assert [s.id for s in store.list_sessions(None)] == ["d"]
    for sid in ("a", "b", "c"):
        assert traces(store, sid) == []


@pytest.mark.parametrize(
    "backend",
    [
        "sqlite",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ],
)  # (memory:// keeps nothing from an earlier version)
def test_integer_user_ids_stored_before_are_erasable_after_the_upgrade(
    make_store: StoreFactory, backend: str
) -> None:
    store = make_store()
    store.append("old", [Message("user", "hi", id="m")], metadata={"user_id": 42})
    _as_written_before(store, backend, "old")
    store.close()
    reopened = make_store()
    assert reopened.erase_user(42) == 1
    assert reopened.list_sessions(None) == []


def _as_written_before(store: BaseSessionStore, backend: str, session_id: str) -> None:
    """Make the store's data what an earlier version left: no user index for integer ids."""
    if backend == "sqlite":
        conn = sqlite3.connect(store.path)  # type: ignore[attr-defined]
        conn.execute("UPDATE sessions SET user_id = NULL")
        conn.execute("DELETE FROM schema_migrations WHERE name = '0006_numeric_user_ids'")
        conn.commit()
        conn.close()
    elif backend == "postgres":
        with store._tx() as conn:  # type: ignore[attr-defined]
            conn.execute("UPDATE sm_sessions SET user_id = NULL")
            conn.execute("DELETE FROM sm_schema_migrations WHERE name = '0006_numeric_user_ids'")
    else:
        client, prefix = store._client, store.prefix  # type: ignore[attr-defined]
        digest = store._keys(session_id).digest  # type: ignore[attr-defined]
        client.hset(f"{prefix}s:{digest}:meta", "user_id", "")
        for key in client.scan_iter(match=f"{prefix}user:*"):
            client.delete(key)
        client.delete(f"{prefix}schema")


# -- 4: a vector is of the text it was made from ---------------------------------------------


def test_a_message_stored_again_with_other_text_never_gets_the_old_vector(
    store: BaseSessionStore,
) -> None:
    model = Texts()
    fitter = SessionFitter("s", store=store, strategy="recall", embeddings=Embeddings(model))
    fitter.append(_history())
    assert _fit(fitter).report.fallbacks == []
    assert raw_vectors(store)
    # another writer replaces u1 (delete, then the id again with other text)
    store.delete_messages("s", ["u1"])
    store.append("s", [Message("user", "Turn 1 again: about a horse now.", id="u1")])
    # a stale vector for u1 (as a long-lived fitter or another process would write) is refused
    old = next(m for m in _history() if m.id == "u1")
    store.put_vectors(
        "s", Embeddings(model).key, {"u1": text_digest(embedded_text(old)) + b"\0" * 16}
    )
    _assert_every_vector_is_of_its_text(store)
    # the long-lived fitter and a new one both embed the new text, never serve the old vector
    for again in (
        fitter,
        SessionFitter("s", store=store, strategy="recall", embeddings=Embeddings(model)),
    ):
        model.texts.clear()
        _fit(again, "Which horse?")
        held = {m.id: m for m in store.load("s")}
        if any("horse" in t for t in model.texts) or again is not fitter:
            _assert_every_vector_is_of_its_text(store)
        assert not any(t.startswith("Turn 1 :") for t in model.texts)
    _assert_every_vector_is_of_its_text(store)
    assert held["u1"].text.startswith("Turn 1 again")


def test_a_long_lived_fitter_does_not_keep_a_stale_row() -> None:
    from session_migrator.recall._embeddings import StoredVectors, as_embeddings
    from session_migrator.recall._hybrid import HybridRecall

    model = Texts()
    held = StoredVectors(as_embeddings(model), None, None)
    first = Message("user", "about a dog", id="m1")
    rows = HybridRecall(held).rows([first])
    assert rows is not None
    second = Message("user", "about a car, not a dog", id="m1")  # the id again, other text
    again = HybridRecall(held).rows([second])
    assert again is not None
    assert int(again[0]) != int(rows[0])
    assert held.table is not None
    vector = np.asarray(model.vector(embedded_text(second)), dtype=np.float32)
    assert np.allclose(held.table[int(again[0])], vector / np.linalg.norm(vector))


# -- 6: memory:// lets go of a deleted or erased session -------------------------------------


def test_memory_drops_the_vectors_and_text_of_deleted_and_erased_sessions() -> None:
    store = open_store("memory://")
    model = Texts()
    for sid in ("gone", "erased", "kept"):
        fitter = SessionFitter(sid, store=store, strategy="recall", embeddings=Embeddings(model))
        store.append(sid, _history(sid), metadata={"user_id": f"user-{sid}"})
        _fit(fitter)
    assert {k[0] for k in raw_vectors(store)} == {"gone", "erased", "kept"}
    store.delete_messages("kept", ["u0"])
    assert ("kept", "u0") not in {k[:2] for k in raw_vectors(store)}
    store.delete_session("gone")
    assert store.erase_user("user-erased") == 1
    assert {k[0] for k in raw_vectors(store)} == {"kept"}
    assert traces(store, "gone") == traces(store, "erased") == []


# -- 7: NaN and infinite vectors -------------------------------------------------------------


@pytest.mark.parametrize("bad_value", [math.nan, math.inf])
def test_a_nan_or_infinite_vector_is_never_kept_and_recall_falls_back(
    store: BaseSessionStore, bad_value: float
) -> None:
    model = Texts(bad="Turn 3", bad_value=bad_value)
    fitter = SessionFitter("s", store=store, strategy="recall", embeddings=Embeddings(model))
    fitter.append(_history())
    result = _fit(fitter)
    assert any("NaN or an infinite number" in f for f in result.report.fallbacks)
    assert any("bm25 alone" in f for f in result.report.fallbacks)
    for raw in raw_vectors(store).values():
        assert np.isfinite(np.frombuffer(raw, dtype=np.float32, offset=16)).all()


def test_a_stored_nan_vector_is_not_trusted(store: BaseSessionStore) -> None:
    model = Texts()
    store.append("s", _history())
    key = Embeddings(model).key
    message = store.load("s")[0]
    nan = text_digest(embedded_text(message)) + np.full(4, np.nan, np.float32).tobytes()
    store.put_vectors("s", key, {message.id: nan})  # (as an older version kept it)
    fitter = SessionFitter("s", store=store, strategy="recall", embeddings=Embeddings(model))
    result = _fit(fitter)
    assert result.report.fallbacks == []
    assert embedded_text(message) in model.texts  # made again, not read
    stored = store.get_vectors("s", key, [message.id])[message.id]
    assert np.isfinite(np.frombuffer(stored, dtype=np.float32, offset=16)).all()


# -- 8: one model's vectors, and vectors of another size -------------------------------------


def test_one_models_vectors_are_deleted_and_a_wrong_size_is_made_again(
    store: BaseSessionStore,
) -> None:
    old, new = Texts(dims=4), Texts(dims=6)
    for sid in ("s", "t"):
        fitter = SessionFitter(
            sid, store=store, strategy="recall", embeddings=Embeddings(old, name="m")
        )
        fitter.append(_history(sid))
        _fit(fitter)
    before = raw_vectors(store)
    assert {k[2] for k in before} == {"m"}
    # the same name, another size: the stored vectors are made again, the fit ranks densely
    fitter = SessionFitter(
        "s", store=store, strategy="recall", embeddings=Embeddings(new, name="m")
    )
    result = _fit(fitter, "Which boat?")
    assert result.report.fallbacks == []
    sizes = {len(raw) for (sid, _, _), raw in raw_vectors(store).items() if sid == "s"}
    assert 16 + 6 * 4 in sizes
    other = SessionFitter(
        "u", store=store, strategy="recall", embeddings=Embeddings(old, name="other")
    )
    other.append(_history("u"))
    _fit(other)
    n = sum(1 for k in raw_vectors(store) if k[2] == "m")
    assert store.delete_vectors("m") == n > 0
    assert {k[2] for k in raw_vectors(store)} == {"other"}
    assert store.delete_vectors("m") == 0


# -- 3: Redis's schema version ---------------------------------------------------------------


@pytest.mark.redis
def test_redis_refuses_a_store_of_another_schema_version(redis_url: str) -> None:
    import redis as redis_lib

    store = open_store(redis_url)
    store.append("s", [Message("user", "hello", id="m1")])
    prefix = store.prefix  # type: ignore[attr-defined]
    client = redis_lib.Redis.from_url(redis_url.partition("?")[0])
    try:
        assert client.get(f"{prefix}schema") == b"4"
        client.set(f"{prefix}schema", "5")  # a newer version took the store over
        with pytest.raises(StoreError, match=r"schema version 5.*writes version 4"):
            store.append("s", [Message("user", "again", id="m2")])
        model_key = "k"
        with pytest.raises(StoreError, match="schema version"):
            store.put_vectors("s", model_key, {"m1": text_digest("hello") + b"\0" * 8})
        with pytest.raises(StoreError, match="newer session-migrator"):
            open_store(redis_url)
        assert [m.id for m in store.load("s")] == ["m1"]  # reads still answer
    finally:
        client.close()
        store.close()


@pytest.mark.redis
def test_redis_upgrades_a_store_of_version_one_in_place(redis_url: str) -> None:
    store = open_store(redis_url)
    store.append("s", [Message("user", "hello", id="m1")], metadata={"user_id": 5})
    client, prefix = store._client, store.prefix  # type: ignore[attr-defined]
    digest = store._keys("s").digest  # type: ignore[attr-defined]
    client.hset(f"{prefix}s:{digest}:vectors", "m1", '{"k": "AAAAAA=="}')  # (version 1's)
    _as_written_before(store, "redis", "s")
    store.close()
    with open_store(redis_url) as reopened:
        assert client.get(f"{prefix}schema") == b"4"
        assert not client.exists(f"{prefix}s:{digest}:vectors")
        assert reopened.erase_user(5) == 1


@pytest.mark.redis
def test_redis_upgrades_a_store_of_version_two_in_place(redis_url: str) -> None:
    # version 3 adds the leases (new keys): a store of version 2 opens as it is, at version 3,
    # and a process still writing version 2 is refused from then on
    store = open_store(redis_url)
    store.append("s", [Message("user", "hello", id="m1")])
    client, prefix = store._client, store.prefix  # type: ignore[attr-defined]
    client.set(f"{prefix}schema", "2")
    with pytest.raises(StoreError, match=r"schema version 2.*writes version 4"):
        store.append("s", [Message("user", "again", id="m2")])
    with open_store(redis_url) as reopened:
        assert client.get(f"{prefix}schema") == b"4"
        assert [m.id for m in reopened.load("s")] == ["m1"]
        assert reopened.acquire_lease("s", "compaction", "a", 30)
        assert reopened.delete_session("s")
        assert list(client.scan_iter(match=f"{prefix}s:*")) == []
    store.close()


# -- 9: the SQLite vector table of the shipped 0004 ------------------------------------------


def test_sqlite_makes_the_shipped_0004_vector_table_a_rowid_table(tmp_path: Path) -> None:
    from session_migrator.store._sqlite_schema import MIGRATIONS, _apply

    path = tmp_path / "shipped.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    shipped = [m for m in MIGRATIONS if m[0] < "0005"]
    assert [n for n, _ in shipped][-1] == "0004_message_vectors"
    _apply(conn, shipped)
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'vectors'").fetchone()[0]
    assert "WITHOUT ROWID" in sql  # (0004 as it shipped)
    conn.close()
    with open_store(f"sqlite:///{path}") as store:
        store.append("s", [Message("user", "hello", id="m1")])
        vector = text_digest("hello") + b"\0" * 8
        store.put_vectors("s", "k", {"m1": vector})
        assert store.get_vectors("s", "k", ["m1"]) == {"m1": vector}
        conn = sqlite3.connect(path)
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'vectors'").fetchone()[0]
        assert "WITHOUT ROWID" not in sql
        store.delete_messages("s", ["m1"])  # the trigger still takes the vector with it
        assert conn.execute("SELECT count(*) FROM vectors").fetchone() == (0,)
        conn.close()


# -- 10: PostgreSQL vector writes racing deletes ---------------------------------------------


@pytest.mark.postgres
def test_postgres_vector_writes_racing_deletes_raise_nothing(postgres_url: str) -> None:
    stores = [open_store(postgres_url) for _ in range(4)]
    errors: list[BaseException] = []
    texts = [f"message {i} " + "x" * 20 for i in range(40)]

    def vectors(ids: list[int]) -> dict[str, bytes]:
        return {f"m{i}": text_digest(texts[i]) + np.ones(4, np.float32).tobytes() for i in ids}

    def writer(store: BaseSessionStore, order: list[int]) -> None:
        try:
            for _ in range(15):
                store.put_vectors("s", "k", vectors(order))
        except BaseException as exc:
            errors.append(exc)

    def deleter(store: BaseSessionStore) -> None:
        try:
            for _ in range(15):
                store.delete_messages("s", [f"m{i}" for i in range(0, 40, 3)])
                store.append("s", [Message("user", texts[i], id=f"m{i}") for i in range(0, 40, 3)])
        except BaseException as exc:
            errors.append(exc)

    try:
        stores[0].append("s", [Message("user", t, id=f"m{i}") for i, t in enumerate(texts)])
        ids = list(range(40))
        threads = [
            threading.Thread(target=writer, args=(stores[1], ids)),
            threading.Thread(target=writer, args=(stores[2], ids[::-1])),
            threading.Thread(target=deleter, args=(stores[3],)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        _assert_every_vector_is_of_its_text(stores[0])
    finally:
        for store in stores:
            store.close()
