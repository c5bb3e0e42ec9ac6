"""A conversation that fits goes over as is, unless a chat API would reject it as is.

Compression always returns a conversation the chat APIs accept (see
:mod:`session_migrator.messages._rules`).
A conversation that fits gets the same repairs, and only those, so that "fits" means "valid" too:

- tool messages broken for good (a result without its call, a call whose results did not come
  before the next message) are left out;
- the newest assistant tool call still waiting for its results is left out with the results it
  has so far (OpenAI rejects a call without its result), unless the caller says it is about to
  append them (``pending_tool_calls="keep"``);
- messages before the first user message (after the system prompt) are left out, when there is
  a user message (Anthropic and Gemini reject a conversation that opens with the model's turn);
- system messages in the middle move to the front, in order (Anthropic and Gemini take the
  system prompt apart from the turns); nothing is lost.

Each repair is reported: the ids left out in ``dropped_ids`` and a sentence in ``notes``. With
nothing to repair the same message objects go over in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from session_migrator.fitting._result import broken_note
from session_migrator.fitting._units import Layout
from session_migrator.messages._messages import Message

__all__ = ["PENDING_CHOICES", "PendingToolCalls", "Repair", "check_pending", "repair_fit"]

#: What to do with the newest assistant tool call while its results have not all come.
PendingToolCalls = Literal["drop", "keep"]
PENDING_CHOICES: tuple[str, ...] = get_args(PendingToolCalls)


def check_pending(value: object) -> PendingToolCalls:
    """``value`` if it is a :data:`PendingToolCalls` choice, else a ``ValueError`` saying so."""
    if value not in PENDING_CHOICES:
        raise ValueError(
            f"pending_tool_calls must be 'drop' (leave out a tool call still waiting for its "
            f"results: a model rejects it) or 'keep' (its results are appended next), got "
            f"{value!r}"
        )
    return value  # type: ignore[return-value]


@dataclass
class Repair:
    """What a conversation that fits needs before a model takes it."""

    messages: list[Message]
    dropped_ids: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def repair_fit(
    messages: Sequence[Message],
    layout: Layout,
    settled_broken: Sequence[int],
    pending: Sequence[int],
    keep_pending: bool,
) -> Repair | None:
    """The repaired conversation, or ``None`` when ``messages`` go over as they are.

    ``layout`` is the messages' layout without the pending call as a unit; ``settled_broken``
    the positions broken for good; ``pending`` those of the newest call still waiting.
    """
    left_out: set[int] = set(settled_broken)
    notes: list[str] = []
    if settled_broken:
        notes.append(broken_note(len(settled_broken)))
    if pending and not keep_pending:
        left_out.update(pending)
        notes.append(
            f"left out the newest assistant tool call ({len(pending)} message(s)), still waiting "
            "for its results: a model rejects a call without its result (pass "
            "pending_tool_calls='keep' when the results are appended next)"
        )
    units = layout.units
    first_turn = next((k for k, u in enumerate(units) if u.starts_turn), None)
    if first_turn:  # (None: no user message at all; 0: the conversation opens with one)
        leading = [i for u in units[:first_turn] for i in u.indices]
        left_out.update(leading)
        notes.append(
            f"left out {len(leading)} message(s) before the first user message: Anthropic and "
            "Gemini reject a conversation that opens with the model's turn"
        )
    moved = 0
    if not layout.system_first:
        first_other = next(
            (i for i, m in enumerate(messages) if i not in left_out and m.role != "system"),
            len(messages),
        )
        moved = sum(1 for i in layout.system if i > first_other)
    if moved:
        notes.append(
            f"moved {moved} system message(s) from the middle of the conversation to the front: "
            "Anthropic and Gemini take the system prompt apart from the turns"
        )
    if not notes:
        return None
    kept = [i for i in range(len(messages)) if i not in left_out]
    if moved:
        system = set(layout.system)
        kept = [i for i in kept if i in system] + [i for i in kept if i not in system]
    return Repair(
        [messages[i] for i in kept],
        [messages[i].id for i in sorted(left_out)],
        notes,
    )
