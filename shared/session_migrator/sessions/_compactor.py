"""Background compaction: the summaries a stable fit will need, written before it needs them.

Past the budget, the stable cut (:mod:`session_migrator.migration._stable`) moves a whole step
at a time, and the part its next move leaves out is known a step ahead. A fitter with a
:class:`Compactor` (``SessionFitter(..., compactor=True)``) hands that part to the compactor
once the kept turns are within half a step of the high watermark; a worker thread summarizes it,
and the fit that moves the cut takes the summary ready instead of waiting for the summarizer.
Where it is not ready yet (the first cut of a session, a summarizer slower than the
conversation), the fit uses the offline summary and the summarizer's is written in the
background: no request waits for a summarizer.

- **Bounded**: a pool of ``workers`` threads, one job per conversation at a time, at most
  ``max_pending`` jobs in all (more are refused, and asked for again by a later fit); a job
  that takes longer than ``timeout`` seconds is given up (its thread is left to end).
- **Cancellable**: :meth:`Compactor.cancel` drops the queued jobs and discards what running
  ones write; :meth:`Compactor.close` also stops the pool.
- **Safe to race with writes**: a summary is used only for the very messages it was written of
  (:class:`~session_migrator.summaries._ahead.Ahead`); the summary a fit uses is stored with the
  store's revision check, so of two processes the first writer's stands.
- **A summarizer that fails or hangs** leaves the fit on the offline summary (twice failed, a
  cut part is not asked for again).
- **One compaction per conversation at a time, across processes**: given a :class:`Lease` (the
  fitter's is the lease ``compaction`` of its session in its store, see
  :mod:`session_migrator.sessions._lease`), a job takes it before it calls the summarizer, for
  ``timeout`` plus :data:`LEASE_MARGIN` seconds, and lets it go once written (or failed). While
  another process holds it the job calls nothing: its plan stays asked for (a later fit asks
  again) and the conversation's state says ``waiting: another process is compacting``.
"""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import Future
from typing import Any, ClassVar, Protocol

from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._lead import summary_message
from session_migrator.sessions._background import BackgroundPool
from session_migrator.summaries._ahead import Ahead, Plan
from session_migrator.summaries._summarizers import Summarizer

__all__ = ["LEASE_MARGIN", "WAITING", "Compactor", "Lease"]

#: Seconds a compaction lease outlives the compactor's ``timeout`` (a job ends by then).
LEASE_MARGIN = 10.0
#: Why a job did not call the summarizer: another holder of the conversation's lease.
WAITING = "another process is compacting"


class Lease(Protocol):
    """Who compacts a conversation now, across processes (the fitter's: a store lease)."""

    def acquire(self, ttl_seconds: float) -> bool:
        """Hold it for ``ttl_seconds`` (renewed when held already); whether it is held now."""
        ...

    def release(self) -> None:
        """Let it go (only if held)."""
        ...


class Compactor(BackgroundPool):
    """Writes the summaries stable fits ask for, in worker threads (see the module docstring).

    >>> compactor = Compactor(workers=1, timeout=60)
    >>> compactor.status()
    {'pending': 0, 'written': 0, 'failed': 0, 'waiting': 0}
    >>> compactor.close()
    """

    _default: ClassVar[Compactor | None] = None
    thread_name = "session-migrator-compact"

    def __init__(self, *, workers: int = 2, timeout: float = 120.0, max_pending: int = 64) -> None:
        super().__init__(workers=workers, timeout=timeout, max_pending=max_pending)
        self._jobs: dict[int, tuple[Ahead, Future[None]]] = {}
        self.written = 0
        self.failed = 0
        #: jobs that found another process compacting their conversation (asked for again)
        self.waiting = 0

    def submit(
        self,
        ahead: Ahead,
        summarizer: Summarizer,
        counter: TokenCounter,
        lease: Lease | None = None,
    ) -> bool:
        """Start writing the summary ``ahead`` asks for; ``False`` when nothing is asked for,
        one is being written for this conversation already, or the compactor is full or
        closed (the plan stays asked for). With a ``lease``, the job writes only while it
        holds it (see the module docstring)."""
        with self._lock:
            if self._closed or id(ahead) in self._jobs or len(self._jobs) >= self.max_pending:
                return False
            plan = ahead.take_wanted()
            if plan is None:
                return False
            with ahead.lock:
                ahead.running = plan.key
                ahead.state = "pending"
            generation = self._generation
            future = self._pool.submit(
                self._run, ahead, plan, summarizer, counter, generation, lease
            )
            self._jobs[id(ahead)] = (ahead, future)
        future.add_done_callback(lambda _: self._done(ahead))
        return True

    def run_now(
        self,
        ahead: Ahead,
        summarizer: Summarizer,
        counter: TokenCounter,
        lease: Lease | None = None,
    ) -> bool:
        """Write the summary ``ahead`` asks for in this thread (a scheduler's ``compact()``);
        whether one was written (not while another holds ``lease``)."""
        plan = ahead.take_wanted()
        if plan is None:
            return False
        with ahead.lock:
            ahead.running = plan.key
        written_before = ahead.written
        self._run(ahead, plan, summarizer, counter, self._generation, lease)
        with ahead.lock:
            ahead.running = None
        return ahead.written > written_before

    def _run(
        self,
        ahead: Ahead,
        plan: Plan,
        summarizer: Summarizer,
        counter: TokenCounter,
        generation: int,
        lease: Lease | None = None,
    ) -> None:
        if lease is not None:
            try:
                held = lease.acquire(self.timeout + LEASE_MARGIN)
            except Exception as exc:  # (the store is down, the session deleted, ...)
                ahead.fail(plan, f"the compaction lease: {type(exc).__name__}: {exc}")
                self.failed += 1
                return
            if not held:
                ahead.postpone(plan, WAITING)
                self.waiting += 1
                return
        try:
            self._write(ahead, plan, summarizer, counter, generation)
        finally:
            if lease is not None:
                with contextlib.suppress(Exception):  # (else it runs out by itself)
                    lease.release()

    def _write(
        self,
        ahead: Ahead,
        plan: Plan,
        summarizer: Summarizer,
        counter: TokenCounter,
        generation: int,
    ) -> None:
        outcome: dict[str, Any] = {}

        def write() -> None:
            fallbacks: list[str] = []
            try:
                _, summary = summary_message(
                    summarizer,
                    plan.covered,
                    list(plan.covered),
                    plan.room,
                    counter,
                    plan.previous,
                    fallbacks,
                )
            except Exception as exc:  # (summary_message catches the summarizer's own)
                fallbacks.append(f"{type(exc).__name__}: {exc}")
                summary = None
            outcome["summary"], outcome["fallbacks"] = summary, fallbacks

        # the summarizer runs in a thread of its own, so that one that hangs is given up on
        started = time.monotonic()
        given_up = self.given_up(write)
        if generation != self._generation:
            with ahead.lock:
                ahead.state = "cancelled"
            return
        if given_up:
            ahead.fail(plan, f"the summarizer took over {self.timeout:g} s")
            self.failed += 1
            return
        summary, fallbacks = outcome.get("summary"), outcome.get("fallbacks") or []
        if summary is None or fallbacks:
            reason = fallbacks[0] if fallbacks else "no summary text"
            ahead.fail(plan, reason)
            self.failed += 1
            return
        ahead.put(plan, summary)
        ahead.seconds = time.monotonic() - started
        self.written += 1

    def _done(self, ahead: Ahead) -> None:
        with self._lock:
            self._jobs.pop(id(ahead), None)
        with ahead.lock:
            ahead.running = None

    def _futures(self) -> list[Future[None]]:
        return [f for _, f in self._jobs.values()]

    def _cancelled(self, future: Future[None]) -> None:
        with self._lock:
            found = next((k for k, (_, f) in self._jobs.items() if f is future), None)
            ahead = self._jobs.pop(found)[0] if found is not None else None
        if ahead is not None:
            with ahead.lock:
                ahead.state = "cancelled"
                ahead.running = None

    def status(self) -> dict[str, int]:
        """Jobs under way, summaries written, compactions failed, and jobs that found another
        process compacting their conversation (``waiting``), since it was made."""
        with self._lock:
            pending = len(self._jobs)
        return {
            "pending": pending,
            "written": self.written,
            "failed": self.failed,
            "waiting": self.waiting,
        }
