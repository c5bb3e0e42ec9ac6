"""``SessionChatStore``: LlamaIndex's ``AsyncDBChatStore`` (what ``Memory`` keeps its FIFO queue
in) on a session store, so the whole conversation stays in the store.

``Memory`` archives the oldest messages of its queue when it is over its limit; here archiving
deletes nothing: the archived messages are the oldest ones of the session, and where the active
queue starts is kept in the session's metadata (``llamaindex_archived_through``: the id of the
newest archived message). Every other reader of the session (the CLI, a LangChain history, a
``SessionMigratorMemory``) sees the whole log.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus

from llamaindex_session_migrator._convert import from_chat_message
from llamaindex_session_migrator._handout import HandOut
from session_migrator import Message, SessionFitter
from session_migrator.store import BaseSessionStore

__all__ = ["ARCHIVED_THROUGH", "SessionChatStore"]

#: The session metadata key holding the id of the newest archived message.
ARCHIVED_THROUGH = "llamaindex_archived_through"


class SessionChatStore(AsyncDBChatStore):
    """An ``AsyncDBChatStore`` whose keys are sessions of ``store`` (see the module docstring).

    >>> import asyncio
    >>> from llama_index.core.base.llms.types import ChatMessage
    >>> from session_migrator import open_store
    >>> chats = SessionChatStore.on(open_store("memory://"))
    >>> asyncio.run(chats.add_message("s", ChatMessage(role="user", content="hi")))
    >>> [m.content for m in asyncio.run(chats.get_messages("s"))]
    ['hi']
    """

    _store: BaseSessionStore | None = PrivateAttr(default=None)
    _workspace: str = PrivateAttr(default="default")
    _logs: dict[str, SessionFitter] = PrivateAttr(default_factory=dict)
    _handout: HandOut = PrivateAttr(default_factory=HandOut)
    _lock: Any = PrivateAttr(default_factory=threading.RLock)

    @classmethod
    def on(cls, store: BaseSessionStore, workspace: str = "default") -> SessionChatStore:
        """The chat store over ``store`` (new sessions go to ``workspace``)."""
        chats = cls()
        chats._store = store
        chats._workspace = workspace
        return chats

    @classmethod
    def class_name(cls) -> str:
        return "SessionChatStore"

    @property
    def store(self) -> BaseSessionStore:
        if self._store is None:
            raise RuntimeError("SessionChatStore.on(store) makes a usable chat store")
        return self._store

    # -- the log and where its active part starts ---------------------------------------------

    def _log(self, key: str) -> SessionFitter:
        log = self._logs.get(key)
        if log is None:
            log = SessionFitter(key, store=self.store, workspace=self._workspace)
            self._logs[key] = log
        return log

    def split(self, key: str) -> tuple[list[Message], int]:
        """The session's log and how many of its oldest messages are archived."""
        with self._lock:
            messages = self._log(key).messages
            info = self.store.get_session(key) if messages else None
            through = info.metadata.get(ARCHIVED_THROUGH) if info is not None else None
            for i, m in enumerate(messages):
                if m.id == through:
                    return messages, i + 1
            return messages, 0

    def _set_archived(self, key: str, messages: list[Message], count: int) -> None:
        info = self.store.get_session(key)
        if info is None:
            return
        metadata = dict(info.metadata)
        if count > 0:
            metadata[ARCHIVED_THROUGH] = messages[count - 1].id
        else:
            metadata.pop(ARCHIVED_THROUGH, None)
        self.store.set_metadata(key, metadata)

    def _select(self, key: str, status: MessageStatus | None) -> list[Message]:
        messages, archived = self.split(key)
        if status == MessageStatus.ACTIVE:
            return messages[archived:]
        if status == MessageStatus.ARCHIVED:
            return messages[:archived]
        return messages

    def active(self, key: str) -> list[Message]:
        """The stored messages of the active queue, oldest first (what ``get_messages`` with
        status ``ACTIVE`` converts)."""
        return self._select(key, MessageStatus.ACTIVE)

    def _delete(self, key: str, doomed: list[Message]) -> None:
        if doomed:
            self.store.delete_messages(key, [m.id for m in doomed])

    # -- the sync work behind the async API -----------------------------------------------

    def get_sync(
        self, key: str, status: MessageStatus | None, limit: int | None, offset: int | None
    ) -> list[ChatMessage]:
        chosen = self._select(key, status)[offset or 0 :]
        if limit is not None:
            chosen = chosen[:limit]
        return [self._handout.fresh(m) for m in chosen]

    def add_sync(self, key: str, messages: list[ChatMessage], status: MessageStatus) -> None:
        with self._lock:
            log = self._log(key)
            before, archived = self.split(key)
            if status == MessageStatus.ARCHIVED and archived < len(before):
                raise ValueError(
                    "archived messages are the oldest of a session: add them before any "
                    "active message, or archive with archive_oldest_messages"
                )
            log.append([from_chat_message(m) for m in messages])
            if status == MessageStatus.ARCHIVED and messages:
                after = log.messages
                self._set_archived(key, after, len(after))

    def set_sync(self, key: str, messages: list[ChatMessage], status: MessageStatus) -> None:
        with self._lock:
            self._log(key).clear()
            self._logs.pop(key, None)
            self._handout.forget()
            self.add_sync(key, messages, status)

    def delete_sync(self, key: str, status: MessageStatus | None) -> None:
        with self._lock:
            if status is None:
                self._log(key).clear()
                self._logs.pop(key, None)
                return
            messages, archived = self.split(key)
            if status == MessageStatus.ACTIVE:
                self._delete(key, messages[archived:])
            else:
                self._delete(key, messages[:archived])
                self._set_archived(key, messages, 0)

    def oldest_sync(self, key: str, n: int, archive: bool) -> list[ChatMessage]:
        with self._lock:
            messages, archived = self.split(key)
            if archive:
                chosen = messages[archived : archived + max(0, n)]
                self._set_archived(key, messages, archived + len(chosen))
            else:
                chosen = messages[: max(0, n)]
                self._delete(key, chosen)
                if archived:
                    self._set_archived(key, messages[len(chosen) :], max(0, archived - n))
            return [self._handout.fresh(m) for m in chosen]

    # -- AsyncDBChatStore ----------------------------------------------------------------------

    async def get_messages(
        self,
        key: str,
        status: MessageStatus | None = MessageStatus.ACTIVE,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[ChatMessage]:
        return await asyncio.to_thread(self.get_sync, key, status, limit, offset)

    async def count_messages(
        self, key: str, status: MessageStatus | None = MessageStatus.ACTIVE
    ) -> int:
        return len(await asyncio.to_thread(self._select, key, status))

    async def add_message(
        self, key: str, message: ChatMessage, status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        await asyncio.to_thread(self.add_sync, key, [message], status)

    async def add_messages(
        self,
        key: str,
        messages: list[ChatMessage],
        status: MessageStatus = MessageStatus.ACTIVE,
    ) -> None:
        await asyncio.to_thread(self.add_sync, key, messages, status)

    async def set_messages(
        self,
        key: str,
        messages: list[ChatMessage],
        status: MessageStatus = MessageStatus.ACTIVE,
    ) -> None:
        await asyncio.to_thread(self.set_sync, key, messages, status)

    async def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        def work() -> ChatMessage | None:
            with self._lock:
                messages, archived = self.split(key)
                if not 0 <= idx < len(messages):
                    return None
                doomed = messages[idx]
                self._delete(key, [doomed])
                if idx < archived:
                    rest = messages[:idx] + messages[idx + 1 :]
                    self._set_archived(key, rest, archived - 1)
                return self._handout.fresh(doomed)

        return await asyncio.to_thread(work)

    async def delete_messages(self, key: str, status: MessageStatus | None = None) -> None:
        await asyncio.to_thread(self.delete_sync, key, status)

    async def delete_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        return await asyncio.to_thread(self.oldest_sync, key, n, False)

    async def archive_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        return await asyncio.to_thread(self.oldest_sync, key, n, True)

    async def get_keys(self) -> list[str]:
        return [s.id for s in await asyncio.to_thread(self.store.list_sessions, self._workspace)]
