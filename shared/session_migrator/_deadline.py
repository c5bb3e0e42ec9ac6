"""One total deadline for a network call and its retries (the LLM summarizers').

An HTTP client's timeout bounds each socket read, not a reply: a server that sends a byte a
second, or asks to retry in 20 s, holds a caller far longer. :class:`Deadline` runs each attempt
in a worker thread and waits for it only as long as the deadline allows; an attempt still
running then is left to finish in the background (its own read timeout is the time that was
left) and the caller goes on. The threads are a bounded pool (see :class:`_Workers`): a
server or model that never answers holds at most :data:`WORKERS` of them.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Deadline", "DeadlinePassed", "Pending", "retry_wait"]

#: HTTP statuses worth another attempt (as the ``openai`` SDK retries them).
RETRY_STATUSES = frozenset({408, 409, 429})
_GRACE = 0.25


class DeadlinePassed(Exception):
    """The deadline passed before the attempt answered (converted by the caller)."""


class Deadline:
    """``seconds`` from now; :meth:`call` runs an attempt within what is left."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    def allows(self, wait: float) -> bool:
        """Whether waiting ``wait`` seconds still leaves time for an attempt."""
        return wait < self.left()

    def why_not(self, wait: float | None) -> str:
        """Why a retry after ``wait`` seconds is not made (``""`` when the error is final)."""
        if wait is None:
            return ""
        return (
            f" (a retry in {wait:g} s would pass the {self.seconds:g} s deadline; raise "
            "timeout= for a slower server)"
        )

    def call(self, attempt: Callable[..., Any], *args: Any) -> Any:
        """``attempt(*args, seconds_left)``, or :class:`DeadlinePassed` when it does not return
        in time; its exception is raised here."""
        return self.start(attempt, *args).result()

    def start(self, attempt: Callable[..., Any], *args: Any) -> Pending:
        """:meth:`call` begun: the attempt runs meanwhile, :meth:`Pending.result` waits for it
        (within what is left of the deadline then)."""
        left = self.left()
        if left <= 0:
            raise DeadlinePassed(self._passed())
        outcome: list[Any] = []

        def run() -> None:
            try:
                outcome.append((True, attempt(*args, left)))
            except BaseException as exc:  # (handed to the caller's thread)
                outcome.append((False, exc))

        done = threading.Event()
        _WORKERS.run(run, done, self.end)
        return Pending(self, done, outcome)

    def _passed(self) -> str:
        return (
            f"no complete reply within the {self.seconds:g} s deadline (timeout=, covering every "
            "retry); the server is slow, silent or trickling its reply"
        )


class Pending:
    """An attempt :meth:`Deadline.start` began."""

    def __init__(self, deadline: Deadline, done: threading.Event, outcome: list[Any]) -> None:
        self._deadline, self._done, self._outcome = deadline, done, outcome

    def result(self) -> Any:
        """The attempt's value (its exception raised here), or :class:`DeadlinePassed` when it
        has not returned within the deadline."""
        # (the attempt's own timeout, when it has one, speaks first)
        self._done.wait(max(self._deadline.left(), 0.0) + _GRACE)
        if not self._outcome:
            raise DeadlinePassed(self._deadline._passed())
        ok, value = self._outcome[0]
        if ok:
            return value
        raise value


class _Workers:
    """Daemon threads that run attempts, kept between them, at most :data:`WORKERS` at once: an
    idle one takes the next attempt, a new one is started when none is idle and there are fewer
    than the bound (starting a thread costs a few hundred microseconds, sometimes milliseconds:
    a fit asks its embedding model for the question's vector once a fit). An attempt that never
    returns holds its thread; when every thread is held so, a new attempt waits for one, and
    its caller gives up at its deadline (an attempt whose caller gave up is never started). A
    thread idle for :data:`IDLE_SECONDS` ends. So a model that hangs on every call costs at most
    :data:`WORKERS` threads, however many fits ask it."""

    def __init__(self, limit: int, idle_seconds: float) -> None:
        self.limit, self.idle_seconds = limit, idle_seconds
        self._cond = threading.Condition(threading.Lock())
        self._jobs: collections.deque[tuple[Callable[[], None], threading.Event, float]] = (
            collections.deque()
        )
        self._idle = 0
        self.threads = 0

    def run(self, job: Callable[[], None], done: threading.Event, end: float) -> None:
        with self._cond:
            self._jobs.append((job, done, end))
            if self._idle >= len(self._jobs):
                self._cond.notify()
                return
            if self.threads >= self.limit:
                self._drop_expired()
                return  # (it waits for a thread)
            self.threads += 1
        threading.Thread(target=self._work, name="session-migrator-deadline", daemon=True).start()

    def _drop_expired(self) -> None:
        """Forget the waiting attempts whose callers gave up (under the lock)."""
        now = time.monotonic()
        for item in [j for j in self._jobs if j[2] + _GRACE < now]:
            self._jobs.remove(item)
            item[1].set()

    def _work(self) -> None:
        while True:
            with self._cond:
                self._idle += 1
                while not self._jobs:
                    if not self._cond.wait(self.idle_seconds) and not self._jobs:
                        self._idle -= 1
                        self.threads -= 1
                        return  # (retired: idle too long)
                self._idle -= 1
                job, done, end = self._jobs.popleft()
            if time.monotonic() > end + _GRACE:
                done.set()  # (its caller gave up: not started)
                continue
            try:
                job()
            finally:
                done.set()


#: The most threads attempts run in at once (an attempt beyond waits for one to be free).
WORKERS = 16
#: Seconds a worker thread waits for an attempt before it ends.
IDLE_SECONDS = 60.0

_WORKERS = _Workers(WORKERS, IDLE_SECONDS)


def _forked() -> None:
    """A forked child has none of its parent's threads: it starts with no worker."""
    global _WORKERS
    _WORKERS = _Workers(WORKERS, IDLE_SECONDS)


os.register_at_fork(after_in_child=_forked)


def retry_wait(exc: BaseException, attempt: int) -> float | None:
    """Seconds to wait before retrying after ``exc`` (``None``: not worth a retry): what its
    ``Retry-After`` header asks, else 0.5 s doubling per attempt."""
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    if status is None:
        name = type(exc).__name__
        if name not in ("APIConnectionError", "APITimeoutError"):
            return None
    elif status not in RETRY_STATUSES and status < 500:
        return None
    headers = getattr(response, "headers", None) or {}
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(key)
        if value is not None:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                break  # (an HTTP date: use the backoff)
    return float(min(0.5 * 2**attempt, 8.0))
