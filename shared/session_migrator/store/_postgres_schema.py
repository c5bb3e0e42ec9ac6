"""The PostgreSQL schema as append-only, named migrations (the same names as SQLite's).

Tables are prefixed ``sm_`` so the store can share a database (or live in its own schema, see
the ``schema`` option). Indexed id columns hold :func:`~._codec.index_key` (bounded, as b-tree
entries must be); ``name`` / ``workspace_name`` beside them hold the full key when it was too
long to index (else NULL). Migrations run under a transaction-scoped advisory lock, so several
processes opening one database at once migrate it once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from session_migrator._errors import StoreError
from session_migrator.store import _codec
from session_migrator.store._backend import user_id_of
from session_migrator.store._vectors import PostgresVectors

__all__ = ["MIGRATIONS", "PostgresVectors", "migrate"]  # (its vectors table's queries too)

Step = str | Callable[[Any], None]

_0001_INITIAL: tuple[Step, ...] = (
    """CREATE TABLE sm_sessions (
        id TEXT PRIMARY KEY,
        name TEXT,
        workspace TEXT NOT NULL,
        workspace_name TEXT,
        metadata TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        last_seq BIGINT NOT NULL DEFAULT 0,
        message_count BIGINT NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX sm_sessions_by_workspace ON sm_sessions (workspace, updated_at)",
    """CREATE TABLE sm_messages (
        session_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        id TEXT NOT NULL,
        name TEXT,
        role TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (session_id, seq),
        UNIQUE (session_id, id)
    )""",
    "CREATE INDEX sm_messages_by_time ON sm_messages (created_at)",
    """CREATE TABLE sm_summaries (
        session_id TEXT PRIMARY KEY,
        text TEXT NOT NULL,
        first_id TEXT NOT NULL,
        last_id TEXT NOT NULL,
        covered_count BIGINT NOT NULL,
        model TEXT,
        strategy TEXT NOT NULL,
        revision BIGINT NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL
    )""",
    """CREATE TABLE sm_token_counts (
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        counter TEXT NOT NULL,
        tokens BIGINT NOT NULL,
        PRIMARY KEY (session_id, message_id, counter)
    )""",
    """CREATE TABLE sm_migrations (
        seq BIGSERIAL PRIMARY KEY,
        session_id TEXT NOT NULL,
        from_model TEXT,
        to_model TEXT NOT NULL,
        tokens_before BIGINT NOT NULL,
        tokens_after BIGINT NOT NULL,
        budget BIGINT NOT NULL,
        strategy TEXT NOT NULL,
        decision TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL
    )""",
    "CREATE INDEX sm_migrations_by_session ON sm_migrations (session_id, seq)",
)


def _backfill_user_ids(conn: Any) -> None:
    rows = conn.execute("SELECT id, metadata FROM sm_sessions").fetchall()
    for session_id, metadata in rows:
        user_id = user_id_of(_codec.loads(metadata))
        if user_id is not None:
            conn.execute(
                "UPDATE sm_sessions SET user_id = %s WHERE id = %s",
                (_codec.index_key(user_id), session_id),
            )


_0002_SESSION_USER_ID: tuple[Step, ...] = (
    "ALTER TABLE sm_sessions ADD COLUMN user_id TEXT",
    "CREATE INDEX sm_sessions_by_user ON sm_sessions (user_id)",
    _backfill_user_ids,
)

_0003_OFFLOADED_OUTPUTS: tuple[Step, ...] = (
    """CREATE TABLE sm_offloaded (
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, message_id)
    )""",
)

_0004_MESSAGE_VECTORS: tuple[Step, ...] = (
    # a message's vectors go with it (deleted, erased, purged, its session deleted)
    """CREATE TABLE sm_vectors (
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        model TEXT NOT NULL,
        vector BYTEA NOT NULL,
        PRIMARY KEY (session_id, message_id, model),
        FOREIGN KEY (session_id, message_id) REFERENCES sm_messages (session_id, id)
            ON DELETE CASCADE
    )""",
)

_0007_LEASES: tuple[Step, ...] = (
    # a named lease on a session (see BaseSessionStore.acquire_lease); goes with its session
    """CREATE TABLE sm_leases (
        session_id TEXT NOT NULL,
        name TEXT NOT NULL,
        owner TEXT NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (session_id, name)
    )""",
)


#: Every migration, oldest first: (name, steps). Append only.
def _index_stored(conn: Any) -> None:
    """Index the messages stored before the search index (see _search)."""
    from session_migrator.store._search import search_text

    rows = conn.execute("SELECT session_id, seq, body FROM sm_messages").fetchall()
    for session_id, seq, body in rows:
        conn.execute(
            "UPDATE sm_messages SET search = to_tsvector('english'::regconfig, %s) "
            "WHERE session_id = %s AND seq = %s",
            (search_text(body), session_id, seq),
        )


_0008_MESSAGE_SEARCH: tuple[Step, ...] = (
    # each message's text as words, written with it (_append); it goes with its row
    "ALTER TABLE sm_messages ADD COLUMN search tsvector",
    "CREATE INDEX sm_messages_search ON sm_messages USING GIN (search)",
    _index_stored,
)

MIGRATIONS: tuple[tuple[str, tuple[Step, ...]], ...] = (
    ("0001_initial", _0001_INITIAL),
    ("0002_session_user_id", _0002_SESSION_USER_ID),
    ("0003_offloaded_outputs", _0003_OFFLOADED_OUTPUTS),
    ("0004_message_vectors", _0004_MESSAGE_VECTORS),
    # a vector now starts with the digest of the text it was made from: those kept before are
    # never served again, and go (embedded again as fits need them)
    ("0005_vectors_by_text", ("DELETE FROM sm_vectors",)),
    # (sessions whose metadata user_id is an integer, stored before integers were matched)
    ("0006_numeric_user_ids", (_backfill_user_ids,)),
    ("0007_leases", _0007_LEASES),
    ("0008_message_search", _0008_MESSAGE_SEARCH),
)

_LOCK_KEY = 0x5E55_104D  # pg_advisory_xact_lock key for schema changes


def _applied(conn: Any) -> set[str]:
    exists = conn.execute("SELECT to_regclass('sm_schema_migrations')").fetchone()[0]
    if exists is None:
        return set()
    return {r[0] for r in conn.execute("SELECT name FROM sm_schema_migrations").fetchall()}


def migrate(conn: Any, where: str) -> list[str]:
    """Apply the missing migrations on a psycopg connection; returns the names applied."""
    known = {name for name, _ in MIGRATIONS}
    applied = _applied(conn)
    if applied == known:
        return []
    done: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS sm_schema_migrations "
            "(name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
        )
        applied = _applied(conn)
        unknown = sorted(applied - known)
        if unknown:
            raise StoreError(
                f"{where} was written by a newer session-migrator (schema migration "
                f"{unknown[-1]!r} is unknown to this version); upgrade session-migrator"
            )
        for name, steps in MIGRATIONS:
            if name in applied:
                continue
            for step in steps:
                if isinstance(step, str):
                    conn.execute(step)
                else:
                    step(conn)
            conn.execute(
                "INSERT INTO sm_schema_migrations (name, applied_at) VALUES (%s, %s)",
                (name, time.time()),
            )
            done.append(name)
    return done
