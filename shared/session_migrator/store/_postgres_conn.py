"""The PostgreSQL store's connection settings and its client-side deadline: bounded waits.

Defaults, each overridden by the same parameter in the URL's query
(``postgresql://host/db?connect_timeout=2&statement_timeout=5``):

========================  =======  ===========================================================
``connect_timeout``       10       seconds to connect (libpq's, covers the whole handshake)
``keepalives``            1        TCP keepalives on (libpq's ``keepalives_idle`` 30 s,
                                   ``keepalives_interval`` 10 s, ``keepalives_count`` 3)
``tcp_user_timeout``      30000    ms that sent data may stay unacknowledged (libpq's)
``statement_timeout``     30       seconds a statement may run on the server (this store's
                                   parameter, in seconds; ``0`` turns it and the deadline off)
========================  =======  ===========================================================

A server that cannot answer at all (frozen, or a network that drops packets while the kernel
still acknowledges them) does not enforce its own ``statement_timeout``. So every store call
also has a client-side deadline, ``statement_timeout`` plus the lesser of it and 5 s: past it,
the connection's socket is shut down, the call raises :class:`~session_migrator.StoreError`
saying so, and the next call opens a new connection. A write cut off this way may or may not
have committed; it was not acknowledged, and appending it again is safe (same ids).
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from session_migrator._errors import StoreError

__all__ = ["LIBPQ_DEFAULTS", "Deadline", "bounded", "split_url"]

LIBPQ_DEFAULTS: dict[str, str] = {
    "connect_timeout": "10",
    "keepalives": "1",
    "keepalives_idle": "30",
    "keepalives_interval": "10",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",
}
STATEMENT_TIMEOUT = 30.0


def split_url(url: str) -> tuple[str, float]:
    """``url`` with the defaults above added where its query does not set them, without this
    store's own ``statement_timeout`` (which libpq does not know), and that timeout in seconds.
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    given = {k for k, _ in query}
    statement = STATEMENT_TIMEOUT
    rest: list[tuple[str, str]] = []
    for key, value in query:
        if key == "statement_timeout":
            try:
                statement = float(value)
            except ValueError:
                statement = -1.0
            if not statement >= 0:
                raise StoreError(
                    f"statement_timeout={value!r} in the PostgreSQL URL: give seconds >= 0 "
                    "(0 turns it off), e.g. ?statement_timeout=30"
                )
        else:
            rest.append((key, value))
    rest += [(k, v) for k, v in LIBPQ_DEFAULTS.items() if k not in given]
    if statement > 0:
        option = f"-c statement_timeout={round(statement * 1000)}"
        options = [v for k, v in rest if k == "options"]
        rest = [(k, v) for k, v in rest if k != "options"]
        rest.append(("options", f"{options[0]} {option}" if options else option))
    # (%20 for a space: libpq does not read '+' as one)
    return urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote))), statement


class Deadline:
    """Whether a bounded call ran out of time (its connection was cut)."""

    __slots__ = ("expired", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False


class _Watchdog:
    """One daemon thread that shuts down the socket of every call past its deadline."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._live: dict[int, tuple[Any, Deadline]] = {}
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, conn: Any, deadline: Deadline) -> int:
        due = time.monotonic() + deadline.seconds
        with self._cond:
            token = next(self._ids)
            self._live[token] = (conn, deadline)
            wake = not self._heap or due < self._heap[0][0]
            heapq.heappush(self._heap, (due, token))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="session-migrator-pg-deadline", daemon=True
                )
                self._thread.start()
            elif wake:
                self._cond.notify()
        return token

    def remove(self, token: int) -> None:
        with self._cond:
            self._live.pop(token, None)
            while self._heap and self._heap[0][1] not in self._live:  # done calls at the top
                heapq.heappop(self._heap)

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                while self._heap and (
                    self._heap[0][0] <= now or self._heap[0][1] not in self._live
                ):
                    _, token = heapq.heappop(self._heap)
                    found = self._live.pop(token, None)
                    if found is not None:
                        found[1].expired = True
                        _cut(found[0])
                self._cond.wait(self._heap[0][0] - now if self._heap else None)


def _cut(conn: Any) -> None:
    """Shut the connection's socket down: a call blocked on it returns with an error."""
    try:
        sock = socket.socket(fileno=socket.dup(conn.fileno()))
    except (OSError, ValueError):  # (already closed)
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


_WATCHDOG = _Watchdog()


@contextmanager
def bounded(conn: Any, seconds: float, url: str) -> Iterator[None]:
    """Run the block with a client-side deadline on ``conn`` (``seconds <= 0``: none); a call
    cut off by it raises :class:`StoreError` saying how long it waited."""
    if seconds <= 0:
        yield
        return
    deadline = Deadline(seconds)
    token = _WATCHDOG.add(conn, deadline)
    try:
        yield
    except Exception as exc:
        if deadline.expired:
            raise StoreError(
                f"{url}: no answer from PostgreSQL within {seconds:g} s (statement_timeout plus "
                "time for the reply); the server may be stalled or unreachable. The connection "
                "was closed; retry, or raise ?statement_timeout= in the URL"
            ) from exc
        raise
    finally:
        _WATCHDOG.remove(token)
