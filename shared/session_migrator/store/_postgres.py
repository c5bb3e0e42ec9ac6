"""``postgresql://...``: a store in PostgreSQL (psycopg 3), for several machines.

- every write is one transaction; an append locks its session row (``SELECT ... FOR UPDATE``)
  so concurrent appenders to one session take turns, and inserts its messages in one statement
  with ``ON CONFLICT (session_id, id) DO NOTHING`` (idempotent by message id);
- one connection per thread (autocommit outside explicit transactions), all closed by
  :meth:`PostgresStore.close`;
- ``schema`` (argument or ``?schema=`` in the URL) keeps the tables in their own schema,
  created when missing;
- the schema is migrated forward on open (:mod:`._postgres_schema`).

Ids and text are stored with :func:`~._codec.encode_key` (PostgreSQL text cannot hold NUL),
indexed ids with :func:`~._codec.index_key` (b-tree entries are bounded, ids are not), and
always bound as parameters.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from session_migrator._errors import MissingDependencyError, SessionNotFoundError, StoreError
from session_migrator.store._backend import Clock, Record, display_url
from session_migrator.store._codec import encode_key as ek
from session_migrator.store._codec import index_key as ik
from session_migrator.store._connections import ThreadConnections
from session_migrator.store._postgres_conn import bounded, split_url
from session_migrator.store._postgres_records import PostgresRecords, _full, _id, _key, _user
from session_migrator.store._postgres_schema import PostgresVectors, migrate
from session_migrator.store._search import search_text
from session_migrator.store._search_sql import PostgresSearch
from session_migrator.store._types import (
    MessageNotFoundError,
    MigrationRecord,
    StoredSummary,
    conflict_error,
    to_epoch,
)

try:
    import psycopg
    from psycopg import sql
except ImportError as exc:  # pragma: no cover - exercised by the dependency test
    raise MissingDependencyError("The PostgreSQL store", "postgres") from exc

__all__ = ["PostgresStore"]

_SESSION_TABLES = (
    ("sm_messages", "session_id"),
    ("sm_offloaded", "session_id"),
    ("sm_token_counts", "session_id"),
    ("sm_summaries", "session_id"),
    ("sm_migrations", "session_id"),
    ("sm_leases", "session_id"),
    ("sm_sessions", "id"),
)


class PostgresStore(PostgresSearch, PostgresVectors, PostgresRecords):
    """A session store in PostgreSQL (``postgresql://user@host:5432/db``)."""

    backend_errors = (psycopg.Error,)
    backend_hint = "Check that PostgreSQL is running and reachable"

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        offload_threshold: int | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(offload_threshold=offload_threshold, clock=clock)
        self.url = display_url(url, schema=schema)
        self._conninfo, statement_timeout = split_url(url)
        #: seconds a call may wait for the server before its connection is cut (0: no limit)
        self.deadline = statement_timeout + min(statement_timeout, 5.0)
        self.schema = schema
        self._connections = ThreadConnections(
            self._connect,
            psycopg.Connection.close,
            lambda: StoreError(f"the store {self.url!r} is closed"),
            lambda conn: not conn.closed and not conn.broken,
        )
        try:
            conn = self._conn()
            with bounded(conn, self.deadline, self.url):
                if schema is not None:
                    conn.execute(
                        sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema))
                    )
                migrate(conn, self.url)
        except psycopg.Error as exc:
            self.close()
            raise StoreError(f"cannot open the PostgreSQL store {self.url!r}: {exc}") from exc
        except BaseException:
            self.close()
            raise

    # -- connections and transactions -------------------------------------------------------

    def _conn(self) -> psycopg.Connection[Any]:
        """The calling thread's connection (see :class:`ThreadConnections`)."""
        return self._connections.get()

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            conn = psycopg.connect(self._conninfo, autocommit=True)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to {self.url!r}: {str(exc).strip()}. Check that PostgreSQL is "
                "running and the URL (user, host, port, database) is right."
            ) from exc
        if self.schema is not None:
            with bounded(conn, self.deadline, self.url):
                conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))
        return conn

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection[Any]]:
        conn = self._conn()
        with bounded(conn, self.deadline, self.url), conn.transaction():
            yield conn

    def _read(self, query: str, params: Sequence[Any] = ()) -> list[Any]:
        conn = self._conn()
        with bounded(conn, self.deadline, self.url):
            return conn.execute(query, params).fetchall()

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
        sid = ik(session_id)
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO sm_sessions (id, name, workspace, workspace_name, metadata, "
                "user_id, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (id) DO NOTHING",
                (
                    sid,
                    _full(session_id),
                    ik(workspace),
                    _full(workspace),
                    metadata,
                    _user(user_id),
                    now,
                    now,
                ),
            )
            row = conn.execute(
                "SELECT last_seq FROM sm_sessions WHERE id = %s FOR UPDATE", (sid,)
            ).fetchone()
            assert row is not None
            seq = int(row[0])
            added = 0
            if records:
                ids = [ik(r.id) for r in records]
                inserted = conn.execute(
                    "INSERT INTO sm_messages (session_id, seq, id, name, role, body, created_at, "
                    "search) SELECT %s, %s + t.ord, t.id, t.name, t.role, t.body, %s, "
                    "to_tsvector('english'::regconfig, t.words) FROM unnest("
                    "%s::text[], %s::text[], %s::text[], %s::text[], %s::text[]) "
                    "WITH ORDINALITY AS t(id, name, role, body, words, ord) "
                    "ON CONFLICT (session_id, id) DO NOTHING RETURNING id",
                    (
                        sid,
                        seq,
                        now,
                        ids,
                        [_full(r.id) for r in records],
                        [r.role for r in records],
                        [r.body for r in records],
                        [search_text(r.body) for r in records],
                    ),
                ).fetchall()
                added = len(inserted)
                new = {r[0] for r in inserted}
                full = [(mid, r.full) for mid, r in zip(ids, records, strict=True) if r.full]
                full = [(mid, body) for mid, body in full if mid in new]
                if full:
                    conn.execute(
                        "INSERT INTO sm_offloaded (session_id, message_id, body) "
                        "SELECT %s, t.mid, t.body FROM unnest(%s::text[], %s::text[]) "
                        "AS t(mid, body) ON CONFLICT (session_id, message_id) "
                        "DO UPDATE SET body = EXCLUDED.body",
                        (sid, [f[0] for f in full], [f[1] for f in full]),
                    )
            if added:
                conn.execute(
                    "UPDATE sm_sessions SET last_seq = %s, message_count = message_count + %s, "
                    "updated_at = %s WHERE id = %s",
                    (seq + len(records), added, now, sid),
                )
        return added

    def _load_bodies(self, session_id: str, after: str | None) -> tuple[list[str], int]:
        sid = ik(session_id)
        if after is None:
            rows = self._read(
                "SELECT body FROM sm_messages WHERE session_id = %s ORDER BY seq", (sid,)
            )
            return [r[0] for r in rows], len(rows)
        with self._tx() as conn:
            found = conn.execute(
                "SELECT seq FROM sm_messages WHERE session_id = %s AND id = %s", (sid, ik(after))
            ).fetchone()
            if found is None:
                if conn.execute("SELECT 1 FROM sm_sessions WHERE id = %s", (sid,)).fetchone():
                    raise MessageNotFoundError(session_id, after)
                return [], 0
            # one statement, so one snapshot, for the new bodies and the count (a session with
            # nothing new gives one row with no body)
            rows = conn.execute(
                "SELECT s.message_count, m.body FROM sm_sessions s LEFT JOIN sm_messages m "
                "ON m.session_id = s.id AND m.seq > %s WHERE s.id = %s ORDER BY m.seq",
                (found[0], sid),
            ).fetchall()
        return [r[1] for r in rows if r[1] is not None], int(rows[0][0]) if rows else 0

    def _message_ids(self, session_id: str) -> list[str]:
        rows = self._read(
            "SELECT id, name FROM sm_messages WHERE session_id = %s ORDER BY seq",
            (ik(session_id),),
        )
        return [_id(r[0], r[1]) for r in rows]

    def _delete_ids(self, session_id: str, ids: Sequence[str], now: float) -> int:
        sid = ik(session_id)
        keys = [ik(mid) for mid in ids]
        with self._tx() as conn:
            if not conn.execute(
                "SELECT 1 FROM sm_sessions WHERE id = %s FOR UPDATE", (sid,)
            ).fetchone():
                return 0
            deleted = conn.execute(
                "DELETE FROM sm_messages WHERE session_id = %s AND id = ANY(%s)", (sid, keys)
            ).rowcount
            for table in ("sm_offloaded", "sm_token_counts"):
                conn.execute(
                    f"DELETE FROM {table} WHERE session_id = %s AND message_id = ANY(%s)",
                    (sid, keys),
                )
            if deleted:
                conn.execute(
                    "UPDATE sm_sessions SET message_count = message_count - %s WHERE id = %s",
                    (deleted, sid),
                )
        return int(deleted)

    def _offloaded_bodies(self, session_id: str, ids: Sequence[str]) -> dict[str, str]:
        keys = {ik(mid): mid for mid in ids}
        rows = self._read(
            "SELECT message_id, body FROM sm_offloaded WHERE session_id = %s "
            "AND message_id = ANY(%s)",
            (ik(session_id), list(keys)),
        )
        return {keys[r[0]]: r[1] for r in rows}

    def _delete_session(self, session_id: str, *, only_if_empty: bool) -> bool:
        sid = ik(session_id)
        with self._tx() as conn:
            row = conn.execute(
                "SELECT message_count FROM sm_sessions WHERE id = %s FOR UPDATE", (sid,)
            ).fetchone()
            if row is None or (only_if_empty and row[0] > 0):
                return False
            for table, column in _SESSION_TABLES:
                conn.execute(f"DELETE FROM {table} WHERE {column} = %s", (sid,))
        return True

    def _ids_in(self, workspace: str) -> list[str]:
        rows = self._read("SELECT id, name FROM sm_sessions WHERE workspace = %s", (ik(workspace),))
        return [_id(r[0], r[1]) for r in rows]

    def _ids_of_user(self, user_id: str) -> list[str]:
        rows = self._read("SELECT id, name FROM sm_sessions WHERE user_id = %s", (ik(user_id),))
        return [_id(r[0], r[1]) for r in rows]

    def _messages_before(self, cutoff: float) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        rows = self._read(
            "SELECT m.session_id, s.name, m.id, m.name FROM sm_messages m "
            "JOIN sm_sessions s ON s.id = m.session_id WHERE m.created_at < %s "
            "ORDER BY m.session_id, m.seq",
            (cutoff,),
        )
        for sid, sname, mid, mname in rows:
            out.setdefault(_id(sid, sname), []).append(_id(mid, mname))
        return out

    def _set_metadata(
        self, session_id: str, metadata: str, user_id: str | None, now: float
    ) -> bool:
        with self._tx() as conn:
            cur = conn.execute(
                "UPDATE sm_sessions SET metadata = %s, user_id = %s, updated_at = %s WHERE id = %s",
                (metadata, _user(user_id), now, ik(session_id)),
            )
            return cur.rowcount > 0

    def _put_summary(self, summary: StoredSummary, expected_revision: int) -> None:
        sid = ik(summary.session_id)
        with self._tx() as conn:
            if not conn.execute(
                "SELECT 1 FROM sm_sessions WHERE id = %s FOR UPDATE", (sid,)
            ).fetchone():
                raise SessionNotFoundError(summary.session_id)
            row = conn.execute(
                "SELECT revision FROM sm_summaries WHERE session_id = %s", (sid,)
            ).fetchone()
            current = int(row[0]) if row else 0
            if current != expected_revision:
                raise conflict_error(summary.session_id, expected_revision, current)
            conn.execute(
                "INSERT INTO sm_summaries (session_id, text, first_id, last_id, covered_count, "
                "model, strategy, revision, updated_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (session_id) DO UPDATE "
                "SET text = EXCLUDED.text, first_id = EXCLUDED.first_id, "
                "last_id = EXCLUDED.last_id, covered_count = EXCLUDED.covered_count, "
                "model = EXCLUDED.model, strategy = EXCLUDED.strategy, "
                "revision = EXCLUDED.revision, updated_at = EXCLUDED.updated_at",
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
        with self._tx() as conn:
            conn.execute("DELETE FROM sm_summaries WHERE session_id = %s", (ik(session_id),))

    def _log_migration(self, record: MigrationRecord) -> None:
        assert record.at is not None
        sid = ik(record.session_id)
        with self._tx() as conn:
            if not conn.execute("SELECT 1 FROM sm_sessions WHERE id = %s", (sid,)).fetchone():
                raise SessionNotFoundError(record.session_id)
            conn.execute(
                "INSERT INTO sm_migrations (session_id, from_model, to_model, tokens_before, "
                "tokens_after, budget, strategy, decision, at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
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
        sid = ik(session_id)
        with self._tx() as conn:
            # (a share lock: a delete of the session waits, and takes the lease with it)
            if not conn.execute(
                "SELECT 1 FROM sm_sessions WHERE id = %s FOR SHARE", (sid,)
            ).fetchone():
                raise SessionNotFoundError(session_id)
            # taken when free, expired or the owner's own (renewed): one statement
            cur = conn.execute(
                "INSERT INTO sm_leases (session_id, name, owner, expires_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (session_id, name) DO UPDATE "
                "SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at "
                "WHERE sm_leases.owner = EXCLUDED.owner OR sm_leases.expires_at <= %s",
                (sid, ik(name), ek(owner), now + ttl_seconds, now),
            )
            return cur.rowcount > 0

    def _release_lease(self, session_id: str, name: str, owner: str) -> bool:
        with self._tx() as conn:
            cur = conn.execute(
                "DELETE FROM sm_leases WHERE session_id = %s AND name = %s AND owner = %s",
                (ik(session_id), ik(name), ek(owner)),
            )
            return cur.rowcount > 0

    def close(self) -> None:
        self._connections.close_all()
