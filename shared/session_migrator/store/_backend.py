"""What a store backend is made of: the storage primitives it implements, and their record.

It owns :class:`BackendPrimitives`, the abstract half of
:class:`~session_migrator.store.BaseSessionStore`: the ``_``-prefixed primitives (each atomic
per call: append records, load bodies, delete ids, the session, workspace, user and retention
queries, metadata, summary and migration writes, leases) and the simple reads and writes a backend
answers itself (sessions, summaries, token counts, the migration log, ``close``), with the
:class:`Record` a message is stored as, the ``Clock`` type, and the helpers backends share
(:func:`display_url`, :func:`user_id_of`). The logic said once on top of them is in ``_base``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from session_migrator.messages._messages import Message
from session_migrator.store import _codec
from session_migrator.store._guard import guard_class
from session_migrator.store._types import MigrationRecord, SessionInfo, StoredSummary

__all__ = [
    "BackendPrimitives",
    "Clock",
    "Record",
    "display_url",
    "normal_user_id",
    "user_id_of",
]

Clock = Callable[[], float]


def display_url(url: str, **params: str | None) -> str:
    """``url`` without its password, with ``params`` (those not ``None``) in its query."""
    parts = urlsplit(url)
    if parts.password is not None:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        parts = parts._replace(netloc=netloc)
    query = parse_qsl(parts.query, keep_blank_values=True)
    query += [(k, v) for k, v in params.items() if v is not None]
    return urlunsplit(parts._replace(query=urlencode(query)))


def user_id_of(metadata: Mapping[str, Any] | None) -> str | None:
    """The ``user_id`` that ``erase_user`` matches: the value under that key as a string (a
    non-empty string, or an integer in decimal: ``42`` and ``"42"`` are one user)."""
    if metadata is None:
        return None
    return normal_user_id(metadata.get("user_id"))


def normal_user_id(value: object) -> str | None:
    """A user id as stores keep and match it: a non-empty string as it is, an integer (not a
    bool) in decimal; ``None`` for anything else."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


@dataclass(frozen=True, slots=True)
class Record:
    """One message ready to store: its id, role, stored body, and the original when offloaded.

    ``message``: what to keep instead of ``body``, for a backend that keeps messages as objects
    (``memory://``, which then leaves ``body`` empty).
    """

    id: str
    role: str
    body: str
    full: str | None = None
    message: Message | None = None


class BackendPrimitives(ABC):
    """What a backend implements, under :class:`~session_migrator.store.BaseSessionStore`."""

    @abstractmethod
    def _append(
        self,
        session_id: str,
        workspace: str,
        metadata: str,
        user_id: str | None,
        records: Sequence[Record],
        now: float,
    ) -> int:
        """Atomically create the session if needed and add the records whose id is new."""

    def _load_bodies(self, session_id: str, after: str | None) -> tuple[list[str], int]:
        """Stored bodies in order (after ``after``; MessageNotFoundError if it is unknown) and
        the session's message count, in one snapshot. A backend implements this, or
        :meth:`_load_counted` when it keeps messages as objects.
        """
        raise NotImplementedError

    def _load_counted(self, session_id: str, after: str | None) -> tuple[list[Message], int]:
        """The stored messages in order (after ``after``), decoded, and the message count."""
        bodies, count = self._load_bodies(session_id, after)
        return [_codec.message_from_json(b) for b in bodies], count

    @abstractmethod
    def _message_ids(self, session_id: str) -> list[str]:
        """Message ids in store order."""

    @abstractmethod
    def _delete_ids(self, session_id: str, ids: Sequence[str], now: float) -> int:
        """Delete messages with their offloaded outputs and token counts; the number deleted."""

    @abstractmethod
    def _offloaded_bodies(self, session_id: str, ids: Sequence[str]) -> dict[str, str]:
        """The stored originals of offloaded messages, by id (missing ids left out)."""

    @abstractmethod
    def _delete_session(self, session_id: str, *, only_if_empty: bool) -> bool:
        """Delete the session and everything of it (only if it has no messages, if asked)."""

    @abstractmethod
    def _ids_in(self, workspace: str) -> list[str]:
        """Ids of the sessions of ``workspace``."""

    @abstractmethod
    def _ids_of_user(self, user_id: str) -> list[str]:
        """Ids of the sessions whose metadata ``user_id`` is ``user_id``."""

    @abstractmethod
    def _messages_before(self, cutoff: float) -> dict[str, list[str]]:
        """Ids of messages stored before ``cutoff`` (epoch seconds), by session."""

    @abstractmethod
    def _set_metadata(
        self, session_id: str, metadata: str, user_id: str | None, now: float
    ) -> bool:
        """Replace the metadata; ``False`` when the session does not exist."""

    @abstractmethod
    def _put_summary(self, summary: StoredSummary, expected_revision: int) -> None:
        """Store ``summary`` if the revision is still ``expected_revision``, else ConflictError."""

    @abstractmethod
    def _delete_summary(self, session_id: str) -> None:
        """Drop the session's summary."""

    @abstractmethod
    def _log_migration(self, record: MigrationRecord) -> None:
        """Append a complete record to the log."""

    @abstractmethod
    def _acquire_lease(
        self, session_id: str, name: str, owner: str, ttl_seconds: float, now: float
    ) -> bool:
        """Atomically take lease ``name`` of the session for ``owner`` until ``now +
        ttl_seconds`` when it is free, expired or ``owner``'s already (renewed); whether
        ``owner`` holds it now. Unknown session: SessionNotFoundError."""

    @abstractmethod
    def _release_lease(self, session_id: str, name: str, owner: str) -> bool:
        """Drop lease ``name`` if ``owner`` holds it; whether it did."""

    @abstractmethod
    def get_session(self, session_id: str) -> SessionInfo | None:
        """The session's record, or ``None``."""

    @abstractmethod
    def list_sessions(self, workspace: str | None = "default") -> list[SessionInfo]:
        """Sessions of ``workspace`` (``None``: all), most recently active first."""

    @abstractmethod
    def get_summary(self, session_id: str) -> StoredSummary | None:
        """The session's summary, or ``None``."""

    @abstractmethod
    def get_token_counts(
        self, session_id: str, counter_name: str, ids: Iterable[str]
    ) -> dict[str, int]:
        """Cached token counts of messages for one counter (ids without a count left out)."""

    @abstractmethod
    def put_token_counts(
        self, session_id: str, counter_name: str, counts: Mapping[str, int]
    ) -> None:
        """Cache token counts of messages for one counter (replacing older values)."""

    @abstractmethod
    def migrations(self, session_id: str) -> list[MigrationRecord]:
        """The session's migration log, oldest first."""

    @abstractmethod
    def close(self) -> None:
        """Release connections (a memory store drops its data). Safe to call twice."""


guard_class(BackendPrimitives)
