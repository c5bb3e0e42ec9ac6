"""The store contract for bad ids and failing backends, run against every backend: an id that is
not a non-empty string is an InvalidIdError, and whatever the driver raises is a StoreError."""

from __future__ import annotations

import socket
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from session_migrator import (
    InvalidIdError,
    Message,
    SessionMigratorError,
    StoreError,
    messages_from_openai,
)
from session_migrator.store import BaseSessionStore, MigrationRecord

Call = Callable[[BaseSessionStore], Any]

BAD_IDS: list[tuple[str, Call]] = [
    ("get_session(None)", lambda s: s.get_session(None)),  # type: ignore[arg-type]
    ("list_sessions(123)", lambda s: s.list_sessions(123)),  # type: ignore[arg-type]
    ("append(None)", lambda s: s.append(None, [Message("user", "x")])),  # type: ignore[arg-type]
    ("append(workspace=3)", lambda s: s.append("s", [], workspace=3)),  # type: ignore[arg-type]
    ("append(key='')", lambda s: s.append("s", [], idempotency_key="")),
    ("load(5)", lambda s: s.load(5)),  # type: ignore[arg-type]
    ("load_since(b'')", lambda s: s.load_since(b"s", None)),  # type: ignore[arg-type]
    ("delete_session('')", lambda s: s.delete_session("")),
    ("delete_messages(None)", lambda s: s.delete_messages(None, ["m"])),  # type: ignore[arg-type]
    ("erase_workspace(None)", lambda s: s.erase_workspace(None)),  # type: ignore[arg-type]
    ("erase_user(1.5)", lambda s: s.erase_user(1.5)),  # type: ignore[arg-type]
    ("erase_user(True)", lambda s: s.erase_user(True)),
    ("get_summary(None)", lambda s: s.get_summary(None)),  # type: ignore[arg-type]
    ("migrations([])", lambda s: s.migrations([])),  # type: ignore[arg-type]
    ("get_token_counts(None)", lambda s: s.get_token_counts(None, "c", ["m"])),  # type: ignore[arg-type]
    ("get_offloaded(None)", lambda s: s.get_offloaded(None, "m")),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("call", [c for _, c in BAD_IDS], ids=[n for n, _ in BAD_IDS])
def test_an_id_that_is_not_a_string_is_refused(store: BaseSessionStore, call: Call) -> None:
    store.append("s", [Message("user", "kept", id="m1")])
    with pytest.raises(InvalidIdError) as caught:
        call(store)
    assert isinstance(caught.value, StoreError | SessionMigratorError | ValueError)
    assert "must be a non-empty string" in str(caught.value)
    assert [m.text for m in store.load("s")] == ["kept"]  # nothing lost


def test_async_twins_refuse_bad_ids_too(store: BaseSessionStore) -> None:
    import asyncio

    with pytest.raises(InvalidIdError, match="session_id"):
        asyncio.run(store.aget_session(None))  # type: ignore[arg-type]
    assert store.list_sessions(None) == []  # None: every workspace


#: Every method, with arguments that reach the backend.
METHODS: list[tuple[str, Call]] = [
    ("append", lambda s: s.append("s", messages_from_openai([{"role": "user", "content": "x"}]))),
    ("load", lambda s: s.load("s")),
    ("load_since", lambda s: s.load_since("s", None)),
    ("get_session", lambda s: s.get_session("s")),
    ("set_metadata", lambda s: s.set_metadata("s", {"a": 1})),
    ("list_sessions", lambda s: s.list_sessions()),
    ("list_sessions(None)", lambda s: s.list_sessions(None)),
    ("delete_messages", lambda s: s.delete_messages("s", ["m1"])),
    ("delete_range", lambda s: s.delete_range("s", "m1", "m1")),
    ("delete_by_tool", lambda s: s.delete_by_tool("s", "t")),
    ("delete_session", lambda s: s.delete_session("s")),
    ("erase_workspace", lambda s: s.erase_workspace("default")),
    ("erase_user", lambda s: s.erase_user("u")),
    ("purge_older_than", lambda s: s.purge_older_than(0)),
    ("get_summary", lambda s: s.get_summary("s")),
    (
        "put_summary",
        lambda s: s.put_summary(
            "s",
            "t",
            first_id="m1",
            last_id="m1",
            covered_count=1,
            model=None,
            strategy="x",
            expected_revision=0,
        ),
    ),
    ("get_token_counts", lambda s: s.get_token_counts("s", "c", ["m1"])),
    ("put_token_counts", lambda s: s.put_token_counts("s", "c", {"m1": 3})),
    (
        "log_migration",
        lambda s: s.log_migration(MigrationRecord("s", None, "gpt-4o", 1, 1, 9, "trim", "fits")),
    ),
    ("migrations", lambda s: s.migrations("s")),
    ("get_offloaded", lambda s: s.get_offloaded("s", "m1")),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _break(backend: str, store: Any) -> None:
    """Make every later call of ``store`` fail inside its driver."""
    if backend == "sqlite":
        with sqlite3.connect(store.path) as conn:
            for table in ("messages", "sessions", "summaries", "token_counts", "migrations"):
                conn.execute(f"DROP TABLE {table}")
            conn.execute("DROP TABLE offloaded")
    elif backend == "redis":  # the server goes away
        import redis

        store._client.connection_pool.disconnect()
        store._client.connection_pool = redis.ConnectionPool(port=_free_port())
    elif backend == "postgres":
        from psycopg import sql

        conn = store._conn()
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(store.schema)))


DRIVEN = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("redis", marks=pytest.mark.redis, id="redis"),
    pytest.param("postgres", marks=pytest.mark.postgres, id="postgres"),
]  # (memory:// has no driver that can fail)


@pytest.mark.parametrize("backend", DRIVEN)
@pytest.mark.parametrize("call", [c for _, c in METHODS], ids=[n for n, _ in METHODS])
def test_a_failing_backend_is_a_store_error(
    backend: str, store: BaseSessionStore, call: Call
) -> None:
    store.append("s", [Message("user", "x", id="m1")], metadata={"user_id": "u"})
    _break(backend, store)
    with pytest.raises(StoreError) as caught:
        call(store)
    assert not isinstance(caught.value, InvalidIdError)
    assert caught.value.__cause__ is not None  # the driver's error, kept
    assert store.url.split("?")[0] in str(caught.value)
