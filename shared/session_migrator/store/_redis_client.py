"""The Redis store's client: bounded waits by default, and a word when the server keeps nothing.

Defaults, each overridden by the same parameter in the URL's query (redis-py reads them there,
e.g. ``redis://host:6379/0?socket_timeout=2``):

==========================  ======  =========================================================
``socket_connect_timeout``  5       seconds to open a connection
``socket_timeout``          10      seconds to wait for any reply (a frozen server included)
``socket_keepalive``        true    TCP keepalives on every connection
``health_check_interval``   30      seconds idle before a connection is checked (PING) on use
==========================  ======  =========================================================

A connection error is retried once at once (the next attempt opens a new connection: a server
that restarted is reached again); a timeout is not retried, so a call waits at most about
``socket_timeout``. A retried append is safe: it sends the same message ids.
"""

from __future__ import annotations

import warnings
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from session_migrator._errors import StoreDurabilityWarning

__all__ = ["DEFAULTS", "connect", "warn_if_volatile"]

DEFAULTS: dict[str, Any] = {
    "socket_connect_timeout": 5.0,
    "socket_timeout": 10.0,
    "socket_keepalive": True,
    "health_check_interval": 30,
}


def connect(url: str) -> redis.Redis:
    """A client for ``url`` with the defaults above (the URL's own parameters win)."""
    retry = Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,))
    return redis.Redis.from_url(url, decode_responses=False, retry=retry, **DEFAULTS)


def _setting(client: redis.Redis, name: str) -> str:
    found: Any = client.config_get(name)
    for key, value in found.items():
        if (key.decode() if isinstance(key, bytes) else key) == name:
            return value.decode() if isinstance(value, bytes) else str(value)
    return ""


def warn_if_volatile(client: redis.Redis, url: str) -> None:
    """Warn (:class:`~session_migrator.StoreDurabilityWarning`) when the server keeps nothing
    across a restart: no RDB snapshots (``save ""``) and no append-only file. Says nothing when
    ``CONFIG`` is not allowed (managed Redis often disables it)."""
    try:
        save, appendonly = _setting(client, "save"), _setting(client, "appendonly")
    except redis.RedisError:
        return
    if save.strip() == "" and appendonly.strip().lower() == "no":
        warnings.warn(
            f"the Redis server of the store {url!r} keeps nothing across a restart (CONFIG GET "
            'save is "" and appendonly is no): every stored session is lost when it restarts. '
            "Turn on persistence there (appendonly yes, or a save schedule) for sessions you keep.",
            StoreDurabilityWarning,
            stacklevel=4,
        )
