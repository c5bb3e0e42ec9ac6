"""What a strategy returns, and small pieces the engine and its fast path share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from session_migrator.fitting._units import is_step_result
from session_migrator.messages._messages import Message
from session_migrator.summaries._summarizers import Summary

__all__ = ["CompressionResult", "broken_note", "latest_user_text"]


@dataclass(frozen=True)
class CompressionResult:
    """What a strategy kept, and what it did to the rest (ids of the input messages)."""

    messages: list[Message]
    dropped_ids: list[str] = field(default_factory=list)
    summarized_ids: list[str] = field(default_factory=list)
    recalled_ids: list[str] = field(default_factory=list)
    truncated_ids: list[str] = field(default_factory=list)
    summary: Summary | None = None
    fallbacks: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: what ``messages`` cost by the counter the strategy was given (``None``: not counted)
    tokens: int | None = None
    #: the id of the last message of the part of ``messages`` the next request sends again,
    #: byte for byte (a prompt cache's breakpoint goes there); ``None``: none is known to
    stable_through: str | None = None


def latest_user_text(messages: Sequence[Message]) -> str:
    """The text of the newest user message in the user's own words ('' if there is none):
    not one that carries a step's result (ReAct's ``Observation: ...``), unless no other is."""
    newest = ""
    for m in reversed(messages):
        if m.role == "user" and m.marker is None:
            if not is_step_result(m):
                return m.text
            newest = newest or m.text
    return newest


def broken_note(count: int) -> str:
    return (
        f"left out {count} message(s) with broken tool pairing "
        "(a result without its call or a call without its result)"
    )
