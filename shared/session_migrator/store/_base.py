"""The logic every backend shares, on top of a few storage primitives.

A backend subclasses :class:`BaseSessionStore` and implements the ``_``-prefixed primitives
(atomic per call) plus the simple reads and writes (sessions, summaries, token counts, the
migration log), all declared in ``_backend``. Everything that can be said once is said here:
argument checks, the message codec, offloading, restoring offloaded outputs, range and tool
deletes, dropping a summary that covered a deleted message, retention purge, and the async twins
(``asyncio.to_thread``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

from session_migrator._errors import SessionNotFoundError, StoreError
from session_migrator.messages._messages import Message
from session_migrator.messages._storage_ids import storage_ids
from session_migrator.store import _codec
from session_migrator.store._async import AsyncMixin
from session_migrator.store._backend import (
    BackendPrimitives,
    Clock,
    Record,
    normal_user_id,
    user_id_of,
)
from session_migrator.store._guard import check_id, guard_class
from session_migrator.store._offload import is_offloaded, offload
from session_migrator.store._search import NoSearch
from session_migrator.store._types import (
    MessageNotFoundError,
    MigrationRecord,
    NotOffloadedError,
    StoredSummary,
    from_epoch,
    to_epoch,
)
from session_migrator.store._vectors import NoVectors

__all__ = ["BaseSessionStore", "check_id", "window_places"]


class BaseSessionStore(NoSearch, NoVectors, AsyncMixin, BackendPrimitives):
    """Shared behaviour of every backend. See :class:`~session_migrator.store.SessionStore`.

    ``offload_threshold`` (tokens, ``None`` = off) turns on offloading of large tool outputs;
    ``clock`` (epoch seconds) stamps sessions, messages, summaries and migrations.
    """

    url: str = ""
    #: The driver's errors that become :class:`StoreError` (see :mod:`._guard`).
    backend_errors: tuple[type[BaseException], ...] = ()
    #: What to check when the driver fails, said after its error.
    backend_hint: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        guard_class(cls)  # every backend's methods check ids and translate errors

    def store_error(self, method: str, exc: BaseException) -> StoreError:
        """The :class:`StoreError` for a driver error ``exc`` raised by ``method``."""
        reason = str(exc).strip() or type(exc).__name__
        hint = f" {self.backend_hint}" if self.backend_hint else ""
        return StoreError(f"{self.url}: {method} failed: {type(exc).__name__}: {reason}.{hint}")

    def __init__(self, *, offload_threshold: int | None = None, clock: Clock | None = None) -> None:
        if offload_threshold is not None and offload_threshold < 0:
            raise StoreError("offload_threshold must be a number of tokens >= 0, or None")
        self.offload_threshold = offload_threshold
        self._clock: Clock = clock or time.time

    # -- messages ---------------------------------------------------------------------------

    def append(
        self,
        session_id: str,
        messages: Iterable[Message],
        *,
        workspace: str = "default",
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> int:
        """Append ``messages`` in order; returns how many were newly stored.

        Creates the session (with ``workspace`` and ``metadata``) when it does not exist; for an
        existing session both are left as they are (use :meth:`set_metadata`). The session's
        ``updated_at`` (last activity) moves only when a message is added. A message whose id
        the caller gave and that is already in the session is skipped, so appending the same
        message twice stores it once. An id :func:`~session_migrator.messages_from_openai`
        derived is not the caller's: such a message is always stored (the same words said
        twice are two messages), unless ``idempotency_key`` names the batch: the same batch
        sent again under the same key is stored once (see
        :func:`~session_migrator.messages._storage_ids.storage_ids`). The call is atomic: after a
        crash
        either all of its new messages are stored or none, and it reads nothing of the
        session (its cost does not grow with the session). With ``offload_threshold`` set, a
        large tool output is stored as a preview (see :mod:`session_migrator.store._offload`;
        ``load(full=True)`` gives the original back).
        """
        if idempotency_key is not None:
            check_id(idempotency_key, "idempotency_key")
        batch = list(messages)
        for i, message in enumerate(batch):
            if not isinstance(message, Message):
                raise StoreError(
                    f"message {i}: expected a session_migrator.Message, got "
                    f"{type(message).__name__}; use messages_from_openai(...) for OpenAI dicts"
                )
            check_id(message.id, f"message {i} id")
        records: list[Record] = []
        seen: set[str] = set()
        now = self._clock()
        said = datetime.fromtimestamp(now, UTC)  # when a message without a time was said
        for message in storage_ids(batch, idempotency_key):
            if message.id in seen:
                continue
            seen.add(message.id)
            if message.timestamp is None:
                message = message.replace(timestamp=said)
            records.append(self._record(message))
        meta = _codec.dumps(dict(metadata)) if metadata is not None else "{}"
        return self._append(session_id, workspace, meta, user_id_of(metadata), records, now)

    def now(self) -> datetime:
        """The store's clock now: the time :meth:`append` gives a message that has none."""
        return datetime.fromtimestamp(self._clock(), UTC)

    def stored_form(self, message: Message) -> Message:
        """``message`` as :meth:`load` gives it back once appended: the preview of a tool output
        this store offloads, else ``message`` itself. A reader that keeps what it appended keeps
        this, so it sees (and counts) what every other reader of the session sees.
        """
        if self.offload_threshold is not None:
            preview = offload(message, self.offload_threshold)
            if preview is not None:
                return preview
        return message

    def _record(self, message: Message) -> Record:
        stored = self.stored_form(message)
        if stored is not message:
            return Record(
                message.id,
                message.role,
                _codec.message_to_json(stored),
                _codec.message_to_json(message),
            )
        return Record(message.id, message.role, _codec.message_to_json(message))

    def load(
        self, session_id: str, *, after: str | None = None, full: bool = False
    ) -> list[Message]:
        """The session's messages in store order; ``[]`` for an unknown session.

        ``after`` returns only the messages appended after that message id (a
        :class:`MessageNotFoundError` when it is not in the session). ``full=True`` puts the
        original tool outputs in place of offloaded previews.
        """
        messages = self._load_counted(session_id, after)[0]
        if full:
            wanted = [m.id for m in messages if is_offloaded(m)]
            if wanted:
                originals = self._offloaded_bodies(session_id, wanted)
                messages = [
                    _codec.message_from_json(originals[m.id]) if m.id in originals else m
                    for m in messages
                ]
        return messages

    def load_around(
        self, session_id: str, ids: Iterable[str], *, before: int = 4, after: int = 4
    ) -> list[Message]:
        """The session's messages within ``before`` places before and ``after`` places after
        each message of ``ids``, in store order, as :meth:`load` gives them (ids not in the
        session are left out; ``[]`` for an unknown session): the neighbourhood of the
        messages a search found, read without the rest of the session."""
        if before < 0 or after < 0:
            raise ValueError("before and after must not be negative")
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        bodies = self._bodies_around(session_id, wanted, before, after)
        if bodies is not None:
            return [_codec.message_from_json(b) for b in bodies]
        messages = self._load_counted(session_id, None)[0]
        return [messages[k] for k in window_places([m.id for m in messages], wanted, before, after)]

    def _bodies_around(
        self, session_id: str, ids: list[str], before: int, after: int
    ) -> list[str] | None:
        """The stored bodies :meth:`load_around` returns, read by the backend (``None``: the
        backend reads the whole session, and the window is cut from it)."""
        return None

    def load_since(self, session_id: str, after: str | None) -> tuple[list[Message], int]:
        """The messages after message ``after`` (every message, for ``None``) and how many
        messages the session holds, read in one snapshot: a reader that holds the older
        messages sees a deletion among them by the count (less than it holds plus the new).

        ``([], 0)`` for an unknown session; :class:`MessageNotFoundError` when ``after`` is not
        in the session.
        """
        return self._load_counted(session_id, after)

    def get_offloaded(self, session_id: str, message_id: str) -> str:
        """The full text of an offloaded tool output, exactly as appended.

        Raises :class:`NotOffloadedError` when the message was stored whole or does not exist.
        """
        found = self._offloaded_bodies(session_id, [message_id])
        if message_id not in found:
            raise NotOffloadedError(session_id, message_id)
        return _codec.message_from_json(found[message_id]).text

    def delete_messages(self, session_id: str, ids: Iterable[str]) -> int:
        """Delete messages by id (unknown ids are ignored); returns how many were deleted.

        Their offloaded outputs and cached token counts go with them, and so does the session's
        summary when it covered one of them (it may quote it). Tool calls and results are not
        paired up here: use :meth:`delete_by_tool` for that.
        """
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return 0
        summary = self.get_summary(session_id)
        drop_summary = summary is not None and _covers_any(
            summary, self._message_ids(session_id), set(wanted)
        )
        deleted = self._delete_ids(session_id, wanted, self._clock())
        if drop_summary and deleted:
            self._delete_summary(session_id)
        return deleted

    def delete_range(self, session_id: str, first_id: str, last_id: str) -> int:
        """Delete ``first_id`` .. ``last_id`` inclusive, in store order; returns the count.

        Raises :class:`MessageNotFoundError` for an id not in the session and
        :class:`StoreError` when ``first_id`` comes after ``last_id``.
        """
        order = self._message_ids(session_id)
        position = {mid: i for i, mid in enumerate(order)}
        for mid in (first_id, last_id):
            if mid not in position:
                raise MessageNotFoundError(session_id, mid)
        start, stop = position[first_id], position[last_id]
        if start > stop:
            raise StoreError(
                f"delete_range: {first_id!r} comes after {last_id!r} in session {session_id!r}; "
                "give the older message first"
            )
        return self.delete_messages(session_id, order[start : stop + 1])

    def delete_by_tool(self, session_id: str, tool_name: str) -> int:
        """Delete the calls of tool ``tool_name`` and their results; returns the count.

        Deleted: every assistant message with a call to ``tool_name``, every tool result that
        answers a call of a deleted message, and every tool result named ``tool_name``. An
        assistant message that also calls other tools is deleted whole, together with all of
        its results: stored messages are never rewritten, and keeping it would leave a call
        without its result. No orphan tool result or unanswered call is left behind.
        """
        doomed: list[str] = []
        call_ids: set[str] = set()
        for message in self.load(session_id):
            if message.tool_calls and any(c.name == tool_name for c in message.tool_calls):
                doomed.append(message.id)
                call_ids.update(c.id for c in message.tool_calls)
            elif message.role == "tool" and (
                message.tool_call_id in call_ids or message.name == tool_name
            ):
                doomed.append(message.id)
        return self.delete_messages(session_id, doomed)

    def delete_session(self, session_id: str) -> bool:
        """Delete a session with everything of it; ``False`` when there was none."""
        return self._delete_session(session_id, only_if_empty=False)

    def erase_workspace(self, workspace: str) -> int:
        """Delete every session of ``workspace``; returns how many sessions were deleted."""
        return sum(self._delete_session(s, only_if_empty=False) for s in self._ids_in(workspace))

    def erase_user(self, user_id: str | int) -> int:
        """Delete every session whose metadata ``user_id`` is ``user_id``; returns the count.
        An integer id and its decimal string are one user (``42`` and ``"42"``)."""
        uid = normal_user_id(user_id)
        assert uid is not None  # (the guard refused anything else)
        return sum(self._delete_session(s, only_if_empty=False) for s in self._ids_of_user(uid))

    def purge_older_than(self, days: float, *, now: datetime | float | None = None) -> int:
        """Delete messages stored more than ``days`` days before ``now``; returns the count.

        ``now`` defaults to the store's clock. Summaries that covered a purged message are
        dropped, and a session left without messages is deleted.
        """
        if days < 0:
            raise StoreError("purge_older_than: days must be >= 0")
        current = self._clock() if now is None else to_epoch(now)
        purged = 0
        for session_id, ids in self._messages_before(current - days * 86_400).items():
            purged += self.delete_messages(session_id, ids)
            self._delete_session(session_id, only_if_empty=True)
        return purged

    # -- sessions, summaries, counts, log ---------------------------------------------------

    def set_metadata(self, session_id: str, metadata: Mapping[str, Any]) -> None:
        """Replace the session's metadata (a JSON object); unknown session: SessionNotFoundError."""
        meta = _codec.dumps(dict(metadata))
        if not self._set_metadata(session_id, meta, user_id_of(metadata), self._clock()):
            raise SessionNotFoundError(session_id)

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
    ) -> StoredSummary:
        """Write the session's summary if its revision is still ``expected_revision``.

        ``expected_revision`` is the revision the writer read (0: no summary yet). On a match
        the summary is stored with revision ``expected_revision + 1`` and returned; otherwise
        :class:`~session_migrator.ConflictError` is raised and nothing is written. Unknown
        session: :class:`~session_migrator.SessionNotFoundError`.
        """
        if expected_revision < 0:
            raise StoreError("expected_revision must be >= 0 (0 = no summary yet)")
        if covered_count < 0:
            raise StoreError("covered_count must be >= 0")
        summary = StoredSummary(
            session_id=session_id,
            text=text,
            first_id=first_id,
            last_id=last_id,
            covered_count=covered_count,
            model=model,
            strategy=strategy,
            revision=expected_revision + 1,
            updated_at=from_epoch(self._clock()),
        )
        self._put_summary(summary, expected_revision)
        return summary

    def log_migration(self, record: MigrationRecord) -> MigrationRecord:
        """Append ``record`` to the session's migration log (``at`` filled in when ``None``)."""
        check_id(record.session_id, "session_id")
        if record.at is None:
            record = replace(record, at=from_epoch(self._clock()))
        self._log_migration(record)
        return record

    # -- leases -----------------------------------------------------------------------------

    def acquire_lease(self, session_id: str, name: str, owner: str, ttl_seconds: float) -> bool:
        """Hold lease ``name`` on the session for ``owner`` for ``ttl_seconds``; whether
        ``owner`` holds it now.

        ``True`` when the lease was free, had expired, or was ``owner``'s already (its time is
        then renewed); ``False`` while another owner holds it. One statement or script on the
        server, so of several processes asking at once one gets it. Its time is the store's
        clock (Redis: the server's). Use one ``owner`` id per process (or per worker) and
        :meth:`release_lease` when done; a lease dies with its session (deleted, erased,
        purged). Unknown session: :class:`~session_migrator.SessionNotFoundError`.
        """
        ttl = float(ttl_seconds)
        if not (ttl > 0 and math.isfinite(ttl)):
            raise StoreError(
                f"ttl_seconds must be a positive number of seconds, not {ttl_seconds!r}"
            )
        return self._acquire_lease(session_id, name, owner, ttl, self._clock())

    def release_lease(self, session_id: str, name: str, owner: str) -> bool:
        """Drop lease ``name`` of the session if ``owner`` holds it; whether it did (another
        owner's lease, or none, is left as it is)."""
        return self._release_lease(session_id, name, owner)

    # -- context manager --------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


def _covers_any(summary: StoredSummary, order: Sequence[str], deleted: set[str]) -> bool:
    """Whether the summary's range (in ``order``) holds a deleted id (unknown ends: assume so)."""
    position = {mid: i for i, mid in enumerate(order)}
    start = position.get(summary.first_id, 0)
    stop = position.get(summary.last_id)
    if stop is None:
        return bool(deleted & set(order)) or bool(deleted & {summary.first_id, summary.last_id})
    return any(mid in deleted for mid in order[start : stop + 1])


guard_class(BaseSessionStore)


def window_places(order: Sequence[str], ids: Sequence[str], before: int, after: int) -> list[int]:
    """The places of ``order`` within ``before`` / ``after`` places of each of ``ids`` found in
    it, ascending."""
    wanted = set(ids)
    places: set[int] = set()
    for k, mid in enumerate(order):
        if mid in wanted:
            places.update(range(max(k - before, 0), min(k + after + 1, len(order))))
    return sorted(places)
