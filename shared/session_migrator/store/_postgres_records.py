"""The PostgreSQL store's simple reads and writes, and how its rows give back ids and records.

It owns :class:`PostgresRecords`, the part of :class:`~._postgres.PostgresStore` that answers
the session, summary, token-count and migration-log queries in one statement each (a session's
row read back as :class:`SessionInfo`, the summary and the log as their records, token counts
upserted only for messages still stored), and the key helpers both parts use: an id's bounded
index key and its full key when the index key is not it, and the id back from the two. The
connection, the schema on open and the storage primitives stay in ``_postgres``.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from session_migrator.store import _codec
from session_migrator.store._base import BaseSessionStore
from session_migrator.store._codec import decode_key as dk
from session_migrator.store._codec import encode_key as ek
from session_migrator.store._codec import index_key as ik
from session_migrator.store._types import (
    MigrationRecord,
    SessionInfo,
    StoredSummary,
    from_epoch,
    sort_sessions,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresRecords"]

_SESSION_COLUMNS = (
    "id, name, workspace, workspace_name, message_count, created_at, updated_at, metadata"
)


def _session(row: Sequence[Any]) -> SessionInfo:
    return SessionInfo(
        id=_id(row[0], row[1]),
        workspace=_id(row[2], row[3]),
        message_count=int(row[4]),
        created_at=from_epoch(row[5]),
        updated_at=from_epoch(row[6]),
        metadata=_codec.loads_metadata(row[7]),
    )


class PostgresRecords(BaseSessionStore):
    """The simple reads and writes of :class:`~._postgres.PostgresStore` (its base)."""

    @abstractmethod
    def _tx(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        """A transaction on the calling thread's connection."""

    @abstractmethod
    def _read(self, query: str, params: Sequence[Any] = ()) -> list[Any]:
        """The rows of one query."""

    def get_session(self, session_id: str) -> SessionInfo | None:
        rows = self._read(
            f"SELECT {_SESSION_COLUMNS} FROM sm_sessions WHERE id = %s", (ik(session_id),)
        )
        return _session(rows[0]) if rows else None

    def list_sessions(self, workspace: str | None = "default") -> list[SessionInfo]:
        if workspace is None:
            rows = self._read(f"SELECT {_SESSION_COLUMNS} FROM sm_sessions")
        else:
            rows = self._read(
                f"SELECT {_SESSION_COLUMNS} FROM sm_sessions WHERE workspace = %s",
                (ik(workspace),),
            )
        return sort_sessions([_session(r) for r in rows])

    def get_summary(self, session_id: str) -> StoredSummary | None:
        rows = self._read(
            "SELECT text, first_id, last_id, covered_count, model, strategy, revision, "
            "updated_at FROM sm_summaries WHERE session_id = %s",
            (ik(session_id),),
        )
        if not rows:
            return None
        text, first, last, covered, model, strategy, revision, updated = rows[0]
        return StoredSummary(
            session_id=session_id,
            text=dk(text),
            first_id=dk(first),
            last_id=dk(last),
            covered_count=int(covered),
            model=None if model is None else dk(model),
            strategy=dk(strategy),
            revision=int(revision),
            updated_at=from_epoch(updated),
        )

    def get_token_counts(
        self, session_id: str, counter_name: str, ids: Iterable[str]
    ) -> dict[str, int]:
        keys = {ik(mid): mid for mid in ids}
        if not keys:
            return {}
        rows = self._read(
            "SELECT message_id, tokens FROM sm_token_counts WHERE session_id = %s "
            "AND counter = %s AND message_id = ANY(%s)",
            (ik(session_id), ik(counter_name), list(keys)),
        )
        return {keys[r[0]]: int(r[1]) for r in rows}

    def put_token_counts(
        self, session_id: str, counter_name: str, counts: Mapping[str, int]
    ) -> None:
        if not counts:
            return
        sid = ik(session_id)
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO sm_token_counts (session_id, message_id, counter, tokens) "
                "SELECT %s, t.mid, %s, t.n FROM unnest(%s::text[], %s::bigint[]) AS t(mid, n) "
                "WHERE EXISTS (SELECT 1 FROM sm_messages m WHERE m.session_id = %s "
                "AND m.id = t.mid) ON CONFLICT (session_id, message_id, counter) "
                "DO UPDATE SET tokens = EXCLUDED.tokens",
                (
                    sid,
                    ik(counter_name),
                    [ik(mid) for mid in counts],
                    [int(n) for n in counts.values()],
                    sid,
                ),
            )

    def migrations(self, session_id: str) -> list[MigrationRecord]:
        rows = self._read(
            "SELECT from_model, to_model, tokens_before, tokens_after, budget, strategy, "
            "decision, at FROM sm_migrations WHERE session_id = %s ORDER BY seq",
            (ik(session_id),),
        )
        return [
            MigrationRecord(
                session_id=session_id,
                from_model=None if r[0] is None else dk(r[0]),
                to_model=dk(r[1]),
                tokens_before=int(r[2]),
                tokens_after=int(r[3]),
                budget=int(r[4]),
                strategy=dk(r[5]),
                decision=dk(r[6]),
                at=from_epoch(r[7]),
            )
            for r in rows
        ]


def _key(value: str | None) -> str | None:
    return None if value is None else ek(value)


def _user(value: str | None) -> str | None:
    return None if value is None else ik(value)


def _full(value: str) -> str | None:
    """The full key of an id whose index key is bounded (else ``None``: the index key is it)."""
    key = ek(value)
    return None if ik(value) == key else key


def _id(key: str, full: str | None) -> str:
    """The id back from its index key and full key."""
    return dk(full if full is not None else key)
