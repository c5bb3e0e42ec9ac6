"""The other sessions of a session's user or workspace, for recall across sessions.

:func:`related_sessions` (and its async twin :func:`arelated_sessions`) reads them through the
public store protocol (``get_session``, ``list_sessions``, ``load``), so it works on every
backend. Scopes:

- ``"user"``: the sessions whose metadata ``user_id`` equals this session's, in any workspace
  (as ``erase_user`` matches them); none when this session has no ``user_id`` (the report says
  so, and recall stays within the session);
- ``"workspace"``: the sessions of this session's workspace;
- ``"session"``: none (recall within the session only, as without this helper).

The session itself is never included. Bounded: the :data:`MAX_RELATED_SESSIONS` (1,000) most
recently active sessions are read, and at most :data:`MAX_RELATED_MESSAGES` messages in all (the
newest of a session that would pass the cap).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from session_migrator.messages._messages import Message
from session_migrator.recall._related import (
    RecallScope,
    RelatedSession,
    RelatedSessions,
    check_scope,
)
from session_migrator.store._protocol import SessionStore, SyncSessionStore
from session_migrator.store._types import SessionInfo, sort_sessions

__all__ = ["MAX_RELATED_MESSAGES", "MAX_RELATED_SESSIONS", "arelated_sessions", "related_sessions"]

#: At most this many other sessions are read (the most recently active first).
MAX_RELATED_SESSIONS = 1_000
#: At most this many of their messages are read in all.
MAX_RELATED_MESSAGES = 5_000


def related_sessions(
    store: SyncSessionStore,
    session_id: str,
    scope: RecallScope = "user",
    *,
    max_sessions: int = MAX_RELATED_SESSIONS,
    max_messages: int = MAX_RELATED_MESSAGES,
    previous: RelatedSessions | None = None,
) -> RelatedSessions:
    """The other sessions of ``session_id``'s user or workspace (see the module docstring), for
    ``migrate(..., related=...)``.

    ``previous`` (an earlier answer) lends the messages of the sessions unchanged since (same
    message count and last activity), so that they are not loaded again.

    >>> from session_migrator import Message
    >>> from session_migrator.store import open_store, related_sessions
    >>> store = open_store("memory://")
    >>> _ = store.append("trip", [Message("user", "Book the Sakura")], metadata={"user_id": "ann"})
    >>> _ = store.append("today", [Message("user", "hi")], metadata={"user_id": "ann"})
    >>> [s.id for s in related_sessions(store, "today", "user").sessions]
    ['trip']
    """
    scope = check_scope(scope)
    if scope == "session":
        return RelatedSessions("session")
    plan = _Plan(session_id, scope, store.get_session(session_id), max_sessions, max_messages)
    if plan.searched:
        for info in plan.choose(store.list_sessions(plan.listed)):
            if not plan.add(info, plan.reused(info, previous) or store.load(info.id)):
                break
    return plan.result()


async def arelated_sessions(
    store: SessionStore,
    session_id: str,
    scope: RecallScope = "user",
    *,
    max_sessions: int = MAX_RELATED_SESSIONS,
    max_messages: int = MAX_RELATED_MESSAGES,
    previous: RelatedSessions | None = None,
) -> RelatedSessions:
    """:func:`related_sessions` through the store's async methods."""
    scope = check_scope(scope)
    if scope == "session":
        return RelatedSessions("session")
    info = await store.aget_session(session_id)
    plan = _Plan(session_id, scope, info, max_sessions, max_messages)
    if plan.searched:
        for info in plan.choose(await store.alist_sessions(plan.listed)):
            if not plan.add(info, plan.reused(info, previous) or await store.aload(info.id)):
                break
    return plan.result()


class _Plan:
    """Which sessions a scope takes, the messages read of them, and what the report should
    say about them."""

    def __init__(
        self,
        session_id: str,
        scope: RecallScope,
        info: SessionInfo | None,
        max_sessions: int,
        max_messages: int,
    ) -> None:
        if max_sessions < 0 or max_messages < 0:
            raise ValueError("max_sessions and max_messages must not be negative")
        self.session_id, self.scope = session_id, scope
        self.max_sessions, self.left = max_sessions, max_messages
        self.notes: list[str] = []
        self.sessions: list[RelatedSession] = []
        self.user_id: str | None = None
        self.listed: str | None = None  # the workspace to list (None: every workspace)
        self.workspace = info.workspace if info is not None else ""
        self.searched = False
        if info is None:
            self.notes.append(
                f"recall scope {scope}: session {session_id!r} is not in the store; recalled "
                "from this session only"
            )
            return
        if scope == "workspace":
            self.listed, self.searched = info.workspace, True
            return
        self.user_id = _user(info.metadata)
        self.searched = bool(self.user_id)
        if not self.searched:
            self.notes.append(
                f"recall scope user: session {session_id!r} has no user_id in its metadata; "
                "recalled from this session only (set one with set_metadata, or use the "
                "workspace scope)"
            )

    def choose(self, infos: list[SessionInfo]) -> list[SessionInfo]:
        """The sessions to read among those listed: the scope's, the most recently active."""
        if self.scope == "user":
            mine = [i for i in infos if _user(i.metadata) == self.user_id]
        else:
            mine = [i for i in infos if i.workspace == self.workspace]
        mine = [i for i in sort_sessions(mine) if i.id != self.session_id and i.message_count]
        chosen = mine[: self.max_sessions]
        if len(mine) > len(chosen):
            self.notes.append(
                f"recall scope {self.scope}: searched the {len(chosen)} most recently active "
                f"of {len(mine)} other sessions"
            )
        return chosen

    @staticmethod
    def reused(info: SessionInfo, previous: RelatedSessions | None) -> list[Message] | None:
        """The messages ``previous`` holds of ``info``'s session, if it has not changed since."""
        for held in previous.sessions if previous is not None else ():
            if (
                held.id == info.id
                and held.message_count == info.message_count
                and held.updated_at == info.updated_at
                and len(held.messages) == info.message_count
            ):
                return list(held.messages)
        return None

    def add(self, info: SessionInfo, messages: list[Message]) -> bool:
        """Take ``info``'s session (its newest messages, to the cap); ``False``: the cap is
        reached, read no more."""
        if self.left <= 0:
            self.notes.append(
                f"recall scope {self.scope}: read the most messages of other sessions allowed; "
                "less recently active sessions were not searched"
            )
            return False
        if not messages:
            return True  # (deleted since it was listed)
        title = info.metadata.get("title")
        self.sessions.append(
            RelatedSession(
                info.id,
                messages[-self.left :],
                workspace=info.workspace,
                title=title if isinstance(title, str) and title else None,
                updated_at=info.updated_at,
                message_count=info.message_count,
            )
        )
        self.left -= min(self.left, len(messages))
        return True

    def result(self) -> RelatedSessions:
        return RelatedSessions(self.scope, tuple(self.sessions), tuple(self.notes))


def _user(metadata: Mapping[str, Any]) -> str | None:
    user = metadata.get("user_id")
    return user if isinstance(user, str) else None
