"""What a store holds, read from its raw tables and keys (not through the store's methods):
its vectors, and every place a session leaves a trace. The derived-data tests check them."""

from __future__ import annotations

import sqlite3
from typing import Any

from session_migrator.store import BaseSessionStore
from session_migrator.store._codec import decode_key, key_digest

#: (session id, message id, model key) -> the stored bytes
Vectors = dict[tuple[str, str, str], bytes]


def raw_vectors(store: BaseSessionStore) -> Vectors:
    """Every vector row the store holds."""
    kind = type(store).__name__
    if kind == "MemoryStore":
        out: Vectors = {}
        for sid, (_, models) in store._vector_slots().items():  # type: ignore[attr-defined]
            for model, by_id in models.items():
                for mid, (_, raw) in by_id.items():
                    out[(sid, mid, model)] = raw
        return out
    if kind == "SQLiteStore":
        conn = sqlite3.connect(store.path)  # type: ignore[attr-defined]
        try:
            rows = conn.execute("SELECT session_id, message_id, model, vector FROM vectors")
            return {(decode_key(s), decode_key(m), decode_key(k)): bytes(v) for s, m, k, v in rows}
        finally:
            conn.close()
    if kind == "PostgresStore":
        rows = store._read(  # type: ignore[attr-defined]
            "SELECT session_id, message_id, model, vector FROM sm_vectors"
        )
        return {(s, m, k): bytes(v) for s, m, k, v in rows}  # (plain ids: index keys as they are)
    assert kind == "RedisStore", kind
    import base64
    import json

    client: Any = store._client  # type: ignore[attr-defined]
    prefix: str = store.prefix  # type: ignore[attr-defined]
    out = {}
    for key in client.scan_iter(match=f"{prefix}s:*:vectors"):
        digest = key.decode().split(":")[-2]
        sid = client.hget(f"{prefix}s:{digest}:meta", "id")
        sid = decode_key(sid.decode()) if sid is not None else f"<orphan {digest}>"
        for mid, held in client.hgetall(key).items():
            for model, text in json.loads(held).items():
                out[(sid, decode_key(mid.decode()), decode_key(model))] = base64.b64decode(text)
    return out


def traces(store: BaseSessionStore, session_id: str) -> list[str]:
    """Where session ``session_id`` still leaves anything (empty: nowhere)."""
    kind = type(store).__name__
    found: list[str] = []
    if kind == "MemoryStore":
        if session_id in store._sessions:  # type: ignore[attr-defined]
            found.append("sessions")
        if session_id in store._vector_slots():  # type: ignore[attr-defined]
            found.append("vectors")
        return found
    if kind == "SQLiteStore":
        conn = sqlite3.connect(store.path)  # type: ignore[attr-defined]
        try:
            sid = store_key(session_id)
            for table, column in _SQL_TABLES:
                n = conn.execute(
                    f"SELECT count(*) FROM {table} WHERE {column} = ?", (sid,)
                ).fetchone()[0]
                if n:
                    found.append(table)
        finally:
            conn.close()
        return found
    if kind == "PostgresStore":
        for table, column in _SQL_TABLES:
            n = store._read(  # type: ignore[attr-defined]
                f"SELECT count(*) FROM sm_{table} WHERE {column} = %s", (session_id,)
            )[0][0]
            if n:
                found.append(table)
        return found
    client: Any = store._client  # type: ignore[attr-defined]
    prefix: str = store.prefix  # type: ignore[attr-defined]
    digest = key_digest(session_id)
    found += [k.decode() for k in client.scan_iter(match=f"{prefix}s:{digest}:*")]
    for key in client.scan_iter(match=f"{prefix}*"):
        if client.type(key) == b"set" and client.sismember(key, digest):
            found.append(key.decode())
    return found


def store_key(session_id: str) -> str:
    from session_migrator.store._codec import encode_key

    return encode_key(session_id)


_SQL_TABLES = (
    ("sessions", "id"),
    ("messages", "session_id"),
    ("summaries", "session_id"),
    ("token_counts", "session_id"),
    ("offloaded", "session_id"),
    ("vectors", "session_id"),
    ("migrations", "session_id"),
)
