"""The SQLite schema as append-only, named migrations.

Rules: a migration, once released, is never edited; a change is a new migration appended to
:data:`MIGRATIONS`. ``schema_migrations`` records which ones ran. Opening a store applies the
missing ones, in order, in one ``BEGIN IMMEDIATE`` transaction (so two processes opening an old
database at once migrate it once). A database that names a migration this version does not
know was written by a newer version and is refused.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence

from session_migrator._errors import StoreError
from session_migrator.store import _codec
from session_migrator.store._backend import user_id_of

__all__ = ["MIGRATIONS", "migrate"]

Step = str | Callable[[sqlite3.Connection], None]

_0001_INITIAL: tuple[Step, ...] = (
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        workspace TEXT NOT NULL,
        metadata TEXT NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        last_seq INTEGER NOT NULL DEFAULT 0,
        message_count INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX sessions_by_workspace ON sessions (workspace, updated_at)",
    """CREATE TABLE messages (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        role TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (session_id, seq)
    )""",
    "CREATE UNIQUE INDEX messages_by_id ON messages (session_id, id)",
    "CREATE INDEX messages_by_time ON messages (created_at)",
    """CREATE TABLE summaries (
        session_id TEXT PRIMARY KEY,
        text TEXT NOT NULL,
        first_id TEXT NOT NULL,
        last_id TEXT NOT NULL,
        covered_count INTEGER NOT NULL,
        model TEXT,
        strategy TEXT NOT NULL,
        revision INTEGER NOT NULL,
        updated_at REAL NOT NULL
    )""",
    """CREATE TABLE token_counts (
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        counter TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        PRIMARY KEY (session_id, message_id, counter)
    ) WITHOUT ROWID""",
    """CREATE TABLE migrations (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        from_model TEXT,
        to_model TEXT NOT NULL,
        tokens_before INTEGER NOT NULL,
        tokens_after INTEGER NOT NULL,
        budget INTEGER NOT NULL,
        strategy TEXT NOT NULL,
        decision TEXT NOT NULL,
        at REAL NOT NULL
    )""",
    "CREATE INDEX migrations_by_session ON migrations (session_id, seq)",
)


def _backfill_user_ids(conn: sqlite3.Connection) -> None:
    rows = conn.execute("SELECT id, metadata FROM sessions").fetchall()
    for session_id, metadata in rows:
        user_id = user_id_of(_codec.loads(metadata))
        if user_id is not None:
            conn.execute(
                "UPDATE sessions SET user_id = ? WHERE id = ?",
                (_codec.encode_key(user_id), session_id),
            )


_0002_SESSION_USER_ID: tuple[Step, ...] = (
    "ALTER TABLE sessions ADD COLUMN user_id TEXT",
    "CREATE INDEX sessions_by_user ON sessions (user_id)",
    _backfill_user_ids,
)

_0003_OFFLOADED_OUTPUTS: tuple[Step, ...] = (
    """CREATE TABLE offloaded (
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, message_id)
    ) WITHOUT ROWID""",
)

_0004_MESSAGE_VECTORS: tuple[Step, ...] = (
    """CREATE TABLE vectors (
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        model TEXT NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (session_id, message_id, model)
    ) WITHOUT ROWID""",
    # a message's vectors go with it (deleted, erased, purged, its session deleted)
    """CREATE TRIGGER vectors_go_with_their_message AFTER DELETE ON messages BEGIN
        DELETE FROM vectors WHERE session_id = old.session_id AND message_id = old.id;
    END""",
)


def _vectors_by_text(conn: sqlite3.Connection) -> None:
    """A vector now starts with the digest of the text it was made from (see
    ``recall._hybrid.stored_vector``), so the vectors kept before are never served again: the
    table is made anew, empty, as a rowid table (a ``WITHOUT ROWID`` one, as ``0004`` made it,
    takes three times a kilobyte row's size); they are embedded again as fits need them."""
    conn.execute("DROP TRIGGER IF EXISTS vectors_go_with_their_message")
    conn.execute("DROP TABLE vectors")
    conn.execute(
        """CREATE TABLE vectors (
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        model TEXT NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (session_id, message_id, model)
    )"""
    )
    conn.execute(
        """CREATE TRIGGER vectors_go_with_their_message AFTER DELETE ON messages BEGIN
        DELETE FROM vectors WHERE session_id = old.session_id AND message_id = old.id;
    END"""
    )


_0007_LEASES: tuple[Step, ...] = (
    # a named lease on a session (see BaseSessionStore.acquire_lease); goes with its session
    """CREATE TABLE leases (
        session_id TEXT NOT NULL,
        name TEXT NOT NULL,
        owner TEXT NOT NULL,
        expires_at REAL NOT NULL,
        PRIMARY KEY (session_id, name)
    ) WITHOUT ROWID""",
)


def _text_of(body: str) -> str:
    """The SQL giving the searchable text of a stored message ``body`` (its string content,
    or the text of its parts): what ``message_search`` indexes, and removes again."""
    # (SQLite's JSON functions end a text at a NUL: the words after one are not searched)
    return (
        f"CASE json_type({body}, '$.content') WHEN 'text' THEN json_extract({body}, '$.content') "
        f"ELSE (SELECT group_concat(json_extract(p.value, '$.text'), ' ') "
        f"FROM json_each({body}, '$.content') AS p) END"
    )


_0008_MESSAGE_SEARCH: tuple[Step, ...] = (
    # every message's text, searchable across sessions (see _search): contentless (the text
    # is the message's), kept by triggers in the transaction that adds or deletes the message
    "CREATE VIRTUAL TABLE message_search USING fts5(text, content = '', "
    "tokenize = 'porter unicode61')",
    f"""CREATE TRIGGER message_search_add AFTER INSERT ON messages BEGIN
        INSERT INTO message_search (rowid, text) VALUES (new.rowid, {_text_of("new.body")});
    END""",
    # (a message deleted, erased, purged, replaced, its session deleted: its entries go)
    f"""CREATE TRIGGER message_search_drop AFTER DELETE ON messages BEGIN
        INSERT INTO message_search (message_search, rowid, text)
        VALUES ('delete', old.rowid, {_text_of("old.body")});
    END""",
    f"INSERT INTO message_search (rowid, text) SELECT rowid, {_text_of('body')} FROM messages",
)


_BS = "\\"  # (one backslash)


def _text_after_nul(body: str) -> str:
    """:func:`_text_of` with the words after a NUL too: the body's NUL escapes (``\\u0000``,
    not an escaped backslash followed by ``u0000``) become spaces before the JSON is read. An
    escaped backslash is set aside first as a control character, which a JSON text never holds
    raw, and put back after."""
    safe = (
        f"replace(replace(replace({body}, '{_BS * 2}', char(1)), '{_BS}u0000', ' '), char(1), "
        f"'{_BS * 2}')"
    )
    return _text_of(safe)


_0009_SEARCH_AFTER_NUL: tuple[Step, ...] = (
    # the index again, with the words after a NUL (what 0008's triggers left out): the old
    # triggers go, the index is emptied, the new triggers index and remove the whole text
    "DROP TRIGGER IF EXISTS message_search_add",
    "DROP TRIGGER IF EXISTS message_search_drop",
    "INSERT INTO message_search (message_search) VALUES ('delete-all')",
    f"""CREATE TRIGGER message_search_add AFTER INSERT ON messages BEGIN
        INSERT INTO message_search (rowid, text)
        VALUES (new.rowid, {_text_after_nul("new.body")});
    END""",
    f"""CREATE TRIGGER message_search_drop AFTER DELETE ON messages BEGIN
        INSERT INTO message_search (message_search, rowid, text)
        VALUES ('delete', old.rowid, {_text_after_nul("old.body")});
    END""",
    f"INSERT INTO message_search (rowid, text) SELECT rowid, {_text_after_nul('body')} "
    "FROM messages",
)


#: Every migration, oldest first: (name, steps). Append only.
MIGRATIONS: tuple[tuple[str, tuple[Step, ...]], ...] = (
    ("0001_initial", _0001_INITIAL),
    ("0002_session_user_id", _0002_SESSION_USER_ID),
    ("0003_offloaded_outputs", _0003_OFFLOADED_OUTPUTS),
    ("0004_message_vectors", _0004_MESSAGE_VECTORS),
    ("0005_vectors_by_text", (_vectors_by_text,)),
    # (sessions whose metadata user_id is an integer, stored before integers were matched)
    ("0006_numeric_user_ids", (_backfill_user_ids,)),
    ("0007_leases", _0007_LEASES),
    ("0008_message_search", _0008_MESSAGE_SEARCH),
    ("0009_search_after_nul", _0009_SEARCH_AFTER_NUL),
)

_LEDGER = (
    "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
)


def _applied(conn: sqlite3.Connection) -> set[str]:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if not exists:
        return set()
    return {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}


def _check_known(applied: set[str], path: str) -> None:
    unknown = sorted(applied - {name for name, _ in MIGRATIONS})
    if unknown:
        raise StoreError(
            f"{path} was written by a newer session-migrator (schema migration {unknown[-1]!r} "
            "is unknown to this version); upgrade session-migrator to open it"
        )


def migrate(conn: sqlite3.Connection, path: str) -> list[str]:
    """Apply the missing migrations; returns the names applied (empty when up to date)."""
    applied = _applied(conn)
    _check_known(applied, path)
    if all(name in applied for name, _ in MIGRATIONS):
        return []
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(_LEDGER)
        applied = _applied(conn)  # another process may have migrated meanwhile
        _check_known(applied, path)
        done = _apply(conn, [(n, s) for n, s in MIGRATIONS if n not in applied])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return done


def _apply(conn: sqlite3.Connection, pending: Sequence[tuple[str, tuple[Step, ...]]]) -> list[str]:
    done: list[str] = []
    for name, steps in pending:
        for step in steps:
            if isinstance(step, str):
                conn.execute(step)
            else:
                step(conn)
        conn.execute(
            "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", (name, time.time())
        )
        done.append(name)
    return done
