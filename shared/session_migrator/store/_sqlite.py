"""``sqlite:///path``: the default, embedded store (standard library ``sqlite3``).

One database file, safe to share between threads and processes:

- WAL journal (readers never block the writer), ``synchronous=NORMAL`` (a committed append
  survives the process being killed), and a busy timeout (30 s by default) so concurrent writers
  wait for each other instead of failing;
- every write is one ``BEGIN IMMEDIATE`` transaction, which takes the write lock up front, so a
  transaction never has to upgrade a read lock and cannot deadlock;
- one connection per thread (created on first use, all closed by :meth:`SQLiteStore.close`);
- the schema is migrated forward on open (:mod:`._sqlite_schema`).

Ids are stored with :func:`~._codec.encode_key` and always bound as parameters.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from session_migrator._errors import SessionNotFoundError, StoreError
from session_migrator.store import _codec
from session_migrator.store._backend import Clock, Record
from session_migrator.store._base import BaseSessionStore
from session_migrator.store._codec import decode_key as dk
from session_migrator.store._codec import encode_key as ek
from session_migrator.store._connections import ThreadConnections
from session_migrator.store._search_sql import SQLiteSearch
from session_migrator.store._sqlite_schema import migrate
from session_migrator.store._types import (
    MessageNotFoundError,
    MigrationRecord,
    SessionInfo,
    StoredSummary,
    conflict_error,
    from_epoch,
    sort_sessions,
    to_epoch,
)
from session_migrator.store._vectors import SQLiteVectors

__all__ = ["SQLiteStore"]

_SESSION_COLUMNS = "id, workspace, message_count, created_at, updated_at, metadata"


def _session(row: Sequence[Any]) -> SessionInfo:
    return SessionInfo(
        id=dk(row[0]),
        workspace=dk(row[1]),
        message_count=row[2],
        created_at=from_epoch(row[3]),
        updated_at=from_epoch(row[4]),
        metadata=_codec.loads_metadata(row[5]),
    )


def _wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Put the database in WAL mode, waiting up to ``timeout`` seconds for the others: the
    switch needs the database to itself, and SQLite answers "locked" at once rather than wait
    for it (its busy timeout does not cover the switch), as when several processes or threads
    open a new or an old database together.
    """
    deadline = time.monotonic() + timeout
    pause = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(2 * pause, 0.05)


class SQLiteStore(SQLiteSearch, SQLiteVectors, BaseSessionStore):
    """A session store in one SQLite file (``sqlite:///path/to.db``).

    ``busy_timeout`` (seconds) is how long a writer waits for another one before failing.
    """

    backend_errors = (sqlite3.Error,)

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout: float = 30.0,
        offload_threshold: int | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(offload_threshold=offload_threshold, clock=clock)
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self._timeout = busy_timeout
        self._connections = ThreadConnections(
            self._connect,
            sqlite3.Connection.close,
            lambda: StoreError(f"the store {self.url!r} is closed"),
        )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            migrate(self._conn(), str(self.path))
        except (sqlite3.Error, OSError) as exc:  # (OSError: its folder cannot be made)
            self.close()
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise StoreError(f"cannot open the SQLite store {str(self.path)!r}: {reason}") from exc
        except BaseException:
            self.close()
            raise

    # -- connections and transactions -------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        """The calling thread's connection (see :class:`ThreadConnections`)."""
        return self._connections.get()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
        try:
            _wal(conn, self._timeout)
            conn.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(
                f"{self.url}: {exc}: another writer held the database for longer than "
                f"busy_timeout={self._timeout:g}s; retry, or open the store with a longer one"
            ) from exc
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._conn().execute(sql, params).fetchall()

    # -- primitives -------------------------------------------------------------------------

    def _append(
        self,
        session_id: str,
        workspace: str,
        metadata: str,
        user_id: str | None,
        records: Sequence[Record],
        now: float,
    ) -> int:
        sid = ek(session_id)
        with self._write() as conn:
            row = conn.execute("SELECT last_seq FROM sessions WHERE id = ?", (sid,)).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO sessions (id, workspace, metadata, user_id, created_at, "
                    "updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (sid, ek(workspace), metadata, _key(user_id), now, now),
                )
                seq = 0
            else:
                seq = row[0]
            added = 0
            for record in records:
                mid = ek(record.id)
                cur = conn.execute(
                    "INSERT OR IGNORE INTO messages (session_id, seq, id, role, body, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (sid, seq + 1, mid, record.role, record.body, now),
                )
                if cur.rowcount:
                    seq += 1
                    added += 1
                    if record.full is not None:
                        conn.execute(
                            "INSERT OR REPLACE INTO offloaded (session_id, message_id, body) "
                            "VALUES (?, ?, ?)",
                            (sid, mid, record.full),
                        )
            if added:
                conn.execute(
                    "UPDATE sessions SET last_seq = ?, message_count = message_count + ?, "
                    "updated_at = ? WHERE id = ?",
                    (seq, added, now, sid),
                )
        return added

    def _load_bodies(self, session_id: str, after: str | None) -> tuple[list[str], int]:
        sid = ek(session_id)
        if after is None:
            rows = self._read("SELECT body FROM messages WHERE session_id = ? ORDER BY seq", (sid,))
            return [r[0] for r in rows], len(rows)
        conn = self._conn()
        conn.execute("BEGIN")  # one snapshot for both reads
        try:
            found = conn.execute(
                "SELECT seq FROM messages WHERE session_id = ? AND id = ?", (sid, ek(after))
            ).fetchone()
            if found is None:
                exists = conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone()
                if exists:
                    raise MessageNotFoundError(session_id, after)
                return [], 0
            # the new bodies and the count together (nothing new: one row with no body)
            rows = conn.execute(
                "SELECT s.message_count, m.body FROM sessions s LEFT JOIN messages m "
                "ON m.session_id = s.id AND m.seq > ? WHERE s.id = ? ORDER BY m.seq",
                (found[0], sid),
            ).fetchall()
            return [r[1] for r in rows if r[1] is not None], int(rows[0][0]) if rows else 0
        finally:
            conn.execute("COMMIT")

    def _message_ids(self, session_id: str) -> list[str]:
        rows = self._read(
            "SELECT id FROM messages WHERE session_id = ? ORDER BY seq", (ek(session_id),)
        )
        return [dk(r[0]) for r in rows]

    def _delete_ids(self, session_id: str, ids: Sequence[str], now: float) -> int:
        sid = ek(session_id)
        pairs = [(sid, ek(mid)) for mid in ids]
        with self._write() as conn:
            deleted = conn.executemany(
                "DELETE FROM messages WHERE session_id = ? AND id = ?", pairs
            ).rowcount
            conn.executemany("DELETE FROM offloaded WHERE session_id = ? AND message_id = ?", pairs)
            conn.executemany(
                "DELETE FROM token_counts WHERE session_id = ? AND message_id = ?", pairs
            )
            if deleted:
                conn.execute(
                    "UPDATE sessions SET message_count = message_count - ? WHERE id = ?",
                    (deleted, sid),
                )
        return deleted

    def _offloaded_bodies(self, session_id: str, ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        sid = ek(session_id)
        for mid in ids:
            row = self._read(
                "SELECT body FROM offloaded WHERE session_id = ? AND message_id = ?",
                (sid, ek(mid)),
            )
            if row:
                out[mid] = row[0][0]
        return out

    def _delete_session(self, session_id: str, *, only_if_empty: bool) -> bool:
        sid = ek(session_id)
        with self._write() as conn:
            row = conn.execute("SELECT message_count FROM sessions WHERE id = ?", (sid,)).fetchone()
            if row is None or (only_if_empty and row[0] > 0):
                return False
            for table, column in _SESSION_TABLES:
                conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (sid,))
        return True

    def _ids_in(self, workspace: str) -> list[str]:
        rows = self._read("SELECT id FROM sessions WHERE workspace = ?", (ek(workspace),))
        return [dk(r[0]) for r in rows]

    def _ids_of_user(self, user_id: str) -> list[str]:
        rows = self._read("SELECT id FROM sessions WHERE user_id = ?", (ek(user_id),))
        return [dk(r[0]) for r in rows]

    def _messages_before(self, cutoff: float) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        rows = self._read(
            "SELECT session_id, id FROM messages WHERE created_at < ? ORDER BY session_id, seq",
            (cutoff,),
        )
        for sid, mid in rows:
            out.setdefault(dk(sid), []).append(dk(mid))
        return out

    def _set_metadata(
        self, session_id: str, metadata: str, user_id: str | None, now: float
    ) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET metadata = ?, user_id = ?, updated_at = ? WHERE id = ?",
                (metadata, _key(user_id), now, ek(session_id)),
            )
            return cur.rowcount > 0

    def _put_summary(self, summary: StoredSummary, expected_revision: int) -> None:
        sid = ek(summary.session_id)
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone() is None:
                raise SessionNotFoundError(summary.session_id)
            row = conn.execute(
                "SELECT revision FROM summaries WHERE session_id = ?", (sid,)
            ).fetchone()
            current = row[0] if row else 0
            if current != expected_revision:
                raise conflict_error(summary.session_id, expected_revision, current)
            conn.execute(
                "INSERT OR REPLACE INTO summaries (session_id, text, first_id, last_id, "
                "covered_count, model, strategy, revision, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    sid,
                    ek(summary.text),
                    ek(summary.first_id),
                    ek(summary.last_id),
                    summary.covered_count,
                    _key(summary.model),
                    ek(summary.strategy),
                    summary.revision,
                    to_epoch(summary.updated_at),
                ),
            )

    def _delete_summary(self, session_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM summaries WHERE session_id = ?", (ek(session_id),))

    def _log_migration(self, record: MigrationRecord) -> None:
        assert record.at is not None
        sid = ek(record.session_id)
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone() is None:
                raise SessionNotFoundError(record.session_id)
            conn.execute(
                "INSERT INTO migrations (session_id, from_model, to_model, tokens_before, "
                "tokens_after, budget, strategy, decision, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    sid,
                    _key(record.from_model),
                    ek(record.to_model),
                    record.tokens_before,
                    record.tokens_after,
                    record.budget,
                    ek(record.strategy),
                    ek(record.decision),
                    to_epoch(record.at),
                ),
            )

    def _acquire_lease(
        self, session_id: str, name: str, owner: str, ttl_seconds: float, now: float
    ) -> bool:
        sid = ek(session_id)
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone() is None:
                raise SessionNotFoundError(session_id)
            # taken when free, expired or the owner's own (renewed): one statement
            cur = conn.execute(
                "INSERT INTO leases (session_id, name, owner, expires_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (session_id, name) DO UPDATE SET owner = excluded.owner, "
                "expires_at = excluded.expires_at "
                "WHERE leases.owner = excluded.owner OR leases.expires_at <= ?",
                (sid, ek(name), ek(owner), now + ttl_seconds, now),
            )
            return cur.rowcount > 0

    def _release_lease(self, session_id: str, name: str, owner: str) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "DELETE FROM leases WHERE session_id = ? AND name = ? AND owner = ?",
                (ek(session_id), ek(name), ek(owner)),
            )
            return cur.rowcount > 0

    # -- simple reads and writes ------------------------------------------------------------

    def get_session(self, session_id: str) -> SessionInfo | None:
        rows = self._read(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (ek(session_id),)
        )
        return _session(rows[0]) if rows else None

    def list_sessions(self, workspace: str | None = "default") -> list[SessionInfo]:
        if workspace is None:
            rows = self._read(f"SELECT {_SESSION_COLUMNS} FROM sessions")
        else:
            rows = self._read(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE workspace = ?", (ek(workspace),)
            )
        return sort_sessions([_session(r) for r in rows])

    def get_summary(self, session_id: str) -> StoredSummary | None:
        rows = self._read(
            "SELECT text, first_id, last_id, covered_count, model, strategy, revision, "
            "updated_at FROM summaries WHERE session_id = ?",
            (ek(session_id),),
        )
        if not rows:
            return None
        text, first, last, covered, model, strategy, revision, updated = rows[0]
        return StoredSummary(
            session_id=session_id,
            text=dk(text),
            first_id=dk(first),
            last_id=dk(last),
            covered_count=covered,
            model=None if model is None else dk(model),
            strategy=dk(strategy),
            revision=revision,
            updated_at=from_epoch(updated),
        )

    def get_token_counts(
        self, session_id: str, counter_name: str, ids: Iterable[str]
    ) -> dict[str, int]:
        sid, counter = ek(session_id), ek(counter_name)
        out: dict[str, int] = {}
        conn = self._conn()
        for mid in ids:
            row = conn.execute(
                "SELECT tokens FROM token_counts WHERE session_id = ? AND message_id = ? "
                "AND counter = ?",
                (sid, ek(mid), counter),
            ).fetchone()
            if row is not None:
                out[mid] = row[0]
        return out

    def put_token_counts(
        self, session_id: str, counter_name: str, counts: Mapping[str, int]
    ) -> None:
        if not counts:
            return
        sid, counter = ek(session_id), ek(counter_name)
        with self._write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO token_counts (session_id, message_id, counter, tokens) "
                "SELECT ?1, ?2, ?3, ?4 WHERE EXISTS "
                "(SELECT 1 FROM messages WHERE session_id = ?1 AND id = ?2)",
                [(sid, ek(mid), counter, int(n)) for mid, n in counts.items()],
            )

    def migrations(self, session_id: str) -> list[MigrationRecord]:
        rows = self._read(
            "SELECT from_model, to_model, tokens_before, tokens_after, budget, strategy, "
            "decision, at FROM migrations WHERE session_id = ? ORDER BY seq",
            (ek(session_id),),
        )
        return [
            MigrationRecord(
                session_id=session_id,
                from_model=None if r[0] is None else dk(r[0]),
                to_model=dk(r[1]),
                tokens_before=r[2],
                tokens_after=r[3],
                budget=r[4],
                strategy=dk(r[5]),
                decision=dk(r[6]),
                at=from_epoch(r[7]),
            )
            for r in rows
        ]

    def close(self) -> None:
        self._connections.close_all()


#: Tables holding a session's rows, and the column naming the session (deleted together).
_SESSION_TABLES = (
    ("messages", "session_id"),
    ("offloaded", "session_id"),
    ("token_counts", "session_id"),
    ("summaries", "session_id"),
    ("migrations", "session_id"),
    ("leases", "session_id"),
    ("sessions", "id"),
)


def _key(value: str | None) -> str | None:
    return None if value is None else ek(value)
