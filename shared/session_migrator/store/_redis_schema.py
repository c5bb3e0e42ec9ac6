"""The Redis store's schema version: kept under ``P schema``, checked when a store opens and by
every write of a message or a vector.

SQLite and PostgreSQL record the migrations applied (see ``_sqlite_schema``); Redis has no
tables to migrate, so the key layout (see ``_redis_scripts``) carries one number:

- ``1``: before the key existed (vectors keyed by message id alone, user ids strings only);
- ``2``: a vector starts with the digest of the text it was made from; a metadata ``user_id``
  that is an integer is indexed as its decimal string;
- ``3``: sessions hold leases (``s:D:leases`` and ``s:D:lease:<digest>``), which a deleted
  session takes with it.

Opening a store upgrades data of an older version in place (version 1 -> 2: the vectors kept
before, never served again, are dropped; sessions with an integer ``user_id`` are indexed;
version 2 -> 3: nothing to change, no lease existed before) and
refuses data of a newer version with a :class:`~session_migrator.StoreError`. A process of
another version still running is refused by its next write of a message or a vector, as the
scripts check the number (:data:`GUARD`), rather than writing what this version cannot read.
"""

from __future__ import annotations

from typing import Any

from session_migrator._errors import StoreError
from session_migrator.store import _codec
from session_migrator.store._backend import normal_user_id
from session_migrator.store._codec import encode_key as ek
from session_migrator.store._codec import key_digest
from session_migrator.store._redis_search import index_stored

__all__ = ["GUARD", "SCHEMA", "check_schema", "schema_key"]

#: The version of the key layout this session-migrator reads and writes.
SCHEMA = 4

#: Lua that opens a write script: refuses when the schema key (its last KEYS) is not SCHEMA.
GUARD = f"""
local schema = redis.call('GET', KEYS[#KEYS])
if schema ~= '{SCHEMA}' then
  return redis.error_reply('session-migrator: the Redis data is of schema version ' ..
    tostring(schema) .. ', and this process writes version {SCHEMA}; run one version of ' ..
    'session-migrator on a store (upgrade the older processes)')
end
"""


_UPGRADE_FROM_2 = """
if redis.call('GET', KEYS[1]) == '2' then redis.call('SET', KEYS[1], '3') end
return 0
"""

_UPGRADE_FROM_3 = """
if redis.call('GET', KEYS[1]) == '3' then redis.call('SET', KEYS[1], '4') end
return 0
"""


def schema_key(prefix: str) -> str:
    """The key holding the schema version of the store under ``prefix``."""
    return f"{prefix}schema"


def check_schema(client: Any, prefix: str, url: str) -> None:
    """Upgrade the data under ``prefix`` to :data:`SCHEMA` if it is older; refuse it if newer."""
    key = schema_key(prefix)
    found = client.get(key)
    if found is None:
        if client.exists(f"{prefix}sessions"):
            _upgrade_from_1(client, prefix)
        client.set(key, SCHEMA, nx=True)  # (two processes opening at once: one sets it)
        found = client.get(key)
    elif found in (b"2", "2"):
        # 2 -> 3: the lease keys are new, nothing to change (compare and set: a process of a
        # newer version may have moved it on meanwhile)
        client.eval(_UPGRADE_FROM_2, 1, key)
        found = client.get(key)
    if found in (b"3", "3"):
        # 3 -> 4: the search index (see _redis_search), built from the stored messages
        index_stored(client, prefix)
        client.eval(_UPGRADE_FROM_3, 1, key)
        found = client.get(key)
    shown = found.decode() if isinstance(found, bytes) else str(found)
    try:
        version = int(shown)
    except ValueError:
        version = -1
    if version != SCHEMA:
        newer = version > SCHEMA
        raise StoreError(
            f"the Redis store {url!r} is of schema version {shown!r}, and this "
            f"session-migrator reads version {SCHEMA}: "
            + (
                "it was written by a newer session-migrator; upgrade session-migrator to open it"
                if newer
                else "its schema key is not one session-migrator writes; check the key prefix"
            )
        )


def _upgrade_from_1(client: Any, prefix: str) -> None:
    """Version 1 -> 2, session by session (each step is safe to repeat)."""
    for raw in client.smembers(f"{prefix}sessions"):
        digest = raw.decode() if isinstance(raw, bytes) else raw
        base = f"{prefix}s:{digest}:"
        client.delete(base + "vectors")
        meta = client.hmget(base + "meta", ["user_id", "metadata"])
        if meta[0] not in (None, b"", "") or meta[1] is None:
            continue
        user_id = normal_user_id(_codec.loads(meta[1]).get("user_id"))
        if user_id is not None:
            client.hset(base + "meta", "user_id", ek(user_id))
            client.sadd(f"{prefix}user:{key_digest(user_id)}", digest)
