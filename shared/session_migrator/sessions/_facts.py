"""A user's facts in a fit: the note of what the user said in earlier sessions, sent after the
system prompt within :data:`FACTS_SHARE` of the window (see ``SessionFitter(user_facts=True)``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._units import stable_id
from session_migrator.messages._messages import MARKER_KEY, Message
from session_migrator.migration._report import MigrationResult
from session_migrator.models._windows import ModelWindow

if TYPE_CHECKING:
    from session_migrator.store import BaseSessionStore

__all__ = ["FACTS_SHARE", "facts_note", "with_facts"]

#: The most of a window's input the note of a user's facts takes.
FACTS_SHARE = 0.05


def facts_note(
    store: BaseSessionStore, user: str, window: ModelWindow, counter: TokenCounter
) -> Message | None:
    """The note of ``user``'s facts that fits in :data:`FACTS_SHARE` of ``window``'s input (the
    newest first kept; ``None``: no fact)."""
    from session_migrator.store import user_facts

    facts = [f.text for f in user_facts(store, user)]
    room = int(min(window.max_input_tokens, window.context_window) * FACTS_SHARE)
    while facts:
        note = Message(
            "system",
            "[session-migrator: what this user has told you in earlier sessions]\n"
            + "\n".join(f"- {text}" for text in facts),
            id=stable_id("sm-facts", facts),
            extra={MARKER_KEY: {"kind": "user_facts", "user_id": user, "facts": len(facts)}},
        )
        if counter.count_message(note) <= room:
            return note
        facts = facts[1:]  # the oldest first out
    return None


def with_facts(result: MigrationResult, note: Message, cost: int) -> MigrationResult:
    """``result`` with the user's facts after its leading system messages (their room was held
    back from the fit)."""
    sent = result.messages
    at = next((i for i, m in enumerate(sent) if m.role != "system"), len(sent))
    report = result.report
    report.tokens_after += cost
    report.messages_after += 1
    return replace(result, messages=[*sent[:at], note, *sent[at:]])
