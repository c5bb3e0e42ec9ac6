"""``open_store(url)``: pick the backend from the URL's scheme.

==================================  ==========================================================
``memory://``                       in this process's memory (a new empty store each time)
``sqlite:///relative/path.db``      SQLite file relative to the working directory
``sqlite:////absolute/path.db``     SQLite file at an absolute path (``~`` is expanded)
``redis://host:6379/0``             Redis (``?prefix=`` sets the key prefix, ``?ttl=`` seconds
                                    a session lives after its last access)
``postgresql://user@host/db``       PostgreSQL, also ``postgres://`` (``?schema=`` sets a schema)
==================================  ==========================================================

``redis`` and ``psycopg`` are imported only when their URL is opened; when missing, a
:class:`~session_migrator.MissingDependencyError` names the extra to install.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from session_migrator._config import data_home, default_store_url
from session_migrator._errors import StoreError
from session_migrator.store._base import BaseSessionStore

__all__ = ["SCHEMES", "open_store"]

SCHEMES = ("memory://", "sqlite:///", "redis://", "rediss://", "postgresql://", "postgres://")

_COMMON = {"offload_threshold", "clock"}
_OPTIONS = {
    "memory": _COMMON,
    "sqlite": _COMMON | {"busy_timeout"},
    "redis": _COMMON | {"prefix", "ttl"},
    "postgres": _COMMON | {"schema"},
}


def open_store(
    url: str | None = None, *, home: str | os.PathLike[str] | None = None, **options: Any
) -> BaseSessionStore:
    """Open the session store at ``url``.

    ``url=None`` uses ``SESSION_MIGRATOR_STORE``, else ``sessions.db`` under ``home`` (default:
    ``SESSION_MIGRATOR_HOME`` or the user's data directory); an explicit ``home`` skips the
    environment variable. ``options`` go to the backend: ``offload_threshold`` (tokens; large
    tool outputs are kept apart with a preview inline) and ``clock`` for all; ``busy_timeout``
    (seconds) for SQLite, ``prefix`` and ``ttl`` for Redis, ``schema`` for PostgreSQL.

    ``ttl`` (Redis only; seconds or a :class:`~datetime.timedelta`, also ``?ttl=`` in the URL):
    every key of a session expires that long after the session's last read or write, and an
    expired session vanishes whole (see :mod:`session_migrator.store._redis_ttl`). The other
    backends refuse it: ``store.purge_older_than(days)`` deletes old messages there.

    >>> store = open_store("memory://")
    >>> store.list_sessions()
    []
    """
    if url is None:
        url = (
            f"sqlite:///{data_home(home) / 'sessions.db'}"
            if home is not None
            else default_store_url()
        )
    if not url.strip():
        raise StoreError("the store URL is empty; " + _accepted())
    url = url.strip()
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme not in ("redis", "rediss") and ("ttl" in options or _has_ttl(url)):
        kind = {"postgresql": "PostgreSQL", "postgres": "PostgreSQL", "sqlite": "SQLite"}.get(
            scheme, scheme
        )
        raise StoreError(
            f"ttl is for Redis only: a {kind or 'this'} store has no expiring keys; delete old "
            "messages with store.purge_older_than(days) instead (e.g. from a daily job)"
        )
    if scheme == "memory":
        if url.lower() not in ("memory://", "memory:"):
            raise StoreError(f"{url!r}: a memory store takes no path; use 'memory://'")
        from session_migrator.store._memory import MemoryStore

        return MemoryStore(**_checked("memory", options))
    if scheme == "sqlite":
        return _open_sqlite(url, options)
    if scheme in ("redis", "rediss"):
        base, params = _split_params(url, "prefix")
        if "prefix" in params:
            options = {"prefix": params["prefix"], **options}
        base, params = _split_params(base, "ttl")
        if "ttl" in params:
            options = {"ttl": params["ttl"], **options}
        from session_migrator.store._redis import RedisStore

        return RedisStore(base, **_checked("redis", options))
    if scheme in ("postgresql", "postgres"):
        base, params = _split_params(url, "schema")
        if "schema" in params:
            options = {"schema": params["schema"], **options}
        from session_migrator.store._postgres import PostgresStore

        return PostgresStore(base, **_checked("postgres", options))
    raise StoreError(f"unknown store URL {url!r}; " + _accepted())


def _open_sqlite(url: str, options: dict[str, Any]) -> BaseSessionStore:
    if not url.lower().startswith("sqlite:///"):
        raise StoreError(
            f"{url!r}: a SQLite URL has three slashes before the path: 'sqlite:///relative.db' "
            "or 'sqlite:////absolute/path.db'"
        )
    raw = url[len("sqlite:///") :]
    if raw in ("", ":memory:"):
        raise StoreError(
            f"{url!r} names no file; give a path ('sqlite:///sessions.db') or use 'memory://' "
            "for a throwaway store"
        )
    from session_migrator.store._sqlite import SQLiteStore

    return SQLiteStore(Path(raw).expanduser(), **_checked("sqlite", options))


def _has_ttl(url: str) -> bool:
    """Whether ``url`` has a ``ttl`` query parameter."""
    return any(k == "ttl" for k, _ in parse_qsl(urlsplit(url).query, keep_blank_values=True))


def _split_params(url: str, name: str) -> tuple[str, dict[str, str]]:
    """``url`` without the query parameter ``name``, and the value taken out."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    taken = {k: v for k, v in query if k == name}
    rest = [(k, v) for k, v in query if k != name]
    return urlunsplit(parts._replace(query=urlencode(rest))), taken


def _checked(kind: str, options: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(options) - _OPTIONS[kind])
    if unknown:
        raise StoreError(
            f"the {kind} store does not take {', '.join(unknown)}; it takes "
            f"{', '.join(sorted(_OPTIONS[kind]))}"
        )
    return options


def _accepted() -> str:
    return (
        "accepted: memory://, sqlite:///path/to.db (sqlite:////abs/path.db), "
        "redis://host:6379/0, postgresql://user@host:5432/db (or postgres://)"
    )
