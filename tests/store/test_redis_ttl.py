"""A Redis session TTL (issue 43): ``?ttl=`` in the URL or ``ttl=`` to ``open_store`` sets an
expiry on every key of a session, refreshed on every read or write of it; an expired session
vanishes whole (its vectors, summary and log too, and its entries in the session, workspace and
user indexes). The other backends refuse ``ttl`` and point to ``purge_older_than``.

Against the real server, under a key prefix of the test's own (``redis_url``), with TTLs of a
second or two."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from session_migrator import Message, StoreError
from session_migrator.recall._embeddings import text_digest
from session_migrator.store import BaseSessionStore, open_store, related_sessions, user_messages

pytestmark = pytest.mark.redis


def _vec(text: str) -> bytes:
    return text_digest(text) + np.array([1.0, 2.0], dtype=np.float32).tobytes()


@pytest.fixture
def raw(redis_url: str) -> Iterator[object]:
    """A plain client on the test's server, and its key prefix."""
    import redis

    from tests.conftest import REDIS_URL

    client = redis.Redis.from_url(REDIS_URL)
    yield client
    client.close()


def _prefix(redis_url: str) -> str:
    return redis_url.split("prefix=", 1)[1].split("&", 1)[0]


def _session_keys(client: object, prefix: str) -> dict[str, int]:
    """Every key of a session under ``prefix`` (``P s:D:*``), with its PTTL."""
    keys = list(client.scan_iter(match=f"{prefix}s:*", count=1000))  # type: ignore[attr-defined]
    return {k.decode(): int(client.pttl(k)) for k in keys}  # type: ignore[attr-defined]


def _fill(store: BaseSessionStore, sid: str = "trip", user: str = "ann") -> None:
    store.append(
        sid,
        [Message("user", "Book the Sakura", id="m1"), Message("assistant", "Booked.", id="m2")],
        workspace="travel",
        metadata={"user_id": user},
    )
    store.put_summary(
        sid,
        "booked a hotel",
        first_id="m1",
        last_id="m2",
        covered_count=2,
        model="gpt-4o",
        strategy="auto",
        expected_revision=0,
    )
    store.put_token_counts(sid, "o200k_base", {"m1": 5, "m2": 3})
    store.put_vectors(sid, "model-a", {"m1": _vec("Book the Sakura")})
    from session_migrator.store import MigrationRecord

    store.log_migration(
        MigrationRecord(sid, None, "gpt-4o", 10, 10, 100, "auto", "fits")  # type: ignore[arg-type]
    )


def _gone(store: BaseSessionStore, sid: str = "trip", user: str = "ann") -> None:
    assert store.get_session(sid) is None
    assert store.load(sid) == []
    assert store.get_summary(sid) is None
    assert store.get_vectors(sid, "model-a", ["m1"]) == {}
    assert store.get_token_counts(sid, "o200k_base", ["m1"]) == {}
    assert store.migrations(sid) == []
    assert [s.id for s in store.list_sessions("travel")] == []
    assert [s.id for s in store.list_sessions(None)] == []
    assert user_messages(store, user) == []
    assert store.erase_user(user) == 0


def test_a_ttl_in_the_url_expires_every_key_of_a_session_and_its_index_entries(
    redis_url: str, raw: object
) -> None:
    prefix = _prefix(redis_url)
    with open_store(f"{redis_url}&ttl=1") as store:
        assert store.ttl == 1.0  # type: ignore[attr-defined]
        assert "ttl=1" in store.url
        _fill(store)
        keys = _session_keys(raw, prefix)
        names = {k.rsplit(":", 1)[1] for k in keys}
        assert {"meta", "order", "bodies", "times", "tokens", "summary", "migrations"} <= names
        assert "vectors" in names
        assert all(0 < ttl <= 1000 for ttl in keys.values()), keys  # (none without an expiry)
        time.sleep(1.3)
        assert _session_keys(raw, prefix) == {}  # every key went, vectors and summary too
        _gone(store)
        # the shared indexes dropped the entry when read
        for index in (f"{prefix}sessions", *raw.scan_iter(match=f"{prefix}ws:*")):  # type: ignore[attr-defined]
            assert raw.scard(index) == 0  # type: ignore[attr-defined]
        # a session of the same id starts afresh
        store.append("trip", [Message("user", "new", id="n1")], workspace="travel")
        assert [m.id for m in store.load("trip")] == ["n1"]
        assert store.get_summary("trip") is None


def test_every_access_refreshes_the_expiry(redis_url: str, raw: object) -> None:
    prefix = _prefix(redis_url)
    with open_store(redis_url, ttl=timedelta(seconds=2)) as store:
        _fill(store)
        for read in (
            lambda: store.load("trip"),
            lambda: store.get_session("trip"),
            lambda: store.get_summary("trip"),
            lambda: store.get_vectors("trip", "model-a", ["m1"]),
        ):
            time.sleep(1.1)
            read()  # (a read: the 2 s start again)
            ttls = _session_keys(raw, prefix).values()
            assert min(ttls) > 1500, ttls
        # 4.4 s after the session was written, it is still whole
        assert [m.id for m in store.load("trip")] == ["m1", "m2"]
        assert store.get_vectors("trip", "model-a", ["m1"])
        time.sleep(1.1)
        store.append("trip", [Message("user", "And a car?", id="m3")])  # a write refreshes too
        time.sleep(1.1)
        assert [s.id for s in store.list_sessions("travel")] == ["trip"]
        # listing is not an access: with nothing else, the session expires
        time.sleep(0.5)
        assert [s.id for s in store.list_sessions("travel")] == ["trip"]
        time.sleep(0.6)
        _gone(store)


def test_the_ttl_as_seconds_in_the_constructor_and_without_one_nothing_expires(
    redis_url: str, raw: object
) -> None:
    prefix = _prefix(redis_url)
    with open_store(redis_url, ttl=3600) as store:
        assert store.ttl == 3600  # type: ignore[attr-defined]
        _fill(store)
        assert all(3_590_000 < t <= 3_600_000 for t in _session_keys(raw, prefix).values())
    with open_store(redis_url) as plain:
        plain.append("other", [Message("user", "kept", id="k1")])
        keys = _session_keys(raw, prefix)
        other = {k: t for k, t in keys.items() if t == -1}
        assert other  # (the plain store's session has no expiry)
        assert plain.ttl is None  # type: ignore[attr-defined]


def test_expired_sessions_leave_a_users_other_sessions_and_recall(redis_url: str) -> None:
    with open_store(f"{redis_url}&ttl=1") as short, open_store(redis_url) as keep:
        keep.append("today", [Message("user", "hi", id="t1")], metadata={"user_id": "ann"})
        _fill(short, "trip")
        assert {s.id for s in related_sessions(keep, "today", "user").sessions} == {"trip"}
        assert [sid for sid, _ in keep.search_messages("sakura", user_id="ann")] == ["trip"]
        time.sleep(1.3)
        assert related_sessions(keep, "today", "user").sessions == ()
        # its index entries: no hit, and the words searched no longer name it
        assert keep.search_messages("sakura", user_id="ann") == []
        assert keep.search_messages("sakura", workspace="travel") == []
        prefix = keep.prefix  # type: ignore[attr-defined]
        from session_migrator.store._redis_search import word_key

        raw = keep._client  # type: ignore[attr-defined]
        assert raw.smembers(f"{prefix}w:{word_key('sakura')}") == set()
        assert [sid for sid, _ in user_messages(keep, "ann")] == ["today"]
        assert keep.erase_user("ann") == 1


@pytest.mark.parametrize("ttl", [0, -1, "soon", float("inf"), True])
def test_a_wrong_ttl_is_refused(redis_url: str, ttl: object) -> None:
    with pytest.raises(StoreError, match="ttl must be"):
        open_store(redis_url, ttl=ttl)
    with pytest.raises(StoreError, match="ttl must be"):
        open_store(f"{redis_url}&ttl={ttl}")


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_the_other_backends_refuse_a_ttl_and_point_to_purge_older_than(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = {
        "memory": "memory://",
        "sqlite": f"sqlite:///{tmp_path / 'sessions.db'}",
    }.get(kind) or str(request.getfixturevalue("postgres_url"))
    with pytest.raises(StoreError, match=r"purge_older_than"):
        open_store(url, ttl=3600)
    with pytest.raises(StoreError, match=r"purge_older_than"):
        open_store(url, ttl=timedelta(hours=1))
    joined = f"{url}{'&' if '?' in url else '?'}ttl=3600"
    with pytest.raises(StoreError, match=r"purge_older_than"):
        open_store(joined)
    assert not (tmp_path / "sessions.db").exists()


def test_an_expired_sessions_entries_leave_the_search_index(
    redis_url: str, raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = _prefix(redis_url)
    with open_store(f"{redis_url}&ttl=1") as store:
        meta = {"user_id": "ann"}
        store.append("old", [Message("user", "the lighthouse keeper rows", id="m1")], metadata=meta)
        store.append("kept", [Message("user", "a lighthouse", id="k1")], metadata=meta)
        digest = store._keys("old").digest  # type: ignore[attr-defined]
        word_sets = list(raw.scan_iter(match=f"{prefix}w:*"))
        assert len(word_sets) == 3  # lighthouse, keeper, rows
        assert all(raw.sismember(k, digest) for k in word_sets)
        time.sleep(0.7)
        store.get_session("kept")  # (an access: "kept" lives on, "old" expires)
        time.sleep(0.6)
        assert store.get_session("old") is None
        # every write sweeps a step of the index; a whole pass, and no entry of "old" is left
        steps: list[bool] = []
        sweep = store.sweep_index  # type: ignore[attr-defined]
        monkeypatch.setattr(store, "sweep_index", lambda: steps.append(sweep()) or steps[-1])
        store.append("kept", [Message("user", "another lighthouse", id="k2")])
        assert len(steps) == 1  # (the write swept a step)
        while not store.sweep_index():  # type: ignore[attr-defined]
            pass
        assert not any(raw.sismember(k, digest) for k in raw.scan_iter(match=f"{prefix}w:*"))
        assert [s for s, _ in store.search_messages("lighthouse", user_id="ann")] == ["kept"] * 2
        assert store.search_messages("keeper rows", user_id="ann") == []
