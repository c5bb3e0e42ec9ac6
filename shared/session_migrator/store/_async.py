"""Async twins of the store methods, run in a worker thread with ``asyncio.to_thread``.

Each ``a``-method takes the same arguments as its sync twin and returns the same result. A
backend with a native async driver may override them; the contract is the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from session_migrator.messages._messages import Message
from session_migrator.store._types import MigrationRecord, SessionInfo, StoredSummary

if TYPE_CHECKING:
    from session_migrator.store._protocol import SyncSessionStore

__all__ = ["AsyncMixin"]


class AsyncMixin:
    """Adds the async twins to a class that has the sync methods of ``SyncSessionStore``."""

    async def aappend(
        self: SyncSessionStore,
        session_id: str,
        messages: Iterable[Message],
        *,
        workspace: str = "default",
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> int:
        batch = list(messages)  # consume the iterable on the caller's thread
        return await asyncio.to_thread(
            self.append,
            session_id,
            batch,
            workspace=workspace,
            metadata=metadata,
            idempotency_key=idempotency_key,
        )

    async def aload(
        self: SyncSessionStore, session_id: str, *, after: str | None = None, full: bool = False
    ) -> list[Message]:
        return await asyncio.to_thread(self.load, session_id, after=after, full=full)

    async def aload_around(
        self, session_id: str, ids: Iterable[str], *, before: int = 4, after: int = 4
    ) -> list[Message]:
        wanted = list(ids)
        store: Any = self
        found: list[Message] = await asyncio.to_thread(
            store.load_around, session_id, wanted, before=before, after=after
        )
        return found

    async def aload_since(
        self: SyncSessionStore, session_id: str, after: str | None
    ) -> tuple[list[Message], int]:
        return await asyncio.to_thread(self.load_since, session_id, after)

    async def aget_session(self: SyncSessionStore, session_id: str) -> SessionInfo | None:
        return await asyncio.to_thread(self.get_session, session_id)

    async def aset_metadata(
        self: SyncSessionStore, session_id: str, metadata: Mapping[str, Any]
    ) -> None:
        await asyncio.to_thread(self.set_metadata, session_id, metadata)

    async def alist_sessions(
        self: SyncSessionStore, workspace: str | None = "default"
    ) -> list[SessionInfo]:
        return await asyncio.to_thread(self.list_sessions, workspace)

    async def adelete_messages(self: SyncSessionStore, session_id: str, ids: Iterable[str]) -> int:
        return await asyncio.to_thread(self.delete_messages, session_id, list(ids))

    async def adelete_range(
        self: SyncSessionStore, session_id: str, first_id: str, last_id: str
    ) -> int:
        return await asyncio.to_thread(self.delete_range, session_id, first_id, last_id)

    async def adelete_by_tool(self: SyncSessionStore, session_id: str, tool_name: str) -> int:
        return await asyncio.to_thread(self.delete_by_tool, session_id, tool_name)

    async def adelete_session(self: SyncSessionStore, session_id: str) -> bool:
        return await asyncio.to_thread(self.delete_session, session_id)

    async def aerase_workspace(self: SyncSessionStore, workspace: str) -> int:
        return await asyncio.to_thread(self.erase_workspace, workspace)

    async def aerase_user(self: SyncSessionStore, user_id: str | int) -> int:
        return await asyncio.to_thread(self.erase_user, user_id)

    async def apurge_older_than(
        self: SyncSessionStore, days: float, *, now: datetime | float | None = None
    ) -> int:
        return await asyncio.to_thread(self.purge_older_than, days, now=now)

    async def aget_summary(self: SyncSessionStore, session_id: str) -> StoredSummary | None:
        return await asyncio.to_thread(self.get_summary, session_id)

    async def aput_summary(
        self: SyncSessionStore,
        session_id: str,
        text: str,
        *,
        first_id: str,
        last_id: str,
        covered_count: int,
        model: str | None,
        strategy: str,
        expected_revision: int,
    ) -> StoredSummary:
        return await asyncio.to_thread(
            self.put_summary,
            session_id,
            text,
            first_id=first_id,
            last_id=last_id,
            covered_count=covered_count,
            model=model,
            strategy=strategy,
            expected_revision=expected_revision,
        )

    async def aget_token_counts(
        self: SyncSessionStore, session_id: str, counter_name: str, ids: Iterable[str]
    ) -> dict[str, int]:
        return await asyncio.to_thread(self.get_token_counts, session_id, counter_name, list(ids))

    async def aput_token_counts(
        self: SyncSessionStore, session_id: str, counter_name: str, counts: Mapping[str, int]
    ) -> None:
        await asyncio.to_thread(self.put_token_counts, session_id, counter_name, dict(counts))

    async def aget_vectors(
        self: SyncSessionStore, session_id: str, model: str, ids: Iterable[str]
    ) -> dict[str, bytes]:
        return await asyncio.to_thread(self.get_vectors, session_id, model, list(ids))

    async def aput_vectors(
        self: SyncSessionStore, session_id: str, model: str, vectors: Mapping[str, bytes]
    ) -> None:
        await asyncio.to_thread(self.put_vectors, session_id, model, dict(vectors))

    async def adelete_vectors(self: SyncSessionStore, model: str) -> int:
        return await asyncio.to_thread(self.delete_vectors, model)

    async def alog_migration(self: SyncSessionStore, record: MigrationRecord) -> MigrationRecord:
        return await asyncio.to_thread(self.log_migration, record)

    async def amigrations(self: SyncSessionStore, session_id: str) -> list[MigrationRecord]:
        return await asyncio.to_thread(self.migrations, session_id)

    async def aget_offloaded(self: SyncSessionStore, session_id: str, message_id: str) -> str:
        return await asyncio.to_thread(self.get_offloaded, session_id, message_id)

    async def aacquire_lease(
        self: SyncSessionStore, session_id: str, name: str, owner: str, ttl_seconds: float
    ) -> bool:
        return await asyncio.to_thread(self.acquire_lease, session_id, name, owner, ttl_seconds)

    async def arelease_lease(
        self: SyncSessionStore, session_id: str, name: str, owner: str
    ) -> bool:
        return await asyncio.to_thread(self.release_lease, session_id, name, owner)

    async def aclose(self: SyncSessionStore) -> None:
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self: SyncSessionStore,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.close)
