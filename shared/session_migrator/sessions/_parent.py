"""A sub-agent's view of its parent: the note of what the parent session has done so far, sent
after a child session's system prompt within :data:`PARENT_SHARE` of the window (a child is a
session whose metadata names a ``parent_session_id``: an imported Claude Code sub-agent, or one
started with :meth:`~session_migrator.SessionFitter` ``metadata={"parent_session_id": ...}``).

The parent's rolling summary is used where the store keeps one (the summary its own fits wrote),
else the offline summary of its log; the task is the child's own first message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._units import stable_id
from session_migrator.messages._messages import MARKER_KEY, Message
from session_migrator.models._windows import ModelWindow
from session_migrator.summaries._extractive import ExtractiveSummarizer

if TYPE_CHECKING:
    from session_migrator.store import BaseSessionStore

__all__ = ["PARENT_SHARE", "parent_note", "session_notes"]

#: The most of a window's input the note of the parent session takes.
PARENT_SHARE = 0.15


def parent_note(
    store: BaseSessionStore, parent_id: str, window: ModelWindow, counter: TokenCounter
) -> Message | None:
    """The note of what session ``parent_id`` has done so far, within :data:`PARENT_SHARE` of
    ``window``'s input (``None``: no such session, or nothing in it)."""
    if store.get_session(parent_id) is None:
        return None
    room = int(min(window.max_input_tokens, window.context_window) * PARENT_SHARE)
    head = (
        f"[session-migrator: you are a sub-agent of session {parent_id}; what it has done so far]\n"
    )
    # the parent's own rolling summary of its older part, with what it did since
    stored = store.get_summary(parent_id)
    log = store.load(parent_id)
    ids = [m.id for m in log]
    # (a summary that ends on a placeholder's line, not a stored message: from the top)
    since = ids.index(stored.last_id) + 1 if stored is not None and stored.last_id in ids else 0
    newer = [m for m in log[since:] if m.role != "system"]
    if not newer and stored is None:
        return None
    text = ExtractiveSummarizer().summarize(
        newer,
        max_tokens=max(room - counter.count_text(head) - 8, 16),
        counter=counter,
        previous=stored.text if stored is not None else None,
    )
    note = Message(
        "system",
        head + text,
        id=stable_id("sm-parent", [parent_id, text]),
        extra={MARKER_KEY: {"kind": "parent_summary", "parent_session_id": parent_id}},
    )
    while counter.count_message(note) > room and len(text) > 40:
        text = text[: int(len(text) * 0.8)]
        note = note.replace(content=head + text + " [...]")
    return note if counter.count_message(note) <= room else None


def session_notes(
    store: BaseSessionStore,
    session_id: str,
    metadata: dict[str, object] | None,
    user_facts: bool,
    window: ModelWindow,
    counter: TokenCounter,
) -> list[Message]:
    """The notes a fit of ``session_id`` sends after its system prompt: the parent session's
    (a sub-agent's), then the user's facts (with ``user_facts``)."""
    from session_migrator.sessions._facts import facts_note

    info = store.get_session(session_id)
    meta = {**(info.metadata if info is not None else {}), **(metadata or {})}
    notes: list[Message] = []
    parent = meta.get("parent_session_id")
    if isinstance(parent, str) and parent and parent != session_id:
        note = parent_note(store, parent, window, counter)
        notes += [note] if note is not None else []
    user = meta.get("user_id")
    if user_facts and isinstance(user, str) and user:
        facts = facts_note(store, user, window, counter)
        notes += [facts] if facts is not None else []
    return notes
