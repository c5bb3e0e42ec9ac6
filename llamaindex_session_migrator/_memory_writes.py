"""The writes of :class:`SessionMigratorMemory`: ``put``, ``put_messages``, ``set``, ``reset`` and
``close``, with their ``a``-forms, as the memory's base :class:`_MemoryWrites`.

It owns how the memory changes the session's log in the store: appends in one atomic write, a
``set`` planned against the stored log (append only what is new, delete what was dropped, or
rewrite), a reset that deletes the session, and closing a store the memory opened. The fitted
view, the model and the pydantic fields stay in :mod:`llamaindex_session_migrator._memory`,
which declares the attributes used here.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from llama_index.core.base.llms.types import ChatMessage

from llamaindex_session_migrator._convert import from_chat_message
from llamaindex_session_migrator._instrumentation import unlisten
from llamaindex_session_migrator._reconcile import plan_set

if TYPE_CHECKING:
    from llamaindex_session_migrator._handout import HandOut
    from llamaindex_session_migrator._memory_hooks import MemoryListener
    from session_migrator import SessionFitter
    from session_migrator.store import BaseSessionStore


class _MemoryWrites:
    """What a :class:`SessionMigratorMemory` writes to its session (its base)."""

    if TYPE_CHECKING:  # the memory's fields and private attributes, and its fitter
        chat_store_key: str
        _store: BaseSessionStore | None
        _owns_store: bool
        _fitter: SessionFitter | None
        _lock: Any
        _handout: HandOut
        _listener: MemoryListener[Any] | None

        def _get_fitter(self) -> SessionFitter: ...

    # -- writing ---------------------------------------------------------------------------

    def put(self, message: ChatMessage) -> None:
        """Append one message to the session (written at once)."""
        self.put_messages([message])

    async def aput(self, message: ChatMessage) -> None:
        """:meth:`put` in a worker thread."""
        await asyncio.to_thread(self.put, message)

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Append messages in one atomic store write, in order."""
        converted = [from_chat_message(m) for m in messages]
        self._get_fitter().append(converted)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """:meth:`put_messages` in a worker thread."""
        await asyncio.to_thread(self.put_messages, messages)

    def set(self, messages: list[ChatMessage]) -> None:
        """Make the log ``messages``, keeping the stored record (id, other frameworks' fields)
        of every message that is unchanged.

        Giving back the log, or a fitted view of it (with this library's summary or note), with
        new messages at the end appends only those; a log that keeps some stored messages in
        order and adds new ones after them deletes the others; anything else rewrites the
        session.
        """
        with self._lock:
            fitter = self._get_fitter()
            handout = self._handout
            plan = plan_set(fitter.messages, messages, handout.template, handout.markers)
            if plan.action == "append":
                fitter.append(plan.messages)
                return
            if plan.action == "delete_and_append":
                fitter.store.delete_messages(self.chat_store_key, plan.removed_ids)
            else:
                fitter.clear()
            self._fitter = None  # its cached log is stale
            self._get_fitter().append(plan.messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """:meth:`set` in a worker thread."""
        await asyncio.to_thread(self.set, messages)

    def reset(self) -> None:
        """Delete the session from the store (its log, summaries, counts and migration log)."""
        with self._lock:
            self._get_fitter().clear()
            self._fitter = None  # a new fitter: the old one remembers the deleted migration log
            self._handout.forget()
            if self._listener is not None:
                unlisten(self._listener)

    async def areset(self) -> None:
        """:meth:`reset` in a worker thread."""
        await asyncio.to_thread(self.reset)

    def close(self) -> None:
        """Close the store if this memory opened it (a store object given in is left open)."""
        with self._lock:
            if self._listener is not None:
                unlisten(self._listener)  # (no more calls are matched against this memory)
            if self._store is not None and self._owns_store:
                self._store.close()
                self._store = None
                self._fitter = None
                self._owns_store = False
