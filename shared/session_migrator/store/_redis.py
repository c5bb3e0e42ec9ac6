"""``redis://host:6379/0``: a store in Redis (the ``redis`` package), for several machines.

Appends, loads, deletes and summary writes are Lua scripts (:mod:`._redis_scripts`), so each is
atomic on the server: an append numbers its new messages from the session's ``last_seq`` and
adds a message only when ``HSETNX`` finds its id new. Deleting a session and replacing metadata,
which touch index sets named after stored values, are ``WATCH``/``MULTI`` transactions.

A single Redis server (or a primary with replicas) is expected: a script touches a session's
keys and the shared index sets together, which Redis Cluster would spread over several slots.

Every key is the store's prefix (``?prefix=`` in the URL or the ``prefix`` argument; default
``session_migrator:``) plus fixed words and digests of ids: an id never becomes a key by
itself, so no id can reach another session's keys. Ids inside values are stored with
:func:`~._codec.encode_key`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from session_migrator._errors import MissingDependencyError, StoreError
from session_migrator.store import _codec
from session_migrator.store import _redis_scripts as lua
from session_migrator.store._backend import Clock, Record, display_url
from session_migrator.store._base import BaseSessionStore, window_places
from session_migrator.store._codec import decode_key as dk
from session_migrator.store._codec import encode_key as ek
from session_migrator.store._codec import key_digest
from session_migrator.store._types import (
    MessageNotFoundError,
    SessionInfo,
    from_epoch,
    sort_sessions,
)
from session_migrator.store._vectors import RedisVectors

try:
    import redis
except ImportError as exc:  # pragma: no cover - exercised by the dependency test
    raise MissingDependencyError("The Redis store", "redis") from exc

from session_migrator.store._redis_client import connect, warn_if_volatile
from session_migrator.store._redis_records import RedisRecords
from session_migrator.store._redis_schema import check_schema, schema_key
from session_migrator.store._redis_search import RedisSearch, record_words
from session_migrator.store._redis_ttl import RedisExpiry, ttl_millis, with_expiry

__all__ = ["DEFAULT_PREFIX", "RedisStore"]

DEFAULT_PREFIX = "session_migrator:"


@dataclass(frozen=True, slots=True)
class _Keys:
    digest: str
    meta: str
    order: str
    bodies: str
    times: str
    offload: str
    tokens: str
    summary: str
    migrations: str
    vectors: str
    leases: str
    words: str
    wordcounts: str

    @property
    def index(self) -> tuple[str, str]:
        return (self.words, self.wordcounts)

    @property
    def data(self) -> tuple[str, ...]:
        return (
            self.meta,
            self.order,
            self.bodies,
            self.times,
            self.offload,
            self.tokens,
            self.summary,
            self.migrations,
            self.vectors,
            self.leases,
            self.words,
            self.wordcounts,
        )


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


#: KEYS index-set; ARGV key-prefix: the fields of every session of the set, and the digests
#: of those whose keys expired, as one JSON text.
_LIST = """
local out, gone = {}, {}
for _, d in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local base = ARGV[1] .. 's:' .. d .. ':'
  local m = redis.call('HMGET', base .. 'meta', 'id', 'workspace', 'created_at', 'updated_at',
    'metadata')
  if m[1] then
    out[#out + 1] = {m[1], m[2], m[3], m[4], m[5] or '', redis.call('ZCARD', base .. 'order')}
  else
    gone[#gone + 1] = d
  end
end
return cjson.encode({out, gone})
"""


class RedisStore(RedisSearch, RedisExpiry, RedisVectors, RedisRecords, BaseSessionStore):
    """A session store in Redis (``redis://host:port/db``; ``ttl``: see :mod:`._redis_ttl`)."""

    backend_errors = (redis.RedisError,)
    backend_hint = "Check that Redis is running and reachable"

    def __init__(
        self,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        offload_threshold: int | None = None,
        clock: Clock | None = None,
        ttl: float | timedelta | None = None,
    ) -> None:
        super().__init__(offload_threshold=offload_threshold, clock=clock)
        if not prefix:
            raise StoreError("the Redis key prefix must not be empty")
        self.ttl_ms = ttl_millis(ttl)
        shown_ttl = None if self.ttl is None else f"{self.ttl:g}"
        self.url = display_url(
            url, prefix=None if prefix == DEFAULT_PREFIX else prefix, ttl=shown_ttl
        )
        self.prefix = prefix
        try:
            self._client: redis.Redis = connect(url)
            self._client.ping()
        except (redis.RedisError, ValueError) as exc:  # (ValueError: a bad URL parameter)
            if hasattr(self, "_client"):
                self._client.close()
            raise StoreError(
                f"cannot connect to Redis at {self.url!r}: {exc}. Check that Redis is running and "
                "the URL (host, port, database number, parameters) is right."
            ) from exc
        warn_if_volatile(self._client, self.url)
        try:
            check_schema(self._client, prefix, self.url)
        except BaseException:
            self._client.close()
            raise
        register = self._client.register_script
        self._append_script = register(lua.APPEND)
        self._load_script = register(lua.LOAD)
        self._delete_script = register(lua.DELETE_IDS)
        self._summary_script = register(lua.PUT_SUMMARY)
        self._tokens_script = register(lua.PUT_TOKENS)
        self._log_script = register(lua.LOG_MIGRATION)
        self._acquire_script = register(lua.ACQUIRE_LEASE)
        self._release_script = register(lua.RELEASE_LEASE)

    # -- keys -------------------------------------------------------------------------------

    def _keys(self, session_id: str) -> _Keys:
        digest = key_digest(session_id)
        base = f"{self.prefix}s:{digest}:"
        return _Keys(
            digest,
            *(base + name for name in _KEY_NAMES),
        )

    @property
    def _all_key(self) -> str:
        return f"{self.prefix}sessions"

    def _workspace_key(self, workspace: str) -> str:
        return f"{self.prefix}ws:{key_digest(workspace)}"

    def _user_key(self, user_id: str) -> str:
        return f"{self.prefix}user:{key_digest(user_id)}"

    def _run(self, script: Any, keys: Sequence[str], args: Sequence[Any]) -> Any:
        return script(keys=list(keys), args=list(args))

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
        k = self._keys(session_id)
        user_key = self._user_key(user_id) if user_id is not None else f"{self.prefix}user:-"
        args: list[str] = [
            ek(session_id),
            ek(workspace),
            metadata,
            ek(user_id) if user_id is not None else "",
            repr(now),
            k.digest,
            self._word_prefix,
        ]
        for record in records:
            args += [ek(record.id), record.body, record.full or "", record_words(record)]
        keys = (k.meta, k.order, k.bodies, k.times, k.offload, self._all_key)
        index = (self._workspace_key(workspace), user_key, k.words, k.wordcounts)
        added = int(self._run(self._append_script, (*keys, *index, schema_key(self.prefix)), args))
        if self.ttl_ms is not None:
            self.sweep_index()  # (the index entries of sessions expired since, a step at a time)
        return added

    def _load_bodies(self, session_id: str, after: str | None) -> tuple[list[str], int]:
        k = self._keys(session_id)
        args = ["0", ""] if after is None else ["1", ek(after)]
        reply = self._run(self._load_script, (k.meta, k.order, k.bodies), args)
        status = int(reply[0])
        if status == 0:
            return [], 0
        if status == 2:
            assert after is not None
            raise MessageNotFoundError(session_id, after)
        return [_text(b) for b in reply[2:] if b is not None], int(reply[1])

    def _bodies_around(
        self, session_id: str, ids: list[str], before: int, after: int
    ) -> list[str] | None:
        k = self._keys(session_id)
        pipe = self._client.pipeline(transaction=False)
        for mid in ids:
            pipe.zrank(k.order, ek(mid))
        places = [int(p) for p in pipe.execute() if p is not None]
        if not places:
            return []
        members = self._client.zrange(k.order, max(min(places) - before, 0), max(places) + after)
        order = [_text(m) for m in members]
        first = max(min(places) - before, 0)
        wanted = [order[p - first] for p in places if 0 <= p - first < len(order)]
        chosen = [order[p] for p in window_places(order, wanted, before, after)]
        if not chosen:
            return []
        return [_text(b) for b in self._client.hmget(k.bodies, chosen) if b is not None]

    def _message_ids(self, session_id: str) -> list[str]:
        return [dk(_text(m)) for m in self._client.zrange(self._keys(session_id).order, 0, -1)]

    def _delete_ids(self, session_id: str, ids: Sequence[str], now: float) -> int:
        k = self._keys(session_id)
        keys = (k.meta, k.order, k.bodies, k.times, k.offload, k.tokens, k.vectors, *k.index)
        args = [self._word_prefix, k.digest, *(ek(mid) for mid in ids)]
        return int(self._run(self._delete_script, keys, args))

    def _offloaded_bodies(self, session_id: str, ids: Sequence[str]) -> dict[str, str]:
        if not ids:
            return {}
        found = self._client.hmget(self._keys(session_id).offload, [ek(mid) for mid in ids])
        return {mid: _text(body) for mid, body in zip(ids, found, strict=True) if body is not None}

    def _delete_session(self, session_id: str, *, only_if_empty: bool) -> bool:
        k = self._keys(session_id)
        with self._client.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(k.meta, k.order, k.leases, k.wordcounts)  # type: ignore[no-untyped-call]
                    meta = pipe.hgetall(k.meta)
                    if not meta or (only_if_empty and pipe.zcard(k.order) > 0):
                        pipe.unwatch()
                        return False
                    user = _text(meta.get(b"user_id", b""))
                    leases = [_text(key) for key in pipe.smembers(k.leases)]
                    words = [_text(w) for w in pipe.hkeys(k.wordcounts)]
                    pipe.multi()
                    pipe.delete(*k.data, *leases)
                    for word in words:  # (its search index entries, see _redis_search)
                        pipe.srem(self._word_prefix + word, k.digest)
                    pipe.srem(self._all_key, k.digest)
                    pipe.srem(self._workspace_key(dk(_text(meta[b"workspace"]))), k.digest)
                    if user:
                        pipe.srem(self._user_key(dk(user)), k.digest)
                    pipe.execute()
                    return True
                except redis.WatchError:
                    continue  # a concurrent write touched the session: look again

    def _members(self, index_key: str) -> list[str]:
        digests = sorted(_text(d) for d in self._client.smembers(index_key))
        pipe = self._client.pipeline(transaction=False)
        for digest in digests:
            pipe.hget(f"{self.prefix}s:{digest}:meta", "id")
        found = pipe.execute()
        # (a session whose keys expired: its entry goes too)
        self._forget_expired(index_key, [d for d, s in zip(digests, found, strict=True) if not s])
        return [dk(_text(sid)) for sid in found if sid is not None]

    def _ids_in(self, workspace: str) -> list[str]:
        return self._members(self._workspace_key(workspace))

    def _ids_of_user(self, user_id: str) -> list[str]:
        return self._members(self._user_key(user_id))

    def _messages_before(self, cutoff: float) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for session_id in self._members(self._all_key):
            old = self._client.zrangebyscore(self._keys(session_id).times, "-inf", f"({cutoff!r}")
            if old:
                out[session_id] = [dk(_text(m)) for m in old]
        return out

    def _set_metadata(
        self, session_id: str, metadata: str, user_id: str | None, now: float
    ) -> bool:
        k = self._keys(session_id)
        with self._client.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(k.meta)  # type: ignore[no-untyped-call]
                    old = pipe.hget(k.meta, "user_id")
                    if old is None:
                        pipe.unwatch()
                        return False
                    pipe.multi()
                    pipe.hset(
                        k.meta,
                        mapping={
                            "metadata": metadata,
                            "user_id": ek(user_id) if user_id is not None else "",
                            "updated_at": repr(now),
                        },
                    )
                    if old:
                        pipe.srem(self._user_key(dk(_text(old))), k.digest)
                    if user_id is not None:
                        pipe.sadd(self._user_key(user_id), k.digest)
                    pipe.execute()
                    return True
                except redis.WatchError:
                    continue

    # -- simple reads and writes ------------------------------------------------------------

    def _infos(self, session_ids: Iterable[str]) -> list[SessionInfo]:
        pipe = self._client.pipeline(transaction=False)
        for session_id in session_ids:
            k = self._keys(session_id)
            pipe.hgetall(k.meta)
            pipe.zcard(k.order)
        replies = pipe.execute()
        infos: list[SessionInfo] = []
        for meta, count in zip(replies[::2], replies[1::2], strict=True):
            if meta:
                infos.append(
                    SessionInfo(
                        id=dk(_text(meta[b"id"])),
                        workspace=dk(_text(meta[b"workspace"])),
                        message_count=int(count),
                        created_at=from_epoch(float(meta[b"created_at"])),
                        updated_at=from_epoch(float(meta[b"updated_at"])),
                        metadata=_codec.loads_metadata(meta[b"metadata"]),
                    )
                )
        return infos

    def get_session(self, session_id: str) -> SessionInfo | None:
        infos = self._infos([session_id])
        return infos[0] if infos else None

    def list_sessions(self, workspace: str | None = "default") -> list[SessionInfo]:
        index = self._all_key if workspace is None else self._workspace_key(workspace)
        script = self.__dict__.get("_list_script")
        if script is None:
            script = self.__dict__["_list_script"] = self._client.register_script(_LIST)
        # one script reads every session's fields, one JSON reply (not a reply per field)
        listed, gone = json.loads(script(keys=[index], args=[self.prefix]))
        self._forget_expired(index, list(gone or ()))  # (its keys expired: its entry goes too)
        return sort_sessions(
            [
                SessionInfo(
                    id=dk(sid),
                    workspace=dk(workspace_id),
                    message_count=int(count),
                    created_at=from_epoch(float(created)),
                    updated_at=from_epoch(float(updated)),
                    metadata=_codec.loads_metadata(metadata or "{}"),
                )
                for sid, workspace_id, created, updated, metadata, count in (listed or ())
            ]
        )

    def close(self) -> None:
        self._client.close()


with_expiry(RedisStore)  # (each access of a session sets its expiry again: see _redis_ttl)

_KEY_NAMES = (
    "meta",
    "order",
    "bodies",
    "times",
    "offload",
    "tokens",
    "summary",
    "migrations",
    "vectors",
    "leases",
    "words",
    "wordcounts",
)
