"""The search index's queries in SQLite (FTS5) and PostgreSQL (full text), see :mod:`._search`.

Each is a mixin of its store (which keeps the index by its schema: triggers in SQLite, a stored
``tsvector`` column in PostgreSQL, migration ``0008_message_search``): one query ranks the
scope's matching messages and returns their stored bodies, so no session is loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from session_migrator.store import _codec
from session_migrator.store._codec import decode_key as dk
from session_migrator.store._codec import encode_key as ek
from session_migrator.store._codec import index_key as ik
from session_migrator.store._search import COMMON_MESSAGES, SearchHit

__all__ = ["PostgresSearch", "SQLiteSearch", "around_sql"]


class SQLiteSearch:
    """SQLite's search: the FTS5 table ``message_search``, ranked by bm25."""

    _read: Callable[..., list[Any]]

    def _common(self, terms: list[str]) -> set[str]:
        common = set()
        for term in terms:
            rows = self._read(
                "SELECT count(*) FROM (SELECT 1 FROM message_search WHERE message_search MATCH ? "
                "LIMIT ?)",
                (f'"{term}"', COMMON_MESSAGES + 1),
            )
            if rows[0][0] > COMMON_MESSAGES:
                common.add(term)
        return common

    def _search(
        self, terms: list[str], user_id: str | None, workspace: str | None, limit: int
    ) -> list[SearchHit]:
        column, value = (
            ("s.user_id", user_id) if user_id is not None else ("s.workspace", workspace)
        )
        assert value is not None
        rows = self._read(
            "SELECT m.session_id, m.body FROM message_search f "
            "JOIN messages m ON m.rowid = f.rowid JOIN sessions s ON s.id = m.session_id "
            f"WHERE message_search MATCH ? AND {column} = ? ORDER BY f.rank, m.rowid DESC LIMIT ?",
            (" OR ".join(f'"{t}"' for t in terms), ek(value), limit),
        )
        return [(dk(sid), _codec.message_from_json(body)) for sid, body in rows]

    def _bodies_around(
        self, session_id: str, ids: list[str], before: int, after: int
    ) -> list[str] | None:
        sid = ek(session_id)
        rows = self._read(
            around_sql("?", "messages", len(ids)),
            (sid, *(ek(i) for i in ids), sid, before, after),
        )
        return [r[0] for r in rows]


class PostgresSearch:
    """PostgreSQL's search: the ``search`` tsvector of ``sm_messages`` (GIN), by ts_rank."""

    _read: Callable[..., list[Any]]

    def _common(self, terms: list[str]) -> set[str]:
        common = set()
        for term in terms:
            rows = self._read(
                "SELECT count(*) FROM (SELECT 1 FROM sm_messages "
                "WHERE search @@ plainto_tsquery('english', %s) LIMIT %s) AS found",
                (term, COMMON_MESSAGES + 1),
            )
            if rows[0][0] > COMMON_MESSAGES:
                common.add(term)
        return common

    def _search(
        self, terms: list[str], user_id: str | None, workspace: str | None, limit: int
    ) -> list[SearchHit]:
        column, value = (
            ("s.user_id", user_id) if user_id is not None else ("s.workspace", workspace)
        )
        assert value is not None
        # the index first, once (MATERIALIZED: not a GIN scan per session of the scope, the
        # plan a table without statistics yet gets), then the scope's best, then their bodies
        rows = self._read(
            "WITH q AS (SELECT websearch_to_tsquery('english', %s) AS q), "
            "hits AS MATERIALIZED (SELECT m.session_id, m.seq, m.created_at, "
            "ts_rank(m.search, q.q) AS rank FROM sm_messages m, q WHERE m.search @@ q.q), "
            "best AS (SELECT h.session_id, h.seq, h.created_at, h.rank, s.name FROM hits h "
            f"JOIN sm_sessions s ON s.id = h.session_id WHERE {column} = %s "
            "ORDER BY h.rank DESC, h.created_at DESC, h.seq DESC LIMIT %s) "
            "SELECT b.session_id, b.name, m.body FROM best b JOIN sm_messages m "
            "ON m.session_id = b.session_id AND m.seq = b.seq "
            "ORDER BY b.rank DESC, b.created_at DESC, b.seq DESC",
            (" or ".join(terms), ik(value), limit),
        )
        return [
            (dk(name if name is not None else sid), _codec.message_from_json(body))
            for sid, name, body in rows
        ]

    def _bodies_around(
        self, session_id: str, ids: list[str], before: int, after: int
    ) -> list[str] | None:
        sid = ik(session_id)
        rows = self._read(
            around_sql("%s", "sm_messages", len(ids)),
            (sid, *(ik(i) for i in ids), sid, before, after),
        )
        return [r[0] for r in rows]


def _scope(user_id: str | None, workspace: str | None) -> tuple[str, str]:
    """The sessions column a search matches, and its value."""
    if user_id is not None:
        return "s.user_id", user_id
    assert workspace is not None
    return "s.workspace", workspace


def around_sql(ph: str, table: str, count: int) -> str:
    """The query of a session's bodies around ``count`` message ids (``ph``: the driver's
    placeholder; parameters: session id, the ids, before, after)."""
    marks = ", ".join([ph] * count)
    return (
        f"WITH pos AS (SELECT seq, id, row_number() OVER (ORDER BY seq) AS n FROM {table} "
        f"WHERE session_id = {ph}), hit AS (SELECT n FROM pos WHERE id IN ({marks})) "
        f"SELECT m.body FROM pos JOIN {table} m ON m.session_id = ({ph}) AND m.seq = pos.seq "
        f"WHERE EXISTS (SELECT 1 FROM hit WHERE pos.n BETWEEN hit.n - {ph} AND hit.n + {ph}) "
        "ORDER BY pos.seq"
    )
