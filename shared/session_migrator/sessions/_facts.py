"""A user's facts in a fit: the note of what the user said in earlier sessions, sent after the
system prompt within :data:`FACTS_SHARE` of the window (see ``SessionFitter(user_facts=True)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._units import stable_id
from session_migrator.messages._messages import MARKER_KEY, Message
from session_migrator.migration._report import MigrationResult
from session_migrator.models._windows import ModelWindow
from session_migrator.summaries._fact_extractors import FactExtractor, RulesFactExtractor

if TYPE_CHECKING:
    from session_migrator.store import BaseSessionStore

__all__ = ["FACTS_SHARE", "check_extractor", "facts_note", "learn_facts", "with_facts"]

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


def check_extractor(extractor: Any, user_facts: bool) -> FactExtractor | None:
    """``extractor`` checked now (a fitter's ``fact_extractor``: it needs ``user_facts``)."""
    if extractor is None:
        return None
    if not callable(getattr(extractor, "extract", None)):
        raise TypeError(
            "fact_extractor must have an extract(messages) method (a FactExtractor, e.g. "
            f"OpenAIFactExtractor), got {type(extractor).__name__}"
        )
    if not user_facts:
        raise ValueError("fact_extractor reads a user's facts: pass user_facts=True with it")
    return extractor  # type: ignore[no-any-return]


def learn_facts(
    store: BaseSessionStore,
    user: str,
    messages: Sequence[Message],
    extractor: FactExtractor | None,
    said: datetime,
    lock: Any,
) -> None:
    """Learn ``user``'s facts from appended ``messages``: by rules now, and by ``extractor`` in
    the background (:class:`~session_migrator.sessions._fact_learner.FactLearner`)."""
    from session_migrator.sessions._fact_learner import FactLearner
    from session_migrator.store import learn_user_facts

    learn_user_facts(store, user, messages)
    if extractor is not None and not isinstance(extractor, RulesFactExtractor):
        FactLearner.default().submit(store, user, messages, extractor, said=said, lock=lock)
