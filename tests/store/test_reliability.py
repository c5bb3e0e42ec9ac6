"""Reliability: concurrent writers, writers killed mid-append, hostile ids, old schemas.

Figures (messages stored, seconds) are printed; run with ``-s`` to see them.
"""

from __future__ import annotations

import random
import re
import signal
import sqlite3
import string
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from session_migrator import Message, StoreError
from session_migrator.recall._embeddings import text_digest
from session_migrator.store import BaseSessionStore, open_store

StoreFactory = Callable[..., BaseSessionStore]

WRITER = Path(__file__).with_name("_writer.py")
WRITERS = 8
PER_WRITER = 1000


def _writer(
    url: str, session_id: str, name: str, count: int, batch: int = 1
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WRITER), url, session_id, name, str(count), str(batch)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _check_per_writer_order(messages: list[Message], names: list[str], count: int) -> None:
    by_writer: dict[str, list[str]] = {n: [] for n in names}
    for m in messages:
        by_writer[m.id.split("-")[0]].append(m.id)
    for name in names:
        assert by_writer[name] == [f"{name}-{i:05d}" for i in range(count)], name


@pytest.mark.slow
def test_eight_processes_append_to_one_sqlite_session(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    open_store(url).close()  # create the schema once, as an installed app would
    names = [f"p{i}" for i in range(WRITERS)]
    procs = [_writer(url, "shared", name, PER_WRITER) for name in names]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    started = time.perf_counter()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    results = [proc.communicate(timeout=120) for proc in procs]
    elapsed = time.perf_counter() - started
    for proc, (_, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert err == ""  # no error surfaced to any writer
    with open_store(url) as store:
        messages = store.load("shared")
        info = store.get_session("shared")
    assert len(messages) == WRITERS * PER_WRITER
    assert info is not None
    assert info.message_count == WRITERS * PER_WRITER
    _check_per_writer_order(messages, names, PER_WRITER)
    print(
        f"\nsqlite: {WRITERS} processes x {PER_WRITER} appends: {len(messages)} stored "
        f"in {elapsed:.2f} s"
    )


@pytest.mark.parametrize(
    "server",
    [
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ],
)
@pytest.mark.slow
def test_eight_threads_append_to_one_server_session(
    server: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(f"{server}_url")
    names = [f"t{i}" for i in range(WRITERS)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(WRITERS)
    with open_store(url) as store:

        def write(name: str) -> None:
            try:
                barrier.wait()
                for i in range(PER_WRITER):
                    store.append("shared", [Message("user", f"{name} {i}", id=f"{name}-{i:05d}")])
            except BaseException as exc:  # any error reaching a writer fails the test
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(n,)) for n in names]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
        assert errors == []
        messages = store.load("shared")
        info = store.get_session("shared")
    assert len(messages) == WRITERS * PER_WRITER
    assert info is not None
    assert info.message_count == WRITERS * PER_WRITER
    _check_per_writer_order(messages, names, PER_WRITER)
    print(
        f"\n{server}: {WRITERS} threads x {PER_WRITER} appends: {len(messages)} stored "
        f"in {elapsed:.2f} s"
    )


@pytest.mark.parametrize("batch", [1, 40])
def test_a_writer_killed_mid_append_loses_nothing_it_was_told_was_stored(
    tmp_path: Path, batch: int
) -> None:
    path = tmp_path / "killed.db"
    url = f"sqlite:///{path}"
    rng = random.Random(batch)
    acknowledged: dict[str, list[str]] = {}
    for round_ in range(3):
        name = f"k{round_}"
        proc = _writer(url, "victim", name, 100_000, batch)
        assert proc.stdout is not None
        assert proc.stdin is not None
        assert proc.stdout.readline().strip() == "ready"
        proc.stdin.write("go\n")
        proc.stdin.flush()
        stop_after = rng.randint(30, 150)
        acknowledged[name] = [proc.stdout.readline().strip() for _ in range(stop_after)]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stdin.close()
        assert proc.stderr is not None
        proc.stderr.close()
        assert proc.returncode == -signal.SIGKILL
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    with open_store(url) as store:
        stored = [m.id for m in store.load("victim")]
        info = store.get_session("victim")
    assert info is not None
    assert info.message_count == len(stored)
    for name, acks in acknowledged.items():
        mine = [mid for mid in stored if mid.startswith(f"{name}-")]
        assert set(acks) <= set(mine)  # every append that returned is there
        # calls are atomic and ordered: a whole number of batches, oldest first
        assert len(mine) % batch == 0
        assert mine == [f"{name}-{i:05d}" for i in range(len(mine))]
    print(
        f"\nSIGKILL (batch {batch}): {len(stored)} messages stored, "
        f"{sum(map(len, acknowledged.values()))} acknowledged calls all present"
    )


HOSTILE = [
    "../../../../etc/passwd",
    "/absolute/path",
    "a/b\\c",
    "..",
    ".",
    "with\x00nul",
    "\x00",
    "'; DROP TABLE sessions; --",
    '"; DROP TABLE sm_sessions; --',
    "' OR '1'='1",
    "%s %(x)s ? $1 :name",
    "\\",
    "\\0 \\u0000 \\\\",
    "* ? [a-z] {x}",
    "KEYS *",
    "session_migrator:sessions",
    "x" * 10_000,
    "".join(random.Random(7).choice(string.printable + "é東🙂\x00") for _ in range(10_000)),
    "é 東京 🙂 \u202e rtl \u200b zero-width",
    "lone \ud800 surrogate",
    " ",
    "\n\t\r",
]


def test_hostile_ids_are_data(
    backend: str, make_store: StoreFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    store = make_store(offload_threshold=50)
    big = "output " * 500
    for n, hostile in enumerate(HOSTILE):
        messages = [
            Message("user", f"hello {n}", id=hostile),
            Message("tool", big, tool_call_id=hostile, id=f"{hostile}#2"),
        ]
        assert (
            store.append(hostile, messages, workspace=hostile, metadata={"user_id": hostile}) == 2
        )
    for hostile in HOSTILE:
        info = store.get_session(hostile)
        assert info is not None
        assert info.id == hostile
        assert info.workspace == hostile
        assert info.message_count == 2
        assert [i.id for i in store.list_sessions(hostile)] == [hostile]
        assert [m.id for m in store.load(hostile)] == [hostile, f"{hostile}#2"]
        assert [m.id for m in store.load(hostile, after=hostile)] == [f"{hostile}#2"]
        assert store.get_offloaded(hostile, f"{hostile}#2") == big
        store.put_token_counts(hostile, hostile, {hostile: 5})
        assert store.get_token_counts(hostile, hostile, [hostile]) == {hostile: 5}
        store.put_summary(
            hostile,
            hostile,
            first_id=hostile,
            last_id=hostile,
            covered_count=1,
            model=hostile,
            strategy=hostile,
            expected_revision=0,
        )
        summary = store.get_summary(hostile)
        assert summary is not None
        assert (summary.text, summary.first_id, summary.model) == (hostile, hostile, hostile)
    assert len(store.list_sessions(None)) == len(HOSTILE)
    assert list(cwd.iterdir()) == []  # no file was created from an id
    if backend == "sqlite":
        assert sorted(p.name for p in (tmp_path / "store").iterdir()) <= [
            "sessions.db",
            "sessions.db-shm",
            "sessions.db-wal",
        ]
        assert {p.name for p in tmp_path.iterdir()} <= {"store", "cwd", "sm-home"}
    if backend == "redis":
        _assert_redis_keys_are_digests(store)
    for n, hostile in enumerate(HOSTILE):
        assert store.erase_user(hostile) == 1, n
    assert store.list_sessions(None) == []


def _assert_redis_keys_are_digests(store: BaseSessionStore) -> None:
    from session_migrator.store._redis import RedisStore

    assert isinstance(store, RedisStore)
    prefix = re.escape(store.prefix)
    pattern = re.compile(
        rf"{prefix}(schema|sessions|(ws|user):[0-9a-f]{{32}}|w:[0-9a-f]{{12}}|s:[0-9a-f]{{32}}:"
        r"(meta|order|bodies|times|offload|tokens|summary|migrations|leases|words|wordcounts"
        r"|lease:[0-9a-f]{32}))"
    )
    keys = [k.decode() for k in store._client.scan_iter(match=f"{store.prefix}*")]
    assert keys
    assert [k for k in keys if not pattern.fullmatch(k)] == []


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ids=st.lists(
        st.text(st.characters(codec=None), min_size=1, max_size=30),
        min_size=1,
        max_size=4,
        unique=True,
    )
)
def test_any_string_is_an_id_in_sqlite(tmp_path: Path, ids: list[str]) -> None:
    path = tmp_path / f"h{random.getrandbits(64)}.db"
    with open_store(f"sqlite:///{path}") as store:
        for sid in ids:
            store.append(sid, [Message("user", sid, id=sid)], workspace=sid)
        for sid in ids:
            assert [m.id for m in store.load(sid)] == [sid]
            assert [i.id for i in store.list_sessions(sid)] == [sid]
        assert sorted(i.id for i in store.list_sessions(None)) == sorted(ids)
        for sid in ids:
            assert store.delete_session(sid)
        assert store.list_sessions(None) == []


# -- schema migrations --------------------------------------------------------------------------

FIXTURES = Path(__file__).with_name("fixtures")
V1_USER = "carol\x00\\x"  # a user id that needs escaping, to check the backfill


def _v1_rows() -> list[tuple[str, tuple[object, ...]]]:
    """Rows as the first schema's store wrote them (codec JSON bodies, escaped ids)."""
    from session_migrator.store import _codec

    bodies = [_codec.message_to_json(Message("user", f"old {i}", id=f"m{i}")) for i in range(3)]
    meta = _codec.dumps({"user_id": V1_USER, "topic": "legacy"})
    rows: list[tuple[str, tuple[object, ...]]] = [
        (
            "INSERT INTO {p}sessions (id, workspace, metadata, created_at, updated_at, last_seq, "
            "message_count) VALUES (?, ?, ?, ?, ?, ?, ?)",
            ("old-session", "default", meta, 1.7e9, 1.7e9 + 5, 3, 3),
        ),
    ]
    for i, body in enumerate(bodies):
        rows.append(
            (
                "INSERT INTO {p}messages (session_id, seq, id, role, body, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                ("old-session", i + 1, f"m{i}", "user", body, 1.7e9 + i),
            )
        )
    rows.append(
        (
            "INSERT INTO {p}summaries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ("old-session", "the old part", "m0", "m1", 2, None, "trim", 4, 1.7e9),
        )
    )
    return rows


def _check_migrated(store: BaseSessionStore) -> None:
    assert [m.text for m in store.load("old-session")] == ["old 0", "old 1", "old 2"]
    summary = store.get_summary("old-session")
    assert summary is not None
    assert summary.revision == 4
    store.append("old-session", [Message("tool", "y" * 5000, tool_call_id="c", id="new")])
    assert store.get_offloaded("old-session", "new") == "y" * 5000  # the 0003 table works
    ids = [m.id for m in store.load("old-session")]
    vector = text_digest("old 0") + b"\x00" * 8  # (the digest of its text, then the numbers)
    store.put_vectors("old-session", "model-a", {ids[0]: vector})  # the 0004/0005 table works
    assert store.get_vectors("old-session", "model-a", ids) == {ids[0]: vector}
    assert [m.text for m in store.load("old-session")][:3] == ["old 0", "old 1", "old 2"]
    # the 0008 search index holds the messages stored before it
    hits = store.search_messages("old", user_id=V1_USER)
    assert sorted(m.text for _, m in hits) == ["old 0", "old 1", "old 2"]
    assert store.erase_user(V1_USER) == 1  # the 0002 column was backfilled
    assert store.search_messages("old", user_id=V1_USER) == []


def test_sqlite_schema_is_migrated_from_the_first_one(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "sqlite_0001_initial.sql").read_text())
    for sql, params in _v1_rows():
        conn.execute(sql.format(p=""), params)
    conn.commit()
    conn.close()
    stores: list[BaseSessionStore] = []
    errors: list[BaseException] = []

    def opener() -> None:  # several openers at once migrate it once
        try:
            stores.append(open_store(f"sqlite:///{path}", offload_threshold=100))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for store in stores[1:]:
        store.close()
    with stores[0] as store:
        _check_migrated(store)
    conn = sqlite3.connect(path)
    names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
    conn.close()
    assert names == [
        "0001_initial", "0002_session_user_id", "0003_offloaded_outputs", "0004_message_vectors",
        "0005_vectors_by_text", "0006_numeric_user_ids", "0007_leases", "0008_message_search",
        "0009_search_after_nul",
    ]  # fmt: skip


@pytest.mark.postgres
def test_postgres_schema_is_migrated_from_the_first_one(postgres_url: str) -> None:
    import psycopg
    from psycopg import sql

    base, _, schema = postgres_url.partition("?schema=")
    ddl = (FIXTURES / "postgres_0001_initial.sql").read_text()
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        for statement in ddl.split(";\n"):
            lines = [ln for ln in statement.splitlines() if not ln.startswith("--")]
            if "".join(lines).strip():
                conn.execute("\n".join(lines))
        for query, params in _v1_rows():
            conn.execute(query.format(p="sm_").replace("?", "%s"), params)
    with open_store(postgres_url, offload_threshold=100) as store:
        _check_migrated(store)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        names = [r[0] for r in conn.execute("SELECT name FROM sm_schema_migrations ORDER BY name")]
    assert names == [
        "0001_initial", "0002_session_user_id", "0003_offloaded_outputs", "0004_message_vectors",
        "0005_vectors_by_text", "0006_numeric_user_ids", "0007_leases", "0008_message_search",
    ]  # fmt: skip


def test_a_store_opened_while_another_connection_writes_waits_to_switch_to_wal(
    tmp_path: Path,
) -> None:
    # switching a database to WAL needs it to itself, and SQLite answers "locked" at once
    # there rather than wait: the open waits, within its busy timeout, for the writer to finish
    path = tmp_path / "old.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE t (x)")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO t VALUES (1)")
    done = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    done.start()
    try:
        store = open_store(f"sqlite:///{path}")
    finally:
        done.join()
        other.close()
    try:
        store.append("after", [Message("user", "hello", id="m1")])
        assert [m.id for m in store.load("after")] == ["m1"]
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        conn.close()
    finally:
        store.close()
    blocker = sqlite3.connect(tmp_path / "held.db", isolation_level=None)
    blocker.execute("CREATE TABLE t (x)")
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match="locked"):  # and gives up after it
            open_store(f"sqlite:///{tmp_path / 'held.db'}", busy_timeout=0.2)
    finally:
        blocker.close()


def test_short_lived_threads_leave_no_connection_open(store: BaseSessionStore) -> None:
    """A thread per call (as RunnableWithMessageHistory's sync invoke starts one to load the
    history) hands its connection back when it ends: the SQL stores hold as many connections as
    threads used them at once, not one per thread ever seen.
    """
    store.append("s", [Message("user", "hello", id="m0")])

    def call(k: int) -> None:
        store.append("s", [Message("user", f"turn {k}", id=f"m{k + 1}")])
        assert store.load("s")[-1].id == f"m{k + 1}"

    for k in range(60):
        worker = threading.Thread(target=call, args=(k,))
        worker.start()
        worker.join()
    assert len(store.load("s")) == 61
    connections = getattr(store, "_connections", None)
    if connections is not None:  # the SQL stores
        assert connections.count() <= 2  # this thread's, and one handed from thread to thread
        store.close()
        assert connections.count() == 0


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_store_dropped_without_close_closes_its_connections(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    import gc

    url = (
        f"sqlite:///{tmp_path / 'dropped.db'}"
        if backend == "sqlite"
        else str(request.getfixturevalue("postgres_url"))
    )
    store = open_store(url)
    store.append("s", [Message("user", "hello", id="m0")])
    worker = threading.Thread(target=store.load, args=("s",))
    worker.start()
    worker.join()
    held = store._connections._open  # type: ignore[attr-defined]
    connections = list(held)
    assert connections
    del store, worker
    gc.collect()
    assert held == []
    for conn in connections:
        assert conn.closed if backend == "postgres" else _closed_sqlite(conn)


def _closed_sqlite(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
    except sqlite3.ProgrammingError:
        return True
    return False
