"""Message vectors in the stores: ``get_vectors`` and ``put_vectors`` of every backend.

Hybrid recall (:mod:`session_migrator.recall._hybrid`) embeds each message once; the vector is kept
beside the message, keyed by the message id and the embedding model's key: the 16-byte digest
of the text it was made from (``recall._embeddings.text_digest``), then little-endian float32
numbers (``16 + dims * 4`` bytes a message and model, plus the keys). A vector is derived
data: it goes when its message goes (deleted, erased, purged, its session deleted), and a vector
is kept only for a message the session holds with that very text (checked in the write's
transaction, so a message deleted or stored again with other text meanwhile gets none). No
vector ever changes or drops a message.

- SQLite: table ``vectors`` (schema migration ``0004_message_vectors``), emptied with the
  message by a trigger;
- PostgreSQL: table ``sm_vectors`` (the same migration), whose rows reference their message
  (``ON DELETE CASCADE``);
- Redis: hash ``P s:D:vectors``, message id -> JSON ``{model key: base64 of the bytes}``
  (deleted with the message and the session; base64 adds a third);
- ``memory://``: beside the session, valid while the very message stored stays.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from session_migrator.messages._messages import Message
from session_migrator.recall._embeddings import DIGEST_BYTES, embedded_text, text_digest
from session_migrator.store import _codec
from session_migrator.store._codec import encode_key as ek
from session_migrator.store._guard import guard_class
from session_migrator.store._redis_schema import GUARD, schema_key

__all__ = ["MemoryVectors", "NoVectors", "PostgresVectors", "RedisVectors", "SQLiteVectors"]


#: How many message ids one SQLite query asks for (under SQLite's bound on a query's parameters).
_BATCH = 900


def made_from(raw: bytes, message: Message) -> bool:
    """Whether vector ``raw`` was made from ``message``'s text as it is: it starts with the
    digest of the message's embedded text (see ``recall._embeddings.text_digest``)."""
    return len(raw) > DIGEST_BYTES and raw[:DIGEST_BYTES] == text_digest(embedded_text(message))


class NoVectors:
    """The default of a store of one's own (a subclass of ``BaseSessionStore``): no vector is
    kept, so each fit embeds what it ranks again."""

    def get_vectors(self, session_id: str, model: str, ids: Iterable[str]) -> dict[str, bytes]:
        """The vectors of messages ``ids`` by embedding model ``model`` (ids without one left
        out)."""
        return {}

    def put_vectors(self, session_id: str, model: str, vectors: Mapping[str, bytes]) -> None:
        """Keep the vectors of messages by embedding model ``model`` (replacing older ones); a
        vector of a message the session does not hold is not kept."""

    def delete_vectors(self, model: str) -> int:
        """Delete every vector of embedding model ``model`` (a model renamed or retired), in
        every session; returns how many messages had one."""
        return 0


class MemoryVectors:
    """``memory://``'s vectors: per session, the stored message each vector is of."""

    _lock: threading.RLock
    _sessions: dict[str, Any]

    def _vector_slots(self) -> dict[str, tuple[Any, dict[str, dict[str, tuple[Any, bytes]]]]]:
        slots: dict[str, tuple[Any, dict[str, dict[str, tuple[Any, bytes]]]]] | None
        slots = self.__dict__.get("_vectors")
        if slots is None:
            slots = self.__dict__["_vectors"] = {}
        return slots

    def get_vectors(self, session_id: str, model: str, ids: Iterable[str]) -> dict[str, bytes]:
        """The vectors of messages ``ids`` by embedding model ``model`` (ids without one left
        out)."""
        with self._lock:
            session = self._sessions.get(session_id)
            held = self._vector_slots().get(session_id)
            if session is None or held is None or held[0] is not session:
                return {}
            by_id = held[1].get(model, {})
            out: dict[str, bytes] = {}
            for mid in ids:
                found = by_id.get(mid)
                if found is not None and session.messages.get(mid) is found[0]:
                    out[mid] = found[1]
            return out

    def put_vectors(self, session_id: str, model: str, vectors: Mapping[str, bytes]) -> None:
        """Keep the vectors of messages by embedding model ``model`` (replacing older ones);
        a vector of a message the session does not hold is not kept."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or not vectors:
                return
            slots = self._vector_slots()
            held = slots.get(session_id)
            if held is None or held[0] is not session:
                held = slots[session_id] = (session, {})
            by_id = held[1].setdefault(model, {})
            for mid, raw in vectors.items():
                stored = session.messages.get(mid)
                if stored is not None and made_from(bytes(raw), stored.message()):
                    by_id[mid] = (stored, bytes(raw))

    def delete_vectors(self, model: str) -> int:
        """See :meth:`NoVectors.delete_vectors`."""
        with self._lock:
            return sum(len(held[1].pop(model, {})) for held in self._vector_slots().values())

    def _drop_vectors(self, session_id: str, ids: Iterable[str] | None) -> None:
        """Forget the vectors of messages ``ids`` of the session (``None``: of all of it)."""
        slots = self._vector_slots()
        if ids is None:
            slots.pop(session_id, None)
            return
        held = slots.get(session_id)
        if held is not None:
            for by_id in held[1].values():
                for mid in ids:
                    by_id.pop(mid, None)


class SQLiteVectors:
    """SQLite's vectors (table ``vectors``)."""

    if TYPE_CHECKING:  # (the store's)

        def _conn(self) -> Any: ...

        def _write(self) -> Any: ...

    def get_vectors(self, session_id: str, model: str, ids: Iterable[str]) -> dict[str, bytes]:
        """See :meth:`MemoryVectors.get_vectors`."""
        sid, key = ek(session_id), ek(model)
        wanted = {ek(mid): mid for mid in ids}
        conn = self._conn()
        out: dict[str, bytes] = {}
        keys = list(wanted)
        for start in range(0, len(keys), _BATCH):  # one query a batch, not one a message
            batch = keys[start : start + _BATCH]
            rows = conn.execute(
                "SELECT message_id, vector FROM vectors WHERE session_id = ? AND model = ? "
                f"AND message_id IN ({', '.join('?' * len(batch))})",
                (sid, key, *batch),
            )
            for message_id, vector in rows:
                out[wanted[message_id]] = bytes(vector)
        return out

    def put_vectors(self, session_id: str, model: str, vectors: Mapping[str, bytes]) -> None:
        """See :meth:`MemoryVectors.put_vectors`."""
        if not vectors:
            return
        sid, key = ek(session_id), ek(model)
        wanted = {ek(mid): bytes(raw) for mid, raw in vectors.items()}
        keys = list(wanted)
        with self._write() as conn:  # (one transaction: the texts checked are those kept)
            for start in range(0, len(keys), _BATCH):
                batch = keys[start : start + _BATCH]
                bodies = conn.execute(
                    "SELECT id, body FROM messages WHERE session_id = ? "
                    f"AND id IN ({', '.join('?' * len(batch))})",
                    (sid, *batch),
                ).fetchall()
                conn.executemany(
                    "INSERT OR REPLACE INTO vectors (session_id, message_id, model, vector) "
                    "VALUES (?, ?, ?, ?)",
                    [
                        (sid, mid, key, wanted[mid])
                        for mid, body in bodies
                        if made_from(wanted[mid], _codec.message_from_json(body))
                    ],
                )

    def delete_vectors(self, model: str) -> int:
        """See :meth:`NoVectors.delete_vectors`."""
        with self._write() as conn:
            return int(conn.execute("DELETE FROM vectors WHERE model = ?", (ek(model),)).rowcount)


class PostgresVectors:
    """PostgreSQL's vectors (table ``sm_vectors``)."""

    if TYPE_CHECKING:  # (the store's)

        def _read(self, query: str, params: Any = ()) -> list[Any]: ...

        def _tx(self) -> Any: ...

    def get_vectors(self, session_id: str, model: str, ids: Iterable[str]) -> dict[str, bytes]:
        """See :meth:`MemoryVectors.get_vectors`."""
        keys = {_codec.index_key(mid): mid for mid in ids}
        if not keys:
            return {}
        rows = self._read(
            "SELECT message_id, vector FROM sm_vectors WHERE session_id = %s AND model = %s "
            "AND message_id = ANY(%s)",
            (_codec.index_key(session_id), _codec.index_key(model), list(keys)),
        )
        return {keys[r[0]]: bytes(r[1]) for r in rows}

    def put_vectors(self, session_id: str, model: str, vectors: Mapping[str, bytes]) -> None:
        """See :meth:`MemoryVectors.put_vectors`. The messages are read and locked (``FOR KEY
        SHARE``) in id order before their vectors are written, so a delete running meanwhile
        waits or has won (its vectors are then not written), and two writers never deadlock; a
        write that loses a race all the same is dropped (a vector is made again when needed)."""
        if not vectors:
            return
        sid = _codec.index_key(session_id)
        wanted = {_codec.index_key(mid): bytes(v) for mid, v in vectors.items()}
        for _attempt in range(3):
            try:
                with self._tx() as conn:
                    bodies = conn.execute(
                        "SELECT id, body FROM sm_messages WHERE session_id = %s "
                        "AND id = ANY(%s) ORDER BY id FOR KEY SHARE",
                        (sid, list(wanted)),
                    ).fetchall()
                    rows = [
                        (mid, wanted[mid])
                        for mid, body in bodies
                        if made_from(wanted[mid], _codec.message_from_json(body))
                    ]
                    if rows:
                        conn.execute(
                            "INSERT INTO sm_vectors (session_id, message_id, model, vector) "
                            "SELECT %s, t.mid, %s, t.v FROM unnest(%s::text[], %s::bytea[]) "
                            "AS t(mid, v) ORDER BY t.mid "
                            "ON CONFLICT (session_id, message_id, model) "
                            "DO UPDATE SET vector = EXCLUDED.vector",
                            (
                                sid,
                                _codec.index_key(model),
                                [r[0] for r in rows],
                                [r[1] for r in rows],
                            ),
                        )
                return
            except Exception as exc:
                if getattr(exc, "sqlstate", None) not in _LOST_RACE:
                    raise
                # (lost to a delete: tried again; after three, nothing kept, as is fine)

    def delete_vectors(self, model: str) -> int:
        """See :meth:`NoVectors.delete_vectors`."""
        with self._tx() as conn:
            cur = conn.execute(
                "DELETE FROM sm_vectors WHERE model = %s", (_codec.index_key(model),)
            )
            return int(cur.rowcount)


#: PostgreSQL errors of a vector write that lost a race with a delete: foreign_key_violation,
#: deadlock_detected, serialization_failure.
_LOST_RACE = frozenset({"23503", "40P01", "40001"})


#: KEYS bodies vectors schema; ARGV model, then (id sha1-of-body vector) triples. A vector is
#: kept only while its message's stored body is the one it was made from.
PUT_VECTORS = (
    GUARD
    + """
for i = 2, #ARGV, 3 do
  local body = redis.call('HGET', KEYS[1], ARGV[i])
  if body and redis.sha1hex(body) == ARGV[i + 1] then
    local current = redis.call('HGET', KEYS[2], ARGV[i])
    local held = {}
    if current then held = cjson.decode(current) end
    held[ARGV[1]] = ARGV[i + 2]
    redis.call('HSET', KEYS[2], ARGV[i], cjson.encode(held))
  end
end
return 0
"""
)


#: KEYS vectors; ARGV model: its vectors dropped from the hash; returns how many.
DROP_MODEL = """
local n = 0
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local held = cjson.decode(all[i + 1])
  if held[ARGV[1]] ~= nil then
    held[ARGV[1]] = nil
    n = n + 1
    if next(held) == nil then
      redis.call('HDEL', KEYS[1], all[i])
    else
      redis.call('HSET', KEYS[1], all[i], cjson.encode(held))
    end
  end
end
return n
"""


class RedisVectors:
    """Redis's vectors (hash ``P s:D:vectors``)."""

    _client: Any
    prefix: str

    if TYPE_CHECKING:  # (the store's)

        def _keys(self, session_id: str) -> Any: ...

        def _run(self, script: Any, keys: Any, args: Any) -> Any: ...

    def get_vectors(self, session_id: str, model: str, ids: Iterable[str]) -> dict[str, bytes]:
        """See :meth:`MemoryVectors.get_vectors`."""
        wanted = list(ids)
        if not wanted:
            return {}
        found = self._client.hmget(self._keys(session_id).vectors, [ek(mid) for mid in wanted])
        out: dict[str, bytes] = {}
        key = ek(model)
        for mid, raw in zip(wanted, found, strict=True):
            if raw is not None:
                text = _codec.loads(raw).get(key)
                if isinstance(text, str):
                    out[mid] = base64.b64decode(text)
        return out

    def put_vectors(self, session_id: str, model: str, vectors: Mapping[str, bytes]) -> None:
        """See :meth:`MemoryVectors.put_vectors`."""
        if not vectors:
            return
        script = self.__dict__.get("_vectors_script")
        if script is None:
            script = self.__dict__["_vectors_script"] = self._client.register_script(PUT_VECTORS)
        k = self._keys(session_id)
        ids = list(vectors)
        bodies = self._client.hmget(k.bodies, [ek(mid) for mid in ids])
        args: list[Any] = [ek(model)]
        for mid, body in zip(ids, bodies, strict=True):
            raw = bytes(vectors[mid])
            if body is not None and made_from(raw, _codec.message_from_json(body)):
                # (the script keeps it only if the body is still this one)
                sha = hashlib.sha1(body, usedforsecurity=False).hexdigest()
                args += [ek(mid), sha, base64.b64encode(raw).decode("ascii")]
        if len(args) > 1:
            self._run(script, (k.bodies, k.vectors, schema_key(self.prefix)), args)

    def delete_vectors(self, model: str) -> int:
        """See :meth:`NoVectors.delete_vectors`."""
        script = self.__dict__.get("_drop_model_script")
        if script is None:
            script = self.__dict__["_drop_model_script"] = self._client.register_script(DROP_MODEL)
        pattern = self._keys("x").vectors.replace(self._keys("x").digest, "*")
        total = 0
        for key in self._client.scan_iter(match=pattern, count=500):
            name = key.decode() if isinstance(key, bytes) else key
            total += int(self._run(script, (name,), [ek(model)]))
        return total


for _mixin in (NoVectors, MemoryVectors, SQLiteVectors, PostgresVectors, RedisVectors):
    guard_class(_mixin)  # (ids checked, driver errors translated, as every store method)
