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

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from session_migrator.store import BaseSessionStore, open_store

BACKENDS = ("memory", "sqlite", "redis", "postgres")


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
