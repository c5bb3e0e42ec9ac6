"""Records the stores return, and the store's own errors.

Times are timezone-aware UTC datetimes; the stores keep them as epoch seconds.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from session_migrator._errors import ConflictError, StoreError

__all__ = [
    "MessageNotFoundError",
    "MigrationRecord",
    "NotOffloadedError",
    "SessionInfo",
    "StoredSummary",
    "conflict_error",
    "from_epoch",
    "sort_sessions",
    "to_epoch",
]


@functools.lru_cache(maxsize=65_536)
def from_epoch(seconds: float) -> datetime:
    """A UTC datetime from epoch seconds (a datetime does not change: a listing's repeated
    times are made once)."""
    return datetime.fromtimestamp(seconds, tz=UTC)


def to_epoch(value: datetime | float) -> float:
    """Epoch seconds from a datetime (naive means UTC) or a number."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.timestamp()
    return float(value)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session as listed: its id, workspace, message count, creation and last append time.

    ``metadata`` is the JSON object given when the session was created or by ``set_metadata``;
    its ``user_id`` key (a string) is what ``erase_user`` matches.
    """

    id: str
    workspace: str
    message_count: int
    created_at: datetime
    updated_at: datetime
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StoredSummary:
    """A rolling summary of a session and the messages it covers.

    ``first_id`` .. ``last_id`` (inclusive, in store order) is the covered range and
    ``covered_count`` how many messages it summarises. ``revision`` starts at 1 and grows by one
    on every write: ``put_summary`` takes the revision the writer last saw, so two writers cannot
    overwrite each other's summary unnoticed.
    """

    session_id: str
    text: str
    first_id: str
    last_id: str
    covered_count: int
    model: str | None
    strategy: str
    revision: int
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class MigrationRecord:
    """One migration of a session to another model, as logged.

    ``decision`` is the migration's decision (e.g. ``"fits"`` or ``"compressed"``); ``at`` is set
    by the store when ``None``.
    """

    session_id: str
    from_model: str | None
    to_model: str
    tokens_before: int
    tokens_after: int
    budget: int
    strategy: str
    decision: str
    at: datetime | None = None


class MessageNotFoundError(StoreError, LookupError):
    """A message id named in a call is not in the session."""

    def __init__(self, session_id: str, message_id: str) -> None:
        self.session_id = session_id
        self.message_id = message_id
        super().__init__(
            f"No message {_short(message_id)} in session {_short(session_id)}. "
            "Show the session's message ids with `session-migrator sessions show SESSION_ID`."
        )

    def __reduce__(self) -> tuple[type[MessageNotFoundError], tuple[str, str]]:
        return (type(self), (self.session_id, self.message_id))


class NotOffloadedError(StoreError, LookupError):
    """The message has no offloaded tool output (it is stored whole, or does not exist)."""

    def __init__(self, session_id: str, message_id: str) -> None:
        self.session_id = session_id
        self.message_id = message_id
        super().__init__(
            f"Message {_short(message_id)} of session {_short(session_id)} has no offloaded "
            "output: it is stored whole (load it with `load`), or it does not exist."
        )

    def __reduce__(self) -> tuple[type[NotOffloadedError], tuple[str, str]]:
        return (type(self), (self.session_id, self.message_id))


def sort_sessions(infos: list[SessionInfo]) -> list[SessionInfo]:
    """``infos`` sorted most recently active first, then by id."""
    infos.sort(key=lambda i: i.id)
    infos.sort(key=lambda i: i.updated_at, reverse=True)
    return infos


def conflict_error(session_id: str, expected: int, current: int) -> ConflictError:
    """The error for a summary write that lost a race."""
    return ConflictError(
        f"the summary of session {_short(session_id)} is at revision {current}, not {expected}: "
        "another writer changed it. Read it again (get_summary), merge, and retry with "
        f"expected_revision={current}."
    )


def _short(value: str, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 4]}...{text[-1]}"
