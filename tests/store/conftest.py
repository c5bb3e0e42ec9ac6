"""Store fixtures: one contract suite over every backend, each test isolated.

- ``memory``: a fresh in-process store;
- ``sqlite``: a fresh file in the test's tmp dir;
- ``redis``: the real server (``SESSION_MIGRATOR_TEST_REDIS_URL``, default
  ``redis://127.0.0.1:6379/0``) under a key prefix of its own, whose keys are deleted after;
- ``postgres``: the real server (``SESSION_MIGRATOR_TEST_POSTGRES_URL``, default
  ``postgresql://postgres@127.0.0.1:5432/test``) in a schema of its own, dropped after.

Without a server the test is skipped with the reason shown (``-ra``); under ``CI=true`` it fails.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from session_migrator.store import BaseSessionStore, open_store

REDIS_URL = os.environ.get("SESSION_MIGRATOR_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
POSTGRES_URL = os.environ.get(
    "SESSION_MIGRATOR_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
BACKENDS = ("memory", "sqlite", "redis", "postgres")

_reachable: dict[str, str | None] = {}


def _probe(kind: str) -> str | None:
    """``None`` when the server answers, else why not (checked once per run)."""
    if kind in _reachable:
        return _reachable[kind]
    reason: str | None = None
    try:
        if kind == "redis":
            import redis

            client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
            try:
                client.ping()
            finally:
                client.close()
        else:
            import psycopg

            psycopg.connect(POSTGRES_URL, connect_timeout=2).close()
    except Exception as exc:
        reason = f"{type(exc).__name__}: {str(exc).strip()}"
    _reachable[kind] = reason
    return reason


def require_server(kind: str) -> None:
    """Skip (fail under CI=true) when the ``redis`` or ``postgres`` server is not reachable."""
    reason = _probe(kind)
    if reason is None:
        return
    url = REDIS_URL if kind == "redis" else POSTGRES_URL
    message = f"{kind} server not reachable at {url} ({reason})"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message}; CI=true requires every backend", pytrace=False)
    pytest.skip(f"{message}; start it to run the {kind} store tests")


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A Redis store URL with a key prefix of this test's own; its keys are deleted after."""
    require_server("redis")
    import redis

    prefix = f"smtest:{uuid.uuid4().hex}:"
    yield f"{REDIS_URL}?prefix={prefix}"
    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL store URL with a schema of this test's own, dropped after."""
    require_server("postgres")
    import psycopg
    from psycopg import sql

    schema = f"smtest_{uuid.uuid4().hex}"
    yield f"{POSTGRES_URL}?schema={schema}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def _marks(backend: str) -> list[pytest.MarkDecorator]:
    return [getattr(pytest.mark, backend)] if backend in ("redis", "postgres") else []


@pytest.fixture(params=[pytest.param(b, marks=_marks(b), id=b) for b in BACKENDS])
def backend(request: pytest.FixtureRequest) -> str:
    """The backend under test: memory, sqlite, redis or postgres."""
    return str(request.param)


@pytest.fixture
def store_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL for an empty store of ``backend``."""
    if backend == "memory":
        return "memory://"
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'store' / 'sessions.db'}"
    return str(request.getfixturevalue(f"{backend}_url"))


StoreFactory = Callable[..., BaseSessionStore]


@pytest.fixture
def make_store(store_url: str) -> Iterator[StoreFactory]:
    """Open the test's store (again) with options; every store is closed after the test.

    A ``memory://`` store is new each time; the others reopen the same data.
    """
    opened: list[BaseSessionStore] = []

    def factory(**options: Any) -> BaseSessionStore:
        store = open_store(store_url, **options)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> BaseSessionStore:
    """An empty store of the backend under test."""
    return make_store()


class FakeClock:
    """A settable clock (epoch seconds) for ``open_store(..., clock=...)``."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
