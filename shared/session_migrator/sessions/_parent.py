"""A sub-agent's view of its parent: the note of what the parent session has done so far, sent
after a child session's system prompt within :data:`PARENT_SHARE` of the window (a child is a
session whose metadata names a ``parent_session_id``: an imported Claude Code sub-agent, or one
started with :meth:`~session_migrator.SessionFitter` ``metadata={"parent_session_id": ...}``).

The parent's rolling summary is used where the store keeps one (the summary its own fits wrote),
else the offline summary of its log; the task is the child's own first message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._units import stable_id
from session_migrator.messages._messages import MARKER_KEY, Message
from session_migrator.models._windows import ModelWindow
from session_migrator.summaries._extractive import ExtractiveSummarizer

if TYPE_CHECKING:
    from session_migrator.store import BaseSessionStore

__all__ = ["PARENT_SHARE", "parent_note", "parent_summary", "session_notes"]

#: The most of a window's input the note of the parent session takes.
PARENT_SHARE = 0.15


def parent_note(
    store: BaseSessionStore, parent_id: str, window: ModelWindow, counter: TokenCounter
) -> Message | None:
    """The note of what session ``parent_id`` has done so far, within :data:`PARENT_SHARE` of
    ``window``'s input (``None``: no such session, or nothing in it)."""
    if store.get_session(parent_id) is None:
        return None
    # the parent's own rolling summary of its older part, with what it did since
    stored = store.get_summary(parent_id)
    log = store.load(parent_id)
    ids = [m.id for m in log]
    # (a summary that ends on a placeholder's line, not a stored message: from the top)
    since = ids.index(stored.last_id) + 1 if stored is not None and stored.last_id in ids else 0
    return parent_summary(
        log[since:],
        window,
        counter=counter,
        parent=parent_id,
        previous=stored.text if stored is not None else None,
    )


def parent_summary(
    messages: Sequence[Message],
    window: ModelWindow,
    *,
    counter: TokenCounter | None = None,
    parent: str | None = None,
    previous: str | None = None,
) -> Message | None:
    """The note a sub-agent is sent of its parent's work so far (the parent's ``messages``,
    folded into ``previous``, the parent's own summary of what came before them, if any): a
    system message within :data:`PARENT_SHARE` of ``window``'s input, to send after the
    sub-agent's system prompt and before its task. ``None`` when there is nothing to tell.

    >>> from session_migrator import Message, ModelWindow
    >>> w = ModelWindow("small", "example", 4_000, 4_000, 0, "o200k_base", "explicit")
    >>> note = parent_summary([Message("user", "Find why invoice INV-7 was billed twice.")], w)
    >>> "INV-7" in note.text
    True
    """
    from session_migrator.counting._tokens import counter_for

    counter = counter or counter_for(window.tokenizer, model=window.name)
    newer = [m for m in messages if m.role != "system"]
    if not newer and previous is None:
        return None
    room = int(min(window.max_input_tokens, window.context_window) * PARENT_SHARE)
    of = f" of session {parent}" if parent else ""
    head = f"[session-migrator: you are a sub-agent{of}; what it has done so far]\n"
    text = ExtractiveSummarizer().summarize(
        newer,
        max_tokens=max(room - counter.count_text(head) - 8, 16),
        counter=counter,
        previous=previous,
    )
    note = Message(
        "system",
        head + text,
        id=stable_id("sm-parent", [parent or "", text]),
        extra={MARKER_KEY: {"kind": "parent_summary", "parent_session_id": parent}},
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
