"""The Redis store's session TTL: ``redis://host:6379/0?ttl=3600`` or ``open_store(url, ttl=...)``.

With a TTL, every key of a session (its metadata, messages, times, offloaded outputs, token
counts, summary, migration log, vectors and lease set: ``P s:D:*``) expires ``ttl`` seconds
after the session was last accessed: every read or write of that session (``load``,
``get_session``, ``get_summary``, ``append``, ``put_vectors``, ...) sets the expiry of all its
keys again, in one script, so they share one deadline and vanish together. Listing sessions is
not an access (a periodic listing does not keep every session alive).

A session that expired vanishes whole: its keys go, and the shared index sets (every session,
a workspace's, a user's), whose members cannot expire one by one, drop its entry the next time
they are read (``list_sessions``, ``erase_user``, recall across sessions, ``user_messages``),
so it is never listed. A lease key keeps its own, shorter expiry. Its entries in the search
index's word sets (``P w:<word>``) go the same way when a search meets them, and every write of
a store with a TTL sweeps a step of them (:meth:`RedisExpiry.sweep_index`: the next
:data:`SWEEP_COUNT` slots of the key space), so that they go even for words no search asks.

Every process on a store should open it with the same ``ttl``: a process without one neither
sets nor refreshes expiries. The other backends have no per-key expiry and refuse ``ttl``:
``purge_older_than(days)`` deletes old messages there (and here too).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from session_migrator._errors import StoreError
from session_migrator.store._types import MigrationRecord

__all__ = ["TOUCHED", "RedisExpiry", "ttl_millis", "with_expiry"]

#: KEYS the session's keys; ARGV ttl-ms. One deadline for all (a script's time is frozen).
TOUCH = """
for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
return 0
"""

#: KEYS index-set meta-key; ARGV digest. Drops the entry of a session whose keys expired.
FORGET = """
if redis.call('EXISTS', KEYS[2]) == 0 then redis.call('SREM', KEYS[1], ARGV[1]) end
return 0
"""

#: KEYS word sets; ARGV session-key-prefix. Drops from each set the sessions whose keys expired.
SWEEP = """
local n = 0
for _, key in ipairs(KEYS) do
  for _, d in ipairs(redis.call('SMEMBERS', key)) do
    if redis.call('EXISTS', ARGV[1] .. d .. ':meta') == 0 then
      redis.call('SREM', key, d)
      n = n + 1
    end
  end
end
return n
"""

#: How many slots of the key space one step of the sweep of the search index looks at (see
#: :meth:`RedisExpiry.sweep_index`).
SWEEP_COUNT = 1_000

#: The store methods that access one session, and so refresh its expiry once they are done.
TOUCHED = (
    "append",
    "load",
    "load_since",
    "get_session",
    "set_metadata",
    "delete_messages",
    "delete_range",
    "delete_by_tool",
    "get_summary",
    "put_summary",
    "get_token_counts",
    "put_token_counts",
    "get_vectors",
    "put_vectors",
    "log_migration",
    "migrations",
    "get_offloaded",
    "acquire_lease",
    "release_lease",
)


def ttl_millis(ttl: object) -> int | None:
    """``ttl`` (seconds, a :class:`~datetime.timedelta`, a URL's text, or ``None``) in
    milliseconds; anything else, or not positive, is a :class:`StoreError`."""
    if ttl is None:
        return None
    if isinstance(ttl, timedelta):
        seconds = ttl.total_seconds()
    elif isinstance(ttl, (int, float, str)) and not isinstance(ttl, bool):
        try:
            seconds = float(ttl)
        except ValueError:
            seconds = -1.0
    else:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        raise StoreError(
            f"ttl must be a number of seconds > 0 or a timedelta (e.g. ttl=3600 or ?ttl=3600), "
            f"got {ttl!r}"
        )
    return max(1, round(seconds * 1000))


def _touching(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)  # (its guard too: ids checked, driver errors translated)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = method(self, *args, **kwargs)
        if self.ttl_ms is not None:
            first = kwargs.get("session_id", kwargs.get("record", args[0] if args else None))
            try:
                self._touch(first.session_id if isinstance(first, MigrationRecord) else first)
            except self.backend_errors as exc:
                raise self.store_error(method.__name__, exc) from exc
        return result

    return run


def with_expiry(cls: type) -> None:
    """Make each of :data:`TOUCHED` of ``cls`` (a :class:`RedisExpiry`) set the session's
    expiry again once it is done."""
    for name in TOUCHED:
        setattr(cls, name, _touching(getattr(cls, name)))


class RedisExpiry:
    """The TTL part of :class:`~session_migrator.store._redis.RedisStore` (see the module)."""

    ttl_ms: int | None = None
    _client: Any
    prefix: str

    if TYPE_CHECKING:  # (the store's)

        def _keys(self, session_id: str) -> Any: ...

    @property
    def ttl(self) -> float | None:
        """The sessions' time to live in seconds (``None``: they never expire)."""
        return None if self.ttl_ms is None else self.ttl_ms / 1000

    def _touch(self, session_id: object) -> None:
        if not isinstance(session_id, str):
            return
        script = self.__dict__.get("_touch_script")
        if script is None:
            script = self.__dict__["_touch_script"] = self._client.register_script(TOUCH)
        script(keys=list(self._keys(session_id).data), args=[self.ttl_ms])

    def sweep_index(self, count: int = SWEEP_COUNT) -> bool:
        """One step of the sweep of the search index: the word sets among the next ``count``
        slots of the key space drop the sessions whose keys expired. ``True`` when the step
        ended a pass over the whole key space."""
        state = self.__dict__
        script = state.get("_sweep_script")
        if script is None:
            script = state["_sweep_script"] = self._client.register_script(SWEEP)
        cursor, keys = self._client.scan(
            state.get("_sweep_cursor", 0), match=_glob(f"{self.prefix}w:") + "*", count=count
        )
        state["_sweep_cursor"] = int(cursor)
        if keys:
            script(keys=list(keys), args=[f"{self.prefix}s:"])
        return int(cursor) == 0

    def _forget_expired(self, index_key: str, digests: list[str]) -> None:
        """Drop from ``index_key`` the entries of ``digests`` whose session is gone."""
        script = self.__dict__.get("_forget_script")
        if script is None:
            script = self.__dict__["_forget_script"] = self._client.register_script(FORGET)
        for digest in digests:
            script(keys=[index_key, f"{self.prefix}s:{digest}:meta"], args=[digest])


def _glob(text: str) -> str:
    """``text`` matched as it is by a ``SCAN ... MATCH`` pattern."""
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)
