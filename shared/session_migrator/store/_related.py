"""The other sessions of a session's user or workspace, for recall across sessions.

:func:`related_sessions` (and its async twin :func:`arelated_sessions`) reads them through the
public store protocol (``get_session``, ``list_sessions``, ``load``), so it works on every
backend. Scopes:

- ``"user"``: the sessions whose metadata ``user_id`` equals this session's, in any workspace
  (as ``erase_user`` matches them); none when this session has no ``user_id`` (the report says
  so, and recall stays within the session);
- ``"workspace"``: the sessions of this session's workspace;
- ``"session"``: none (recall within the session only, as without this helper).

The session itself is never included. With a ``query`` (the question), the store's search
index (``search_messages``, see :mod:`._search`) picks the sessions holding its words among ALL
of the scope's sessions, read first (at most :data:`MAX_FOUND_SESSIONS`), then the most recently
active ones up to :data:`MAX_RECENT_MESSAGES` more messages; a store without a
``search_messages`` is read by recency only. A session found that is not among those most
recently active is read around the messages found only (:data:`WINDOW` messages before and
after each, by the store's ``load_around`` when it has one), not whole: at 1,000 sessions a
question sharing a common word with many of them reads a few hundred messages, not 2,000.
Bounded: at most :data:`MAX_RELATED_SESSIONS` (1,000) sessions are read, and at most
:data:`MAX_RELATED_MESSAGES` messages in all (the newest of a session that would pass the cap).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from session_migrator.messages._messages import Message
from session_migrator.recall._related import (
    RecallScope,
    RelatedSession,
    RelatedSessions,
    check_scope,
)
from session_migrator.store._base import window_places
from session_migrator.store._protocol import SessionStore, SyncSessionStore
from session_migrator.store._types import SessionInfo, sort_sessions

__all__ = [
    "MAX_FOUND_SESSIONS",
    "MAX_RECENT_MESSAGES",
    "MAX_RELATED_MESSAGES",
    "MAX_RELATED_SESSIONS",
    "WINDOW",
    "arelated_sessions",
    "related_sessions",
]

#: At most this many other sessions are read (the most recently active first).
MAX_RELATED_SESSIONS = 1_000
#: At most this many of their messages are read in all.
MAX_RELATED_MESSAGES = 5_000
#: With a query: at most this many sessions the search index found are read ...
MAX_FOUND_SESSIONS = 20
#: ... and then the most recently active sessions, up to this many messages more.
MAX_RECENT_MESSAGES = 1_000
#: A session the search found that is not among the most recently active is read around the
#: messages found: this many messages before and after each (their exchanges and neighbours).
WINDOW = 4
#: How many hits a search asks the store for (their sessions, best first, are read).
_HITS = 200


def related_sessions(
    store: SyncSessionStore,
    session_id: str,
    scope: RecallScope = "user",
    *,
    max_sessions: int = MAX_RELATED_SESSIONS,
    max_messages: int = MAX_RELATED_MESSAGES,
    previous: RelatedSessions | None = None,
    query: str | Sequence[Message] | None = None,
) -> RelatedSessions:
    """The other sessions of ``session_id``'s user or workspace (see the module docstring), for
    ``migrate(..., related=...)``.

    ``query`` (the question, or the session's messages: their newest user message is): the
    sessions the store's search index finds for it come first.

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
        asked = _question(query)
        search = getattr(store, "search_messages", None) if asked else None
        if search is not None:
            plan.found(search(asked, **plan.search_scope(), limit=_HITS))
        for info, around in plan.choose(store.list_sessions(plan.listed)):
            if around is not None:
                messages = _load_around(store, info.id, around)
            else:
                messages = plan.reused(info, previous) or store.load(info.id)
            if not plan.add(info, messages):
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
    query: str | Sequence[Message] | None = None,
) -> RelatedSessions:
    """:func:`related_sessions` through the store's async methods."""
    scope = check_scope(scope)
    if scope == "session":
        return RelatedSessions("session")
    info = await store.aget_session(session_id)
    plan = _Plan(session_id, scope, info, max_sessions, max_messages)
    if plan.searched:
        asked = _question(query)
        search = getattr(store, "asearch_messages", None) if asked else None
        if search is not None:
            plan.found(await search(asked, **plan.search_scope(), limit=_HITS))
        for info, around in plan.choose(await store.alist_sessions(plan.listed)):
            if around is not None:
                aload_around = getattr(store, "aload_around", None)
                if aload_around is not None:
                    messages = await aload_around(info.id, around, before=WINDOW, after=WINDOW)
                else:
                    messages = _window(await store.aload(info.id), around)
            else:
                messages = plan.reused(info, previous) or await store.aload(info.id)
            if not plan.add(info, messages):
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
        self.hit_sessions: list[str] | None = None  # (None: no search index asked)
        self.hit_ids: dict[str, list[str]] = {}  # the messages found, by session
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

    def search_scope(self) -> dict[str, str]:
        """The scope as ``search_messages`` takes it."""
        if self.scope == "user":
            assert self.user_id is not None
            return {"user_id": self.user_id}
        return {"workspace": self.workspace}

    def found(self, hits: list[tuple[str, Message]]) -> None:
        """The sessions of the search's hits, best first (this session left out)."""
        order: dict[str, None] = {}
        for sid, message in hits:
            if sid != self.session_id:
                order.setdefault(sid, None)
                self.hit_ids.setdefault(sid, []).append(message.id)
        self.hit_sessions = list(order)[:MAX_FOUND_SESSIONS]

    def choose(self, infos: list[SessionInfo]) -> list[tuple[SessionInfo, list[str] | None]]:
        """The sessions to read among those listed: the scope's (never another user's: the
        search's sessions are taken only when listed as the scope's), those the search found
        first, then the most recently active; each with the ids of the messages to read around
        (:data:`WINDOW`), or ``None`` to read it whole.

        A session the search found is read whole when it is among the most recently active
        (those read anyway, up to :data:`MAX_RECENT_MESSAGES`), else around the messages found
        only."""
        if self.scope == "user":
            mine = [i for i in infos if _user(i.metadata) == self.user_id]
        else:
            mine = [i for i in infos if i.workspace == self.workspace]
        mine = [i for i in sort_sessions(mine) if i.id != self.session_id and i.message_count]
        if self.hit_sessions is None:
            chosen = mine[: self.max_sessions]
            if len(mine) > len(chosen):
                self.notes.append(
                    f"recall scope {self.scope}: searched the {len(chosen)} most recently "
                    f"active of {len(mine)} other sessions"
                )
            return [(i, None) for i in chosen]
        by_id = {i.id: i for i in mine}
        hits = [by_id[sid] for sid in self.hit_sessions if sid in by_id]
        taken = {i.id for i in hits}
        recent: list[SessionInfo] = []
        whole: set[str] = set()  # the sessions found that are among the recently active
        room = MAX_RECENT_MESSAGES
        for info in mine:
            if room <= 0:
                break
            whole.add(info.id)
            if info.id not in taken:
                recent.append(info)
                room -= info.message_count
        self.left = min(self.left, sum(i.message_count for i in hits) + MAX_RECENT_MESSAGES)
        chosen = (hits + recent)[: self.max_sessions]
        if len(mine) > len(chosen):
            parts = sum(1 for i in hits if i.id not in whole)
            around = f" ({parts} of them around the messages found)" if parts else ""
            self.notes.append(
                f"recall scope {self.scope}: the search index searched all {len(mine)} other "
                f"sessions; read the {len(hits)} holding the question's words{around} and the "
                f"{len(chosen) - len(hits)} most recently active"
            )
        return [(i, None if i.id in whole else self.hit_ids[i.id]) for i in chosen]

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


def _load_around(store: SyncSessionStore, session_id: str, ids: list[str]) -> list[Message]:
    """The messages of ``session_id`` around ``ids`` (:data:`WINDOW`), by the store's
    ``load_around`` when it has one."""
    load_around = getattr(store, "load_around", None)
    if load_around is not None:
        found: list[Message] = load_around(session_id, ids, before=WINDOW, after=WINDOW)
        return found
    return _window(store.load(session_id), ids)


def _window(messages: list[Message], ids: list[str]) -> list[Message]:
    return [messages[k] for k in window_places([m.id for m in messages], ids, WINDOW, WINDOW)]


def _question(query: str | Sequence[Message] | None) -> str | None:
    """The question searched for: ``query``, or the newest user message of those given."""
    if query is not None and not isinstance(query, str):
        query = next((m.text for m in reversed(query) if m.role == "user"), None)
    return query if query and query.strip() else None


def _user(metadata: Mapping[str, Any]) -> str | None:
    user = metadata.get("user_id")
    return user if isinstance(user, str) else None
