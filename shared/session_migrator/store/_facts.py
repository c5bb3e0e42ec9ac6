"""A user's facts and preferences, kept per user in any store.

The facts of the user ``U`` are kept in the metadata of one message-less session,
``session-migrator:facts:U`` in the workspace :data:`FACTS_WORKSPACE`, whose ``user_id`` is
``U``: every backend keeps them (SQLite, PostgreSQL, Redis, memory), the user's other sessions
never list it as one to recall from (it holds no message), and ``erase_user(U)`` erases it with
the rest of the user's data.

Each fact is kept with its source message's id and date; a later fact with the same key
replaces the earlier one (see :mod:`session_migrator.summaries._facts`).

Every change (set, delete, learn, keep) reads the facts, changes them and writes them back
while it holds a lease on the facts' session (``acquire_lease``, one statement or script on
the server in every backend): a writer in another thread or process waits for it, so no
writer's change is lost.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from session_migrator._errors import StoreError
from session_migrator.messages._messages import Message
from session_migrator.store._protocol import SyncSessionStore
from session_migrator.summaries._facts import extract_facts

__all__ = [
    "FACTS_WORKSPACE",
    "UserFact",
    "delete_user_fact",
    "keep_user_facts",
    "learn_user_facts",
    "set_user_fact",
    "user_facts",
]

FACTS_WORKSPACE = "session-migrator:facts"
#: The lease a writer of a user's facts holds; a crashed writer's ends after this many seconds.
_LEASE, _HOLD_SECONDS = "user-facts", 30.0
#: How long a writer waits for another writer's lease before it gives up.
WAIT_SECONDS = 10.0


@dataclass(frozen=True)
class UserFact:
    """One fact of a user: ``key`` (what it is about), ``text``, the id of the message it was
    read from (``None``: set by hand) and when it was stated."""

    key: str
    text: str
    source_id: str | None
    stated_at: datetime | None


def _session(user_id: str) -> str:
    if not user_id:
        raise ValueError(f"user_id must be a non-empty string, got {user_id!r}")
    return f"session-migrator:facts:{user_id}"


def _raw(store: SyncSessionStore, user_id: str) -> dict[str, dict[str, Any]]:
    info = store.get_session(_session(user_id))
    facts = info.metadata.get("facts") if info is not None else None
    return dict(facts) if isinstance(facts, Mapping) else {}


@contextmanager
def _held(store: SyncSessionStore, user_id: str, *, create: bool = True) -> Iterator[bool]:
    """Hold ``user_id``'s facts for one read, change and write (yields whether they exist:
    with ``create``, the facts' session is made first, leaving another writer's as it is)."""
    sid = _session(user_id)
    if store.get_session(sid) is None:
        if not create:
            yield False
            return
        store.append(sid, [], workspace=FACTS_WORKSPACE, metadata={"user_id": user_id})
    owner = uuid.uuid4().hex
    deadline = time.monotonic() + WAIT_SECONDS
    pause = 0.001
    while not store.acquire_lease(sid, _LEASE, owner, _HOLD_SECONDS):
        if time.monotonic() > deadline:
            raise StoreError(
                f"the facts of user {user_id!r} were held by another writer for more than "
                f"{WAIT_SECONDS:g} s"
            )
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
    try:
        yield True
    finally:
        store.release_lease(sid, _LEASE, owner)


def _write(store: SyncSessionStore, user_id: str, facts: Mapping[str, dict[str, Any]]) -> None:
    sid = _session(user_id)
    metadata = {"user_id": user_id, "facts": dict(facts)}
    if store.get_session(sid) is None:
        store.append(sid, [], workspace=FACTS_WORKSPACE, metadata=metadata)
    store.set_metadata(sid, metadata)


def user_facts(store: SyncSessionStore, user_id: str) -> list[UserFact]:
    """The facts kept for ``user_id``, oldest statement first.

    >>> from session_migrator.store import open_store
    >>> store = open_store("memory://")
    >>> _ = set_user_fact(store, "ann", "diet", "I'm vegetarian.")
    >>> [f.text for f in user_facts(store, "ann")]
    ["I'm vegetarian."]
    """
    out = []
    for key, row in _raw(store, user_id).items():
        when = row.get("stated_at")
        out.append(
            UserFact(
                key,
                str(row.get("text", "")),
                row.get("source_id"),
                datetime.fromisoformat(when) if isinstance(when, str) else None,
            )
        )
    return sorted(out, key=lambda f: f.stated_at or datetime.min.replace(tzinfo=UTC))


def set_user_fact(
    store: SyncSessionStore,
    user_id: str,
    key: str,
    text: str,
    *,
    source_id: str | None = None,
    stated_at: datetime | None = None,
) -> UserFact:
    """Keep (or replace) ``user_id``'s fact ``key``."""
    if not key.strip() or not text.strip():
        raise ValueError("a user fact needs a non-empty key and text")
    when = stated_at or datetime.now(UTC)
    with _held(store, user_id):
        facts = _raw(store, user_id)
        facts[key] = {"text": text, "source_id": source_id, "stated_at": when.isoformat()}
        _write(store, user_id, facts)
    return UserFact(key, text, source_id, when)


def delete_user_fact(store: SyncSessionStore, user_id: str, key: str) -> bool:
    """Forget ``user_id``'s fact ``key``; ``False`` when there was none."""
    with _held(store, user_id, create=False) as held:
        facts = _raw(store, user_id) if held else {}
        if facts.pop(key, None) is None:
            return False
        _write(store, user_id, facts)
    return True


def learn_user_facts(
    store: SyncSessionStore, user_id: str, messages: Iterable[Message]
) -> list[UserFact]:
    """Read the facts the user's ``messages`` state (by rules, offline) and keep them; a later
    statement replaces an earlier one about the same thing. Returns the facts learnt."""
    learnt: list[UserFact] = []
    for m in messages:
        if m.role != "user" or m.marker is not None:
            continue
        for fact in extract_facts(m.text):
            learnt.append(UserFact(fact.key, fact.text, m.id, m.timestamp or datetime.now(UTC)))
    if not learnt:
        return learnt
    with _held(store, user_id):
        facts = _raw(store, user_id)
        for f in learnt:
            facts.pop(f.key, None)
            facts[f.key] = {"text": f.text, "source_id": f.source_id, "stated_at": _iso(f)}
        _write(store, user_id, facts)
    return learnt


def _iso(fact: UserFact) -> str:
    assert fact.stated_at is not None
    return fact.stated_at.isoformat()


def keep_user_facts(
    store: SyncSessionStore,
    user_id: str,
    facts: Iterable[UserFact],
    *,
    superseding: Iterable[str] = (),
) -> list[UserFact]:
    """Keep ``facts`` (read in the background, by a model): each replaces the fact of its key
    unless that one was stated later (a slow extraction never undoes a newer statement). The
    facts kept earlier from the messages ``superseding`` names (the rules' facts of the messages
    the model read) and not stated again are dropped. Returns the facts kept."""
    fresh = list(facts)
    dropped = {str(s) for s in superseding}
    if not fresh and not dropped:
        return []
    with _held(store, user_id, create=bool(fresh)) as held:
        if not held:
            return []
        return _keep(store, user_id, fresh, dropped)


def _keep(
    store: SyncSessionStore, user_id: str, fresh: list[UserFact], dropped: set[str]
) -> list[UserFact]:
    stored = _raw(store, user_id)
    again = {f.key for f in fresh}
    changed = False
    for key, row in list(stored.items()):
        if row.get("source_id") in dropped and key not in again:
            del stored[key]
            changed = True
    kept: list[UserFact] = []
    for fact in fresh:
        when = fact.stated_at or datetime.now(UTC)
        old = stored.get(fact.key)
        was = old.get("stated_at") if isinstance(old, Mapping) else None
        if isinstance(was, str) and datetime.fromisoformat(was) > when:
            continue  # (stated after the message this one was read from)
        stored.pop(fact.key, None)
        stored[fact.key] = {
            "text": fact.text,
            "source_id": fact.source_id,
            "stated_at": when.isoformat(),
        }
        kept.append(UserFact(fact.key, fact.text, fact.source_id, when))
    if kept or changed:
        _write(store, user_id, stored)
    return kept
