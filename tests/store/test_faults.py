"""Faults on real servers of the test's own: Redis (AOF on) and PostgreSQL, killed (SIGKILL) and
frozen (SIGSTOP). Every call comes back within a bound as a StoreError, and nothing a call
acknowledged is lost once the server is back.

Timeouts are set to 2 s in the URLs; the assertions allow 10 s (a loaded machine).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from session_migrator import Message, StoreError
from session_migrator.store import BaseSessionStore, open_store
from tests.store._servers import PostgresServer, RedisServer

BOUND = 10.0  # seconds, against 2 s timeouts

Server = RedisServer | PostgresServer


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    folder = tmp_path_factory.mktemp("redis-faults")
    server = RedisServer(folder, "--appendonly", "yes", "--appendfsync", "always", "--save", "")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    yield server
    server.stop()


def _redis_url(server: Server) -> str:
    return f"{server.url}?socket_timeout=2&socket_connect_timeout=2"


def _postgres_url(server: Server) -> str:
    return f"{server.url}?connect_timeout=2&statement_timeout=2"


KINDS = [
    pytest.param("redis", marks=pytest.mark.redis, id="redis"),
    pytest.param("postgres", marks=pytest.mark.postgres, id="postgres"),
]


@pytest.fixture
def server(request: pytest.FixtureRequest, kind: str) -> Server:
    found: Server = request.getfixturevalue(f"{kind}_server")
    return found


def _url(kind: str, server: Server) -> str:
    return _redis_url(server) if kind == "redis" else _postgres_url(server)


def _timed(call: Callable[[], Any]) -> tuple[float, BaseException | None]:
    started = time.monotonic()
    try:
        call()
    except BaseException as exc:  # (returned to be asserted on)
        return time.monotonic() - started, exc
    return time.monotonic() - started, None


CALLS: dict[str, Callable[[BaseSessionStore], Any]] = {
    "append": lambda s: s.append("s", [Message("user", "during")]),
    "load": lambda s: s.load("s"),
    "get_session": lambda s: s.get_session("s"),
    "list_sessions": lambda s: s.list_sessions(None),
    "get_summary": lambda s: s.get_summary("s"),
    "migrations": lambda s: s.migrations("s"),
}


def _assert_store_error_within(took: float, exc: BaseException | None) -> None:
    assert isinstance(exc, StoreError), exc
    assert took < BOUND, (took, exc)


def _assert_bounded_store_errors(store: BaseSessionStore) -> None:
    for name, call in CALLS.items():
        took, exc = _timed(lambda call=call: call(store))  # type: ignore[misc]
        assert isinstance(exc, StoreError), (name, exc)
        assert took < BOUND, (name, took)


def _writer(store: BaseSessionStore, acked: list[str], stop: threading.Event) -> None:
    """Append one message at a time until stopped; ``acked``: the ids each call confirmed."""
    n = 0
    while not stop.is_set():
        mid = f"w{n:05d}"
        try:
            store.append("s", [Message("user", f"message {n}", id=mid)])
        except StoreError:
            time.sleep(0.05)
            continue
        acked.append(mid)
        n += 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_killed_server_gives_prompt_store_errors_and_loses_nothing_acknowledged(
    kind: str, server: Server, tmp_path: Path
) -> None:
    store = open_store(_url(kind, server))
    store.delete_session("s")
    acked: list[str] = []
    stop = threading.Event()
    writer = threading.Thread(target=_writer, args=(store, acked, stop))
    writer.start()
    try:
        while len(acked) < 30:
            time.sleep(0.01)
        server.kill()
        before = len(acked)
        _assert_bounded_store_errors(store)
        took, exc = _timed(lambda: open_store(_url(kind, server)))
        _assert_store_error_within(took, exc)
        server.start()
        deadline = time.monotonic() + BOUND
        while len(acked) < before + 10:  # the same store object works again
            assert time.monotonic() < deadline, "no append succeeded after the restart"
            time.sleep(0.02)
    finally:
        stop.set()
        writer.join()
    stored = [m.id for m in store.load("s")]
    assert set(acked) <= set(stored), sorted(set(acked) - set(stored))[:5]
    assert stored == sorted(stored)  # in order
    store.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_frozen_server_gives_bounded_waits_and_loses_nothing_acknowledged(
    kind: str, server: Server
) -> None:
    store = open_store(_url(kind, server))
    store.delete_session("s")
    kept = [Message("user", f"kept {i}", id=f"k{i:03d}") for i in range(20)]
    for message in kept:
        assert store.append("s", [message]) == 1
    server.freeze()
    try:
        took, exc = _timed(lambda: store.append("s", [Message("user", "frozen", id="z")]))
        _assert_store_error_within(took, exc)
        took, exc = _timed(lambda: store.load("s"))
        _assert_store_error_within(took, exc)
        took, exc = _timed(lambda: open_store(_url(kind, server)))
        _assert_store_error_within(took, exc)
    finally:
        server.thaw()
    assert store.append("s", [Message("user", "after", id="zz")]) == 1
    stored = [m.id for m in store.load("s")]
    assert [m.id for m in kept] == stored[:20]
    assert stored[-1] == "zz"
    store.close()
