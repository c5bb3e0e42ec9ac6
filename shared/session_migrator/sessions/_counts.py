"""A session's token counts kept in its store, beside the counter's own cache.

Before a fit counts the messages new to it, :meth:`StoredCounts.prime` seeds the counter with
the counts the store has for them (a session reopened, or counted by another process, is not
tokenized again); after the fit, :meth:`StoredCounts.persist` writes the counts the store has
no count for yet, by the counter that caches them (an estimating counter's o200k counts, valid
whatever its calibration), from where it stopped the time before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from session_migrator.counting._counter import TokenCounter
from session_migrator.messages._messages import Message

if TYPE_CHECKING:
    from session_migrator.store import BaseSessionStore

__all__ = ["StoredCounts"]


class StoredCounts:
    """The counts of session ``session_id`` in the store ``store()`` gives (see the module)."""

    def __init__(self, store: Callable[[], BaseSessionStore], session_id: str) -> None:
        self._store = store
        self.session_id = session_id
        self._persisted: dict[str, int] = {}  # counter name -> messages written up to here
        self._from_store: set[str] = set()  # ids whose count was read (not to write again)

    def restart(self) -> None:
        """The session's messages were read or cleared again: persist from the top."""
        self._persisted = {}

    def prime(self, messages: list[Message], counter: TokenCounter) -> None:
        """Seed ``counter``'s cache with the counts the store has for ``messages``."""
        owner = getattr(counter, "cache_owner", counter)
        cached = getattr(owner, "cached", None)
        prime = getattr(owner, "prime", None)
        if cached is None or prime is None:
            return
        # a message with tool calls is counted afresh: counts stored before the calls' ids were
        # counted (_tokens) are short by the ids' tokens
        missing = [m for m in messages if not m.tool_calls and cached(m) is None]
        if not missing:
            return
        stored = self._store().get_token_counts(
            self.session_id, owner.name, [m.id for m in missing]
        )
        if stored:
            prime({m: stored[m.id] for m in missing if m.id in stored})
            self._from_store.update(stored)

    def persist(self, messages: list[Message], counter: TokenCounter) -> None:
        """Write the counts of ``messages`` the store has no count for yet."""
        owner = getattr(counter, "cache_owner", counter)
        cached = getattr(owner, "cached", None)
        if cached is None:
            return
        start = self._persisted.get(owner.name, 0)
        fresh: dict[str, int] = {}
        done = len(messages)
        for k in range(start, len(messages)):
            m = messages[k]
            value = cached(m)
            if value is None:
                done = min(done, k)
            elif m.id not in self._from_store:
                fresh[m.id] = value
        if fresh:
            self._store().put_token_counts(self.session_id, owner.name, fresh)
        self._persisted[owner.name] = done
        self._from_store.clear()
