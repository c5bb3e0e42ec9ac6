"""All of a user's messages over the last N days, as one call: :func:`user_messages`.

A personal assistant reads what its user said this week across every session (a daily digest, a
"what did I ask you about lately?"). The sessions are those whose metadata ``user_id`` is the
user's, in any workspace (as ``erase_user`` matches them), read through the public store
protocol (``list_sessions``, ``load``), so it works on every backend; a session last active
before the window is not loaded.
"""

from __future__ import annotations

import time
from datetime import datetime

from session_migrator.messages._messages import Message
from session_migrator.store._backend import user_id_of
from session_migrator.store._facts import FACTS_WORKSPACE
from session_migrator.store._protocol import SyncSessionStore
from session_migrator.store._types import from_epoch, to_epoch

__all__ = ["user_messages"]


def user_messages(
    store: SyncSessionStore,
    user_id: str | int,
    days: float = 7,
    *,
    now: datetime | float | None = None,
) -> list[tuple[str, Message]]:
    """Every message of ``user_id``'s sessions said in the ``days`` days before ``now`` (default:
    the store's clock), oldest first, each as ``(session_id, message)``.

    A message's time is its ``timestamp`` (a store records when it was appended where it has
    none); ties keep the order of the sessions (oldest first) and of each session's log. Every
    role is included (the system prompt and the assistant's replies too: filter by ``role``).

    >>> from session_migrator import Message
    >>> from session_migrator.store import open_store
    >>> store = open_store("memory://")
    >>> _ = store.append("mon", [Message("user", "Book Kyoto")], metadata={"user_id": "ann"})
    >>> _ = store.append("tue", [Message("user", "And Osaka?")], metadata={"user_id": "ann"})
    >>> [(sid, m.text) for sid, m in user_messages(store, "ann", days=7)]
    [('mon', 'Book Kyoto'), ('tue', 'And Osaka?')]
    """
    wanted = user_id_of({"user_id": user_id})
    if wanted is None:
        raise ValueError(f"user_id must be a non-empty string or an integer, got {user_id!r}")
    valid = not isinstance(days, bool) and isinstance(days, (int, float))  # (from untyped code)
    if not valid or days < 0:
        raise ValueError(f"days must be a number >= 0, got {days!r}")
    if now is None:
        clock = getattr(store, "_clock", None)
        current = float(clock()) if callable(clock) else time.time()
    else:
        current = to_epoch(now)
    since = from_epoch(current - days * 86_400)
    until = from_epoch(current)
    sessions = [
        info
        for info in store.list_sessions(None)
        if info.workspace != FACTS_WORKSPACE
        and info.message_count
        and user_id_of(info.metadata) == wanted
        and info.updated_at >= since
    ]
    sessions.sort(key=lambda info: (info.created_at, info.id))
    found: list[tuple[datetime, str, Message]] = []
    for info in sessions:
        for m in store.load(info.id):
            when = m.timestamp
            if when is not None and since <= when <= until:
                found.append((when, info.id, m))
    found.sort(key=lambda row: row[0])  # (stable: ties keep the sessions' order)
    return [(sid, m) for _, sid, m in found]
