"""``memory://``: a store in this process's memory, for tests and throwaway use.

Each ``open_store("memory://")`` is a new, empty store; it is gone when the object is. A message
goes through the same JSON codec as in the other backends when it is appended, so that it
accepts what they accept. What it keeps is what they would give back, without a copy of the
text: a message with no metadata (no ``extra``, content a string: everything in it immutable,
and the codec gives such a message back field for field) is kept as a frozen copy that shares
the appended message's strings, with a read-only empty ``extra``, and every load hands out that
copy. A message with metadata (``extra``, content parts: dicts a caller could change) keeps its
JSON and is decoded at each load, as elsewhere. Keeping every message as JSON would hold a second
copy of the session's text (1.2 times its size). Thread-safe: one lock around every operation.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from session_migrator._errors import SessionNotFoundError
from session_migrator.messages._messages import Message
from session_migrator.store import _codec
from session_migrator.store._backend import Clock, Record
from session_migrator.store._base import BaseSessionStore
from session_migrator.store._search import MemorySearch, words_of
from session_migrator.store._types import (
    MessageNotFoundError,
    MigrationRecord,
    SessionInfo,
    StoredSummary,
    conflict_error,
    from_epoch,
    sort_sessions,
)
from session_migrator.store._vectors import MemoryVectors

__all__ = ["MemoryStore"]


class _NoExtra(Mapping[str, Any]):
    """The ``extra`` of every kept message without metadata: empty, shared and read-only. A copy
    or a pickle of the message gets a plain ``{}`` instead (a mapping proxy would not pickle).
    """

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __reduce__(self) -> tuple[type[dict[str, Any]], tuple[()]]:
        return dict, ()

    def __repr__(self) -> str:
        return "{}"


_NO_EXTRA = _NoExtra()


@dataclass(slots=True)
class _Stored:
    seq: int
    # a frozen copy of a message without metadata (see _frozen), else its JSON
    kept: Message | str
    created_at: float

    # its searchable words, made at its first search (they go with it: see _search)
    searched: frozenset[str] | None = None

    def message(self) -> Message:
        kept = self.kept
        return kept if isinstance(kept, Message) else _codec.message_from_json(kept)

    def words(self) -> frozenset[str]:
        if self.searched is None:
            self.searched = frozenset(words_of(self.message().text))
        return self.searched


def _frozen(message: Message) -> Message | None:
    """The copy to keep of ``message`` when nothing in it can be changed: no ``extra`` and a
    string content (its strings are shared, its ``extra`` is read-only); else ``None``.
    """
    if message.extra or not isinstance(message.content, str):
        return None
    return message.replace(extra=_NO_EXTRA)


@dataclass
class _Session:
    workspace: str
    metadata: str
    user_id: str | None
    created_at: float
    updated_at: float
    last_seq: int = 0
    messages: dict[str, _Stored] = field(default_factory=dict)  # insertion order = store order
    offloaded: dict[str, str] = field(default_factory=dict)
    summary: StoredSummary | None = None
    # counter name -> message id -> count (a dict per counter, not one per message)
    tokens: dict[str, dict[str, int]] = field(default_factory=dict)
    migrations: list[MigrationRecord] = field(default_factory=list)
    # lease name -> (owner, expires at)
    leases: dict[str, tuple[str, float]] = field(default_factory=dict)

    def info(self, session_id: str) -> SessionInfo:
        return SessionInfo(
            id=session_id,
            workspace=self.workspace,
            message_count=len(self.messages),
            created_at=from_epoch(self.created_at),
            updated_at=from_epoch(self.updated_at),
            metadata=_codec.loads(self.metadata),
        )


class MemoryStore(MemorySearch, MemoryVectors, BaseSessionStore):
    """A session store in memory (``memory://``)."""

    def __init__(self, *, offload_threshold: int | None = None, clock: Clock | None = None) -> None:
        super().__init__(offload_threshold=offload_threshold, clock=clock)
        self.url = "memory://"
        self._lock = threading.RLock()
        self._sessions: dict[str, _Session] = {}

    def _record(self, message: Message) -> Record:
        # encoded as the other backends encode it (what they reject, this rejects), then the
        # JSON is dropped at once where a frozen copy is kept: a long append never holds both
        record = super()._record(message)
        if record.full is not None:
            return record  # offloaded: the preview and the original, as JSON
        frozen = _frozen(message)
        return record if frozen is None else replace(record, body="", message=frozen)

    def _append(
        self,
        session_id: str,
        workspace: str,
        metadata: str,
        user_id: str | None,
        records: Sequence[Record],
        now: float,
    ) -> int:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                session = _Session(workspace, metadata, user_id, now, now)
                self._sessions[session_id] = session
            added = 0
            for record in records:
                if record.id in session.messages:
                    continue
                session.last_seq += 1
                kept = record.message if record.message is not None else record.body
                session.messages[record.id] = _Stored(session.last_seq, kept, now)
                if record.full is not None:
                    session.offloaded[record.id] = record.full
                added += 1
            if added:
                session.updated_at = now
            return added

    def _stored(self, session_id: str, after: str | None) -> tuple[list[_Stored], int]:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return [], 0
            if after is None:
                return list(session.messages.values()), len(session.messages)
            if after not in session.messages:
                raise MessageNotFoundError(session_id, after)
            # ``after`` is usually the newest message or close to it: walk back from the end
            found: list[_Stored] = []
            for mid in reversed(session.messages):
                if mid == after:
                    break
                found.append(session.messages[mid])
            found.reverse()
            return found, len(session.messages)

    def _load_counted(self, session_id: str, after: str | None) -> tuple[list[Message], int]:
        stored, count = self._stored(session_id, after)
        return [s.message() for s in stored], count

    def _message_ids(self, session_id: str) -> list[str]:
        with self._lock:
            session = self._sessions.get(session_id)
            return list(session.messages) if session else []

    def _delete_ids(self, session_id: str, ids: Sequence[str], now: float) -> int:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return 0
            deleted = 0
            for mid in ids:
                if session.messages.pop(mid, None) is not None:
                    deleted += 1
                session.offloaded.pop(mid, None)
                for counts in session.tokens.values():
                    counts.pop(mid, None)
            self._drop_vectors(session_id, ids)
            return deleted

    def _offloaded_bodies(self, session_id: str, ids: Sequence[str]) -> dict[str, str]:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return {}
            return {mid: session.offloaded[mid] for mid in ids if mid in session.offloaded}

    def _delete_session(self, session_id: str, *, only_if_empty: bool) -> bool:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or (only_if_empty and session.messages):
                return False
            del self._sessions[session_id]
            self._drop_vectors(session_id, None)
            return True

    def _ids_in(self, workspace: str) -> list[str]:
        with self._lock:
            return [sid for sid, s in self._sessions.items() if s.workspace == workspace]

    def _ids_of_user(self, user_id: str) -> list[str]:
        with self._lock:
            return [sid for sid, s in self._sessions.items() if s.user_id == user_id]

    def _messages_before(self, cutoff: float) -> dict[str, list[str]]:
        with self._lock:
            out: dict[str, list[str]] = {}
            for sid, session in self._sessions.items():
                old = [mid for mid, m in session.messages.items() if m.created_at < cutoff]
                if old:
                    out[sid] = old
            return out

    def _set_metadata(
        self, session_id: str, metadata: str, user_id: str | None, now: float
    ) -> bool:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return False
            session.metadata = metadata
            session.user_id = user_id
            session.updated_at = now
            return True

    def _put_summary(self, summary: StoredSummary, expected_revision: int) -> None:
        with self._lock:
            session = self._sessions.get(summary.session_id)
            if session is None:
                raise SessionNotFoundError(summary.session_id)
            current = session.summary.revision if session.summary else 0
            if current != expected_revision:
                raise conflict_error(summary.session_id, expected_revision, current)
            session.summary = summary

    def _delete_summary(self, session_id: str) -> None:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                session.summary = None

    def _log_migration(self, record: MigrationRecord) -> None:
        with self._lock:
            session = self._sessions.get(record.session_id)
            if session is None:
                raise SessionNotFoundError(record.session_id)
            session.migrations.append(record)

    def _acquire_lease(
        self, session_id: str, name: str, owner: str, ttl_seconds: float, now: float
    ) -> bool:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                raise SessionNotFoundError(session_id)
            held = session.leases.get(name)
            if held is not None and held[0] != owner and held[1] > now:
                return False
            session.leases[name] = (owner, now + ttl_seconds)
            return True

    def _release_lease(self, session_id: str, name: str, owner: str) -> bool:
        with self._lock:
            session = self._sessions.get(session_id)
            held = session.leases.get(name) if session is not None else None
            if session is None or held is None or held[0] != owner:
                return False
            del session.leases[name]
            return True

    def get_session(self, session_id: str) -> SessionInfo | None:
        with self._lock:
            session = self._sessions.get(session_id)
            return session.info(session_id) if session else None

    def list_sessions(self, workspace: str | None = "default") -> list[SessionInfo]:
        with self._lock:
            infos = [
                s.info(sid)
                for sid, s in self._sessions.items()
                if workspace is None or s.workspace == workspace
            ]
        return sort_sessions(infos)

    def get_summary(self, session_id: str) -> StoredSummary | None:
        with self._lock:
            session = self._sessions.get(session_id)
            return session.summary if session else None

    def get_token_counts(
        self, session_id: str, counter_name: str, ids: Iterable[str]
    ) -> dict[str, int]:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return {}
            counts = session.tokens.get(counter_name)
            if not counts:
                return {}
            out: dict[str, int] = {}
            for mid in ids:
                n = counts.get(mid)
                if n is not None:
                    out[mid] = n
            return out

    def put_token_counts(
        self, session_id: str, counter_name: str, counts: Mapping[str, int]
    ) -> None:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return
            held = session.tokens.setdefault(counter_name, {})
            for mid, n in counts.items():
                if mid in session.messages:
                    held[mid] = int(n)

    def migrations(self, session_id: str) -> list[MigrationRecord]:
        with self._lock:
            session = self._sessions.get(session_id)
            return list(session.migrations) if session else []

    def close(self) -> None:
        with self._lock:
            self._sessions.clear()
