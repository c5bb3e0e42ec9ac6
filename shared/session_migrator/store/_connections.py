"""Connections per thread that outlive none of their threads: the SQL stores' connection keeper.

A store opened once and used from many threads (a web server's workers, the short-lived thread
LangChain starts for each ``RunnableWithMessageHistory.invoke``) must not open a connection per
thread and keep it: that runs out of file handles or of the server's connection slots. Here each
thread gets a connection of its own while it lives (no lock around a query, a transaction never
shared), and when the thread ends its connection goes back to an idle list that the next new
thread takes from. So a store holds at most as many connections as threads used it at once.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["ThreadConnections"]

C = TypeVar("C")


class _Lease(Generic[C]):
    """What a thread's local storage holds: freed when the thread ends, which hands the
    connection back (``weakref.finalize`` on it)."""

    __slots__ = ("__weakref__", "conn")

    def __init__(self, conn: C) -> None:
        self.conn = conn


class ThreadConnections(Generic[C]):
    """The current thread's connection (see the module docstring).

    ``connect`` opens a connection; ``usable`` says whether a held one can still be used (a
    broken one is closed and replaced); ``close`` closes one; ``closed_error`` is what
    :meth:`get` raises once :meth:`close_all` ran.
    """

    def __init__(
        self,
        connect: Callable[[], C],
        close: Callable[[C], None],
        closed_error: Callable[[], Exception],
        usable: Callable[[C], bool] = lambda conn: True,
    ) -> None:
        self._connect = connect
        self._close = close
        self._closed_error = closed_error
        self._usable = usable
        self._local = threading.local()
        self._guard = threading.Lock()
        self._open: list[C] = []  # every connection not closed, leased or idle
        self._idle: list[C] = []
        self.closed = False
        # a store dropped without close(): its connections are closed as it is collected
        weakref.finalize(self, _close_each, self._open, close)

    def get(self) -> C:
        """The calling thread's connection (opened, or taken from a thread that ended)."""
        lease: _Lease[C] | None = getattr(self._local, "lease", None)
        if lease is not None:  # (close_all() drops every lease)
            if self._usable(lease.conn):
                return lease.conn
            self._discard(lease.conn)
        conn = self._reuse()
        if conn is None:
            conn = self._connect()
            with self._guard:
                shut = self.closed
                if not shut:
                    self._open.append(conn)
            if shut:
                self._close(conn)
                raise self._closed_error()
        lease = _Lease(conn)
        # (a weak reference: a store dropped without close() is not kept alive by its leases)
        weakref.finalize(lease, _release, weakref.ref(self), conn)
        self._local.lease = lease
        return conn

    def _reuse(self) -> C | None:
        """A usable idle connection, if any (the unusable ones are closed on the way)."""
        with self._guard:
            if self.closed:
                raise self._closed_error()
            while self._idle:
                conn = self._idle.pop()
                if self._usable(conn):
                    return conn
                self._open.remove(conn)
                self._close(conn)
        return None

    def _take_back(self, conn: C) -> None:
        """``conn``'s thread ended: keep it for the next thread."""
        with self._guard:
            if conn in self._open and not self.closed:
                self._idle.append(conn)

    def _discard(self, conn: C) -> None:
        with self._guard:
            if conn in self._open:
                self._open.remove(conn)
        self._local.lease = None
        self._close(conn)

    def count(self) -> int:
        """How many connections are open (leased by live threads, or idle)."""
        with self._guard:
            return len(self._open)

    def close_all(self) -> None:
        """Close every connection; :meth:`get` then fails."""
        with self._guard:
            self.closed = True
            connections = list(self._open)
            self._open.clear()  # (the same list: the finalizer above holds it)
            self._idle.clear()
        for conn in connections:
            self._close(conn)
        self._local = threading.local()


def _release(owner: weakref.ref[ThreadConnections[C]], conn: C) -> None:
    """A thread ended (its lease freed): its connection goes back to ``owner`` (gone: its
    finalizer closed every connection)."""
    connections = owner()
    if connections is not None:
        connections._take_back(conn)


def _close_each(connections: list[C], close: Callable[[C], None]) -> None:
    for conn in list(connections):
        close(conn)
    connections.clear()
