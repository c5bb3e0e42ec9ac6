"""Summaries written ahead of the cut that needs them: what a fit and a background compactor
share.

Past the budget, a stable fit (see :mod:`session_migrator.migration._stable`) moves its cut a
whole step at a time, and the cut it moves to next is known a step ahead. :class:`Ahead` is
kept with a conversation's fitting state (a ledger's cache): the fit records there the cut part
it will need summarized next (:class:`Plan`), a compactor (:class:`~session_migrator.Compactor`)
writes that summary off the request path, and the fit that moves the cut takes it from
:attr:`Ahead.ready` instead of waiting for the summarizer.

A summary is taken only for the very messages it was written of: the same first and last ids,
the same count, and the same digest of their roles and texts (a message replaced meanwhile
makes it stale, and it is dropped).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from session_migrator.messages._messages import Message
from session_migrator.summaries._summarizers import Summary

__all__ = ["Ahead", "Plan", "digest_of"]

#: The most summaries kept ready for one conversation (the next cut's and a spare).
READY_LIMIT = 4
#: A cut part whose summary failed this many times is not asked for again (the offline
#: summary stands).
MAX_TRIES = 2


def digest_of(messages: Sequence[Message]) -> str:
    """A digest of ``messages``' ids, roles, texts and tool calls (what a summary reads)."""
    h = hashlib.blake2b(digest_size=16)
    for m in messages:
        h.update(m.id.encode("utf-8", "surrogatepass") + b"\x00")
        h.update(m.role.encode() + b"\x00")
        h.update(m.text.encode("utf-8", "surrogatepass") + b"\x00")
        for call in m.tool_calls:
            h.update(f"{call.id}\x00{call.name}\x00{call.arguments}\x00".encode(errors="replace"))
    return h.hexdigest()


@dataclass(frozen=True)
class Plan:
    """A cut part to summarize: ``covered`` (a snapshot), in ``room`` tokens, folding
    ``previous`` (the summary of the part before, where it starts at the same message)."""

    covered: tuple[Message, ...]
    room: int
    previous: Summary | None
    digest: str

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.covered[0].id, self.covered[-1].id, len(self.covered))


@dataclass
class Ahead:
    """One conversation's summaries written ahead, and the next one wanted (thread-safe).

        ``wanted``: the plan the last fit asked for (``None``: nothing); ``ready``: the summaries
        written, by (first id, last id, count), with the digest of what they cover; ``state``: what
        the last compaction did (``idle``, ``pending``, ``ready``, ``failed: ...``, ``cancelled``,
    ``waiting: ...``),
        for the report and the usage view.
    """

    wanted: Plan | None = None
    ready: dict[tuple[str, str, int], tuple[Summary, str]] = field(default_factory=dict)
    state: str = "idle"
    written: int = 0
    #: the unit the next cut was last planned at (the same plan is not asked for twice)
    next_cut: int | None = None
    failed: dict[tuple[str, str, int], int] = field(default_factory=dict)
    #: how long the last summary written took
    seconds: float = 0.0
    #: the key of the plan a compactor is writing now (``None``: none)
    running: tuple[str, str, int] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def status(self) -> dict[str, Any]:
        """``state``, summaries ``written`` ahead, and the last one's ``seconds``."""
        with self.lock:
            return {"state": self.state, "written": self.written, "seconds": self.seconds}

    def want(self, plan: Plan) -> None:
        """Ask for ``plan`` (unless its summary is ready already)."""
        with self.lock:
            key = plan.key
            if key not in self.ready and self.failed.get(key, 0) < MAX_TRIES:
                self.wanted = plan

    def wants(self, covered: Sequence[Message]) -> bool:
        """Whether the summary of ``covered`` is asked for already (or given up on)."""
        key = (covered[0].id, covered[-1].id, len(covered))
        with self.lock:
            return (
                (self.wanted is not None and self.wanted.key == key)
                or self.failed.get(key, 0) >= MAX_TRIES
                or self.running == key
            )

    def fail(self, plan: Plan, reason: str) -> None:
        with self.lock:
            self.failed[plan.key] = self.failed.get(plan.key, 0) + 1
            self.state = f"failed: {reason}"

    def postpone(self, plan: Plan, reason: str) -> None:
        """``plan`` was not written now (another process is writing this conversation's): it
        stays asked for (unless a newer plan is), so a later fit asks again."""
        with self.lock:
            if self.wanted is None:
                self.wanted = plan
            self.state = f"waiting: {reason}"

    def take_wanted(self) -> Plan | None:
        """The plan asked for, handed to one compactor (then no longer wanted)."""
        with self.lock:
            plan, self.wanted = self.wanted, None
            return plan

    def put(self, plan: Plan, summary: Summary) -> None:
        with self.lock:
            while len(self.ready) >= READY_LIMIT:
                self.ready.pop(next(iter(self.ready)))
            self.ready[plan.key] = (summary, plan.digest)
            self.written += 1
            self.state = "ready"

    def summary_for(self, covered: Sequence[Message]) -> Summary | None:
        """The summary written ahead of exactly ``covered``, if one is ready and still of the
        same messages (a stale one is dropped)."""
        if not covered:
            return None
        key = (covered[0].id, covered[-1].id, len(covered))
        with self.lock:
            found = self.ready.get(key)
        if found is None:
            return None
        summary, digest = found
        if digest_of(covered) != digest:
            with self.lock:
                self.ready.pop(key, None)
            return None
        return summary
