"""A user's facts read by a model in the background, off every request's path.

``SessionFitter(..., user_facts=True, fact_extractor=...)`` learns the plain statements of each
appended user message by rules at once (:func:`~session_migrator.store.learn_user_facts`), and
hands the messages to a :class:`FactLearner`, whose worker asks the extractor (a model,
:mod:`session_migrator.summaries._fact_extractors`) and keeps what it answers
(:func:`~session_migrator.store._facts.keep_user_facts`): each fact with the id and the date of
the message that stated it; a later statement about the same key replaces an earlier one, and
an extraction that ends late never undoes a newer statement. The model's facts of a message
take the place of the rules' facts of it.

- **Never blocks**: :meth:`FactLearner.submit` queues and returns; a fit reads the facts kept so
  far (the next fit after the job ends sends the model's).
- **Bounded**: ``workers`` threads, at most ``max_pending`` jobs (more are dropped: the rules'
  facts stand); a job that takes longer than ``timeout`` seconds is given up.
- **Cancellable**: :meth:`FactLearner.cancel` drops the queued jobs and discards what running
  ones answer; :meth:`FactLearner.close` also stops the pool.
- **Failures leave the rules' facts**: an extractor that raises, hangs or answers no JSON
  changes nothing; ``status()`` counts it and ``last_error`` says why.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from concurrent.futures import Future
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from session_migrator.messages._messages import Message
from session_migrator.sessions._background import BackgroundPool
from session_migrator.summaries._fact_extractors import FactExtractor, ModelFactExtractor, as_fact
from session_migrator.summaries._facts import Fact

if TYPE_CHECKING:
    from session_migrator.store import BaseSessionStore

__all__ = ["FactLearner"]


class FactLearner(BackgroundPool):
    """Runs fact extractors in worker threads (see the module docstring).

    >>> learner = FactLearner(workers=1, timeout=30)
    >>> learner.status()
    {'pending': 0, 'learnt': 0, 'failed': 0, 'dropped': 0}
    >>> learner.close()
    """

    _default: ClassVar[FactLearner | None] = None
    thread_name = "session-migrator-facts"

    def __init__(self, *, workers: int = 1, timeout: float = 60.0, max_pending: int = 64) -> None:
        super().__init__(workers=workers, timeout=timeout, max_pending=max_pending)
        self._jobs: set[Future[None]] = set()
        self.learnt = 0  # facts kept
        self.failed = 0  # jobs whose extractor failed (the rules' facts stand)
        self.dropped = 0  # jobs refused: the learner was full or closed
        self.last_error: str | None = None

    def submit(
        self,
        store: BaseSessionStore,
        user_id: str,
        messages: Sequence[Message],
        extractor: FactExtractor,
        *,
        said: datetime,
        lock: Any = None,
    ) -> bool:
        """Queue the reading of ``messages`` (stored at ``said`` when they have no time of
        their own) for ``user_id``; ``False`` when the learner is full or closed. ``lock`` is
        held while the facts are written (the fitter's, which its own writes hold)."""
        with self._lock:
            if self._closed or len(self._jobs) >= self.max_pending:
                self.dropped += 1
                return False
            args = (store, user_id, list(messages), extractor, said, lock, self._generation)
            future = self._pool.submit(self._run, *args)
            self._jobs.add(future)
        future.add_done_callback(self._done)
        return True

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._jobs.discard(future)

    def _fail(self, why: str) -> None:
        self.failed += 1
        self.last_error = why

    def _run(
        self,
        store: BaseSessionStore,
        user_id: str,
        messages: list[Message],
        extractor: FactExtractor,
        said: datetime,
        lock: Any,
        generation: int,
    ) -> None:
        from session_migrator.store import UserFact, user_facts
        from session_migrator.store._facts import keep_user_facts

        outcome: dict[str, Any] = {}
        failures = getattr(extractor, "failures", 0)

        def extract() -> None:
            try:
                found: Sequence[Fact | tuple[str, str]]
                if isinstance(extractor, ModelFactExtractor):
                    known = {f.key: f.text for f in user_facts(store, user_id)}
                    found = extractor.extract(messages, known)
                else:
                    found = extractor.extract(messages)
                outcome["facts"] = [as_fact(f) for f in found]
            except Exception as exc:
                outcome["error"] = f"{type(exc).__name__}: {exc}"

        # the extractor runs in a thread of its own, so that one that hangs is given up on
        given_up = self.given_up(extract)
        if generation != self._generation:
            return  # (cancelled)
        if given_up or "error" in outcome:
            why = outcome.get("error") or f"the fact extractor took over {self.timeout:g} s"
            self._fail(why)
            return
        if getattr(extractor, "failures", 0) != failures:  # (it fell back to its rules)
            self._fail(str(getattr(extractor, "last_error", "the extractor fell back")))
        users = {m.id: m.timestamp or said for m in messages if m.role == "user"}
        newest = next((m.id for m in reversed(messages) if m.role == "user"), None)
        facts = []
        for f in outcome.get("facts", []):
            source = f.source_id if f.source_id in users else newest
            if source is not None:
                facts.append(UserFact(f.key, f.text, source, users[source]))
        sources = {f.source_id for f in facts if f.source_id is not None}
        with lock if lock is not None else contextlib.nullcontext():
            kept = keep_user_facts(store, user_id, facts, superseding=sources)
        self.learnt += len(kept)

    def _futures(self) -> list[Future[None]]:
        return list(self._jobs)

    def _cancelled(self, future: Future[None]) -> None:
        with self._lock:
            self._jobs.discard(future)

    def status(self) -> dict[str, int]:
        """Jobs under way, facts learnt, jobs failed (the rules' facts stand) and jobs dropped."""
        with self._lock:
            pending = len(self._jobs)
        return {
            "pending": pending,
            "learnt": self.learnt,
            "failed": self.failed,
            "dropped": self.dropped,
        }
