"""The pool that runs the work no request waits for: summaries written ahead
(:class:`~session_migrator.sessions._compactor.Compactor`) and facts read by a model
(:class:`~session_migrator.sessions._fact_learner.FactLearner`).

- **Bounded**: ``workers`` threads, at most ``max_pending`` jobs; each job's call runs in a
  thread of its own and is given up after ``timeout`` seconds (:meth:`BackgroundPool.given_up`).
- **Cancellable**: :meth:`BackgroundPool.cancel` drops the queued jobs and moves the
  generation on, so that what running ones answer is discarded; :meth:`BackgroundPool.close`
  also stops the pool.
- **One per process by default**: :meth:`BackgroundPool.default`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from typing import ClassVar, Self

__all__ = ["BackgroundPool"]

_DEFAULT_LOCK = threading.Lock()


class BackgroundPool:
    """Worker threads for background jobs (see the module docstring); a subclass keeps its jobs
    (:meth:`_futures`) and says what cancelling one means (:meth:`_cancelled`)."""

    #: the process's shared one, per subclass (see :meth:`default`)
    _default: ClassVar[BackgroundPool | None] = None
    #: the names of the pool's threads, and of a job's call's thread
    thread_name = "session-migrator-work"

    def __init__(self, *, workers: int = 1, timeout: float = 60.0, max_pending: int = 64) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers!r}")
        if timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        self.workers = workers
        self.timeout = timeout
        self.max_pending = max_pending
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix=self.thread_name)
        self._lock = threading.Lock()
        self._generation = 0
        self._closed = False

    @classmethod
    def default(cls) -> Self:
        """The process's shared one (made at first use, and again once closed)."""
        with _DEFAULT_LOCK:
            made = cls._default
            if not isinstance(made, cls) or made._closed:
                made = cls()
                cls._default = made
            return made

    def given_up(self, call: Callable[[], None]) -> bool:
        """Run ``call`` in a thread of its own for at most :attr:`timeout` seconds; whether it
        was given up (it goes on, its thread a daemon, and what it does is not used)."""
        worker = threading.Thread(target=call, name=f"{self.thread_name}-call", daemon=True)
        worker.start()
        worker.join(self.timeout)
        return worker.is_alive()

    def _futures(self) -> list[Future[None]]:
        """The jobs under way (read under the lock)."""
        raise NotImplementedError

    def _cancelled(self, future: Future[None]) -> None:
        """``future`` was cancelled before it ran (called outside the lock)."""

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the jobs under way (``timeout`` seconds at most); whether all ended."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                futures = self._futures()
            if not futures:
                return True
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return False
            futures_wait(futures, timeout=left)

    def cancel(self) -> None:
        """Drop the queued jobs; what the running ones answer is discarded."""
        with self._lock:
            self._generation += 1
            futures = self._futures()
        for future in futures:
            if future.cancel():
                self._cancelled(future)

    def close(self) -> None:
        """Cancel, and stop the pool (a closed one refuses new jobs)."""
        with self._lock:
            self._closed = True
        self.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)
