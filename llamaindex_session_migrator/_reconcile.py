"""``memory.set(messages)`` against the stored log: keep every unchanged stored record.

A ``ChatMessage`` has no id, so an incoming message is matched to a stored one by equality of
its LlamaIndex form, in order. The plan then says how to write the result with the least change:

- ``append``: the whole stored log (or a fitted view of it: this library's summary or note is
  among the messages) comes back, with new messages at the end: append only those;
- ``delete_and_append``: some stored messages are kept, in order, and new ones come after them:
  delete the others, append the new ones;
- ``rewrite``: anything else: replace the session with the list (matched records keep their ids
  and other frameworks' fields).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from llama_index.core.base.llms.types import ChatMessage

from llamaindex_session_migrator._convert import from_chat_message
from session_migrator import Message

__all__ = ["SetPlan", "plan_set"]


@dataclass(frozen=True)
class SetPlan:
    """How to make the stored log equal to the incoming list."""

    action: Literal["append", "delete_and_append", "rewrite"]
    messages: list[Message]  # append: the new ones; rewrite: all
    removed_ids: list[str]


def _key(message: ChatMessage) -> tuple[str, str]:
    return (str(message.role.value), message.content or "")


def plan_set(
    stored: Sequence[Message],
    incoming: Sequence[ChatMessage],
    as_chat: Callable[[Message], ChatMessage],
    markers: Sequence[ChatMessage] = (),
) -> SetPlan:
    """The plan for ``set(incoming)`` over ``stored`` (``as_chat`` converts, cached by the
    caller; ``markers`` are the library's summaries and notes the caller handed out)."""
    index: dict[tuple[str, str], list[int]] = {}
    for i, m in enumerate(stored):
        index.setdefault(_key(as_chat(m)), []).append(i)
    plan: list[tuple[int | None, Message]] = []
    fitted_view = False
    position = 0
    for cm in incoming:
        found: int | None = None
        candidates = index.get(_key(cm), [])
        for i in candidates[bisect_left(candidates, position) :]:
            if as_chat(stored[i]) == cm:
                found = i
                break
        if found is not None:
            plan.append((found, stored[found]))
            position = found + 1
        elif any(cm == marker for marker in markers):
            fitted_view = True
        else:
            plan.append((None, from_chat_message(cm)))
    kept = [i for i, _ in plan if i is not None]
    first_new = next((n for n, (i, _) in enumerate(plan) if i is None), len(plan))
    new_at_end = all(i is None for i, _ in plan[first_new:])
    fresh = [m for i, m in plan if i is None]
    if fitted_view or (kept == list(range(len(stored))) and new_at_end):
        return SetPlan("append", fresh, [])
    if new_at_end:
        kept_ids = {stored[i].id for i in kept}
        return SetPlan("delete_and_append", fresh, [m.id for m in stored if m.id not in kept_ids])
    return SetPlan("rewrite", [m for _, m in plan], [])
