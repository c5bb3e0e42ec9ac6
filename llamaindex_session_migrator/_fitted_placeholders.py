"""The agent's placeholders on a :class:`FittedMemory` (issue 44): what ``placeholder_tools`` put
on its conversation, applied by every ``get``.

``FittedMemory`` reads its history through LlamaIndex's own ``Memory.aget``, whose chat
messages carry no ids. Each read names them here before upstream inserts its memory blocks
(``Memory._insert_memory_content``, the one place the queue's messages pass through alone):

- on a session store (``store=``, or the memory's private one), by the ids the store keeps for
  the active queue; the placeholders are the session's own (its metadata, as every surface
  keeps them), so a :class:`SessionMigratorMemory` or the MCP server on the same session
  honours them too;
- on a LlamaIndex chat store (``sql_store=``, ``chat_store=``), which has no ids, by position
  in the whole conversation (``m0``, ``m1``, ...: archived messages stay in upstream's stores,
  so a position never moves); the placeholders are kept in the memory's own state
  (:class:`HeldPlaceholders`), as ``FitToModelMiddleware`` keeps them in a graph's state.

Those ids are the ones the fit's markers name and the tools accept (``compress_context``,
``restore_context``, ``read_context``). A compressed range is sent as one line carrying its
placeholder's id (:func:`~session_migrator.context_tools.apply_placeholders`), a restored one
whole again; the stored messages are never changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.llms.types import ChatMessage

from llamaindex_session_migrator._convert import from_chat_message, to_chat_message
from llamaindex_session_migrator._handout import copy_message
from llamaindex_session_migrator._instrumentation import publish
from session_migrator import Message
from session_migrator.context_tools import (
    Placeholder,
    apply_placeholders,
    compressed_answer,
    error_answer,
    listing_answer,
    new_placeholder,
    restored,
    restored_answer,
)

__all__ = [
    "NAMING",
    "HeldPlaceholders",
    "IdPublisher",
    "Naming",
    "name_history",
    "positional_id",
]


def positional_id(position: int) -> str:
    """The id of the message at ``position`` of a conversation kept where ids are not."""
    return f"m{position}"


@dataclass
class Naming:
    """What one read knows of the memory's active queue: the store's ids (``None``: by
    position from ``offset``, the archived messages' count) and the placeholders in force."""

    ids: list[str] | None
    offset: int
    placeholders: tuple[Placeholder, ...]
    made: dict[tuple[str, str], Message]
    #: id() of each history message handed to upstream -> the core message it stands for
    core: dict[int, Message] = field(default_factory=dict)

    def id_of(self, message: ChatMessage) -> str | None:
        """The id ``message`` (an object of this read) goes under (``None``: not one)."""
        found = self.core.get(id(message))
        return found.id if found is not None else None


#: The naming of the read in progress (set by ``FittedMemory.aget`` around upstream's read).
NAMING: ContextVar[Naming | None] = ContextVar("fitted_memory_naming", default=None)


def name_history(chat_history: list[ChatMessage], naming: Naming) -> list[ChatMessage]:
    """``chat_history`` (the active queue) under the placeholders in force, each message
    recorded in ``naming`` with the id it goes under. Messages no placeholder covers are the
    very objects given."""
    ids = naming.ids
    if ids is None or len(ids) != len(chat_history):  # (no ids, or the queue moved meanwhile)
        ids = [positional_id(naming.offset + k) for k in range(len(chat_history))]
    core = [from_chat_message(m, id=i) for m, i in zip(chat_history, ids, strict=True)]
    placed = apply_placeholders(core, naming.placeholders, naming.made)
    if len(placed) == len(core) and all(a is b for a, b in zip(placed, core, strict=True)):
        out = chat_history
        pairs = list(zip(chat_history, core, strict=True))
    else:
        given = {id(c): m for c, m in zip(core, chat_history, strict=True)}
        out = [given.get(id(c)) or to_chat_message(c) for c in placed]
        pairs = list(zip(out, placed, strict=True))
    naming.core = {id(m): c for m, c in pairs}
    return out


class IdPublisher:
    """Tells the guard (``FitToModelLLM``) the ids a read's messages go under, so that its
    markers name ids ``read_context_tool(memory)`` reads back. It has no ``memory``: the guard
    fits what the read handed out (the placeholders' lines included), never the whole log."""

    def on_chat_start(self, messages: list[Any], model_dict: dict[str, Any], exact: bool) -> bool:
        return False  # (the memory's model comes from its tracker)

    def publish(self, history: Sequence[ChatMessage], naming: Naming) -> None:
        """Publish the messages of ``history`` that ``naming`` knows (a copy of each as it was
        handed out: one edited in place since keeps its id, with its new content)."""
        known = [(m, naming.core[id(m)]) for m in history if id(m) in naming.core]
        handed = [m for m, _ in known]
        templates = [copy_message(m) for m in handed]
        publish(self, templates, [c for _, c in known], range(len(known)), handed)


class HeldPlaceholders:
    """The placeholders of a memory with no session store, kept in the memory itself (the
    rules and answers are the core's, as on every surface)."""

    def __init__(self) -> None:
        self.rows: list[Placeholder] = []

    def in_force(self) -> tuple[Placeholder, ...]:
        return tuple(p for p in self.rows if p.in_force)

    def compress(
        self,
        messages: Sequence[Message],
        first_id: str | None,
        last_id: str | None,
        summary: str | None,
        tool: str | None,
    ) -> str:
        """``compress_context``'s answer over ``messages`` (the whole conversation)."""
        try:
            p = new_placeholder(
                messages,
                self.rows,
                first_id=first_id,
                last_id=last_id,
                summary=summary,
                tool=tool,
            )
        except ValueError as exc:  # (PlaceholderError is one)
            return error_answer("compress_context", exc)
        self.rows = [*self.rows, p]
        return compressed_answer(p)

    def listing(self) -> str:
        """``list_placeholders``'s answer."""
        return listing_answer(self.in_force())

    def restore(self, placeholder_id: str) -> str:
        """``restore_context``'s answer."""
        try:
            rows, done = restored(self.rows, placeholder_id)
        except ValueError as exc:  # (PlaceholderNotFoundError is one)
            return error_answer("restore_context", exc)
        self.rows = rows
        return restored_answer(done)
