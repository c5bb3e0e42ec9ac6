"""The compaction lease of a fitter: one compaction per session at a time, across processes.

A :class:`~session_migrator.sessions._compactor.Compactor` job takes the lease ``compaction`` of
its session in the session's store before it calls the summarizer, and lets it go once written
(see :meth:`~session_migrator.store.BaseSessionStore.acquire_lease`). The owner is this fitter:
its host, process id and a random part, so two fitters (in one process or in two) never share
it. The compactor sees only :class:`~session_migrator.sessions._compactor.Lease`'s two methods:
it stays store-agnostic.
"""

from __future__ import annotations

import os
import socket
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from session_migrator.store import BaseSessionStore

__all__ = ["COMPACTION", "StoreLease", "new_owner"]

#: The name of the lease a compaction holds on its session.
COMPACTION = "compaction"


def new_owner() -> str:
    """A lease owner id of its own: host, process id, and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:16]}"


class StoreLease:
    """Lease ``name`` of ``session_id`` in ``store``, held as ``owner`` (default: a new one)."""

    def __init__(
        self,
        store: BaseSessionStore,
        session_id: str,
        *,
        name: str = COMPACTION,
        owner: str | None = None,
    ) -> None:
        self._store = store
        self.session_id = session_id
        self.name = name
        self.owner = owner or new_owner()

    def acquire(self, ttl_seconds: float) -> bool:
        return self._store.acquire_lease(self.session_id, self.name, self.owner, ttl_seconds)

    def release(self) -> None:
        self._store.release_lease(self.session_id, self.name, self.owner)

    def __repr__(self) -> str:
        return f"StoreLease({self.session_id!r}, {self.name!r}, owner={self.owner!r})"
