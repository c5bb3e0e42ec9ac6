"""The ``SessionStore`` protocol: what every backend offers, sync and async.

Contract shared by every backend (one test suite checks it on each):

- the full conversation is kept; nothing a caller did not delete is ever dropped;
- ``append`` is atomic per call and idempotent by the caller's message ids within a session,
  or by a batch's idempotency key; a message is never dropped for repeating another's words
  (ids :func:`~session_migrator.messages_from_openai` derived are not deduplicated on); each
  call's messages keep their order and come after everything stored before it;
- ids (session, workspace, user, message) are data: any non-empty string is stored and found
  as given, never used as a path or spliced into a query;
- deletes take every trace of a message with it: offloaded output, cached counts, and a
  summary that covered it;
- a lease (``acquire_lease``/``release_lease``) is held by one owner at a time per session and
  name, until it is released or its time runs out; it goes with its session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Protocol, Self, runtime_checkable

from session_migrator.messages._messages import Message
from session_migrator.store._types import MigrationRecord, SessionInfo, StoredSummary

__all__ = ["SessionStore", "SyncSessionStore"]


@runtime_checkable
class SyncSessionStore(Protocol):
    """The synchronous half of :class:`SessionStore`."""

    url: str
    offload_threshold: int | None

    def append(
        self,
        session_id: str,
        messages: Iterable[Message],
        *,
        workspace: str = "default",
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> int: ...

    def load(
        self, session_id: str, *, after: str | None = None, full: bool = False
    ) -> list[Message]: ...

    def load_since(self, session_id: str, after: str | None) -> tuple[list[Message], int]: ...

    def get_session(self, session_id: str) -> SessionInfo | None: ...

    def set_metadata(self, session_id: str, metadata: Mapping[str, Any]) -> None: ...

    def list_sessions(self, workspace: str | None = "default") -> list[SessionInfo]: ...

    def delete_messages(self, session_id: str, ids: Iterable[str]) -> int: ...

    def delete_range(self, session_id: str, first_id: str, last_id: str) -> int: ...

    def delete_by_tool(self, session_id: str, tool_name: str) -> int: ...

    def delete_session(self, session_id: str) -> bool: ...

    def erase_workspace(self, workspace: str) -> int: ...

    def erase_user(self, user_id: str | int) -> int: ...

    def purge_older_than(self, days: float, *, now: datetime | float | None = None) -> int: ...

    def get_summary(self, session_id: str) -> StoredSummary | None: ...

    def put_summary(
        self,
        session_id: str,
        text: str,
        *,
        first_id: str,
        last_id: str,
        covered_count: int,
        model: str | None,
        strategy: str,
        expected_revision: int,
    ) -> StoredSummary: ...

    def get_token_counts(
        self, session_id: str, counter_name: str, ids: Iterable[str]
    ) -> dict[str, int]: ...

    def put_token_counts(
        self, session_id: str, counter_name: str, counts: Mapping[str, int]
    ) -> None: ...

    # message vectors of an embedding model (float32 bytes, see ._vectors)
    def get_vectors(self, session_id: str, model: str, ids: Iterable[str]) -> dict[str, bytes]: ...

    def put_vectors(self, session_id: str, model: str, vectors: Mapping[str, bytes]) -> None: ...

    def delete_vectors(self, model: str) -> int: ...

    def log_migration(self, record: MigrationRecord) -> MigrationRecord: ...

    def migrations(self, session_id: str) -> list[MigrationRecord]: ...

    def get_offloaded(self, session_id: str, message_id: str) -> str: ...

    # a named lease on a session (one owner at a time, across processes; see ._base)
    def acquire_lease(self, session_id: str, name: str, owner: str, ttl_seconds: float) -> bool: ...

    def release_lease(self, session_id: str, name: str, owner: str) -> bool: ...

    def close(self) -> None: ...


@runtime_checkable
class SessionStore(SyncSessionStore, Protocol):
    """A durable log of sessions: messages, summaries, token counts, migrations.

    Every method has an async twin prefixed ``a`` (``aappend``, ``aload``, ...) with the same
    arguments. Stores are context managers (sync and async) that close on exit. Open one with
    :func:`~session_migrator.store.open_store`.

    >>> from session_migrator import Message
    >>> from session_migrator.store import open_store
    >>> with open_store("memory://") as store:
    ...     store.append("s1", [Message("user", "hi", id="m1")])
    ...     store.append("s1", [Message("user", "hi", id="m1")])  # same id: stored once
    ...     [m.text for m in store.load("s1")]
    1
    0
    ['hi']
    """

    async def aappend(
        self,
        session_id: str,
        messages: Iterable[Message],
        *,
        workspace: str = "default",
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> int: ...

    async def aload(
        self, session_id: str, *, after: str | None = None, full: bool = False
    ) -> list[Message]: ...

    async def aload_since(
        self, session_id: str, after: str | None
    ) -> tuple[list[Message], int]: ...

    async def aget_session(self, session_id: str) -> SessionInfo | None: ...

    async def aset_metadata(self, session_id: str, metadata: Mapping[str, Any]) -> None: ...

    async def alist_sessions(self, workspace: str | None = "default") -> list[SessionInfo]: ...

    async def adelete_messages(self, session_id: str, ids: Iterable[str]) -> int: ...

    async def adelete_range(self, session_id: str, first_id: str, last_id: str) -> int: ...

    async def adelete_by_tool(self, session_id: str, tool_name: str) -> int: ...

    async def adelete_session(self, session_id: str) -> bool: ...

    async def aerase_workspace(self, workspace: str) -> int: ...

    async def aerase_user(self, user_id: str | int) -> int: ...

    async def apurge_older_than(
        self, days: float, *, now: datetime | float | None = None
    ) -> int: ...

    async def aget_summary(self, session_id: str) -> StoredSummary | None: ...

    async def aput_summary(
        self,
        session_id: str,
        text: str,
        *,
        first_id: str,
        last_id: str,
        covered_count: int,
        model: str | None,
        strategy: str,
        expected_revision: int,
    ) -> StoredSummary: ...

    async def aget_token_counts(
        self, session_id: str, counter_name: str, ids: Iterable[str]
    ) -> dict[str, int]: ...

    async def aput_token_counts(
        self, session_id: str, counter_name: str, counts: Mapping[str, int]
    ) -> None: ...

    async def aget_vectors(
        self, session_id: str, model: str, ids: Iterable[str]
    ) -> dict[str, bytes]: ...

    async def aput_vectors(
        self, session_id: str, model: str, vectors: Mapping[str, bytes]
    ) -> None: ...

    async def adelete_vectors(self, model: str) -> int: ...

    async def alog_migration(self, record: MigrationRecord) -> MigrationRecord: ...

    async def amigrations(self, session_id: str) -> list[MigrationRecord]: ...

    async def aget_offloaded(self, session_id: str, message_id: str) -> str: ...

    async def aacquire_lease(
        self, session_id: str, name: str, owner: str, ttl_seconds: float
    ) -> bool: ...

    async def arelease_lease(self, session_id: str, name: str, owner: str) -> bool: ...

    async def aclose(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc: object) -> None: ...
