"""The ``read_context`` tool for LangChain: a model reads back what a fit cut.

When a fit shrinks an old tool output, the marker it leaves names the message to read back:
``read it back with read_context(id="<message id>")``. These tools answer that call with a page
of the original text (see :func:`session_migrator.context_tools.read_context`):

- ``FitToModelMiddleware``'s ``tools`` hold one that reads the agent's own state (the
  messages of a ``create_agent`` graph, which the middleware never changes; see
  ``_middleware.state_read_context_tool``);
- :func:`store_read_context_tool` reads a session store (the originals of offloaded tool
  outputs too): what ``FittedChatMessageHistory.context_tools()`` returns.

A wrong id or offset is answered with a short error text, not raised, so the agent goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from session_migrator import Message
from session_migrator.context_tools import read_context

__all__ = [
    "READ_CONTEXT_DESCRIPTION",
    "READ_CONTEXT_NAME",
    "page_of",
    "store_read_context_tool",
]

#: The tool's name: the one the fit's markers name.
READ_CONTEXT_NAME = "read_context"
#: What the model is told the tool does (kept short: it is sent with every request).
READ_CONTEXT_DESCRIPTION = (
    "Read back text cut to fit the context: the id named by a read_context(...) marker; "
    "offset reads on from that character."
)


def page_of(messages: Callable[[], Sequence[Message]], id: str, offset: int) -> str:
    """A page of message ``id`` of ``messages()`` from ``offset``, or what is wrong, as text."""
    try:
        page = read_context(messages(), id, offset)
    except KeyError:  # (the core's message points at list_placeholders, not a tool here)
        return f"read_context: no message with id {id!r}; pass the id a marker names"
    except ValueError as exc:
        return f"read_context: {exc}"
    return page or f"read_context: the text of {id!r} ends before offset {offset}"


def store_read_context_tool(store: Any, session_id: str) -> BaseTool:
    """The ``read_context`` tool over session ``session_id`` of ``store``: the stored messages,
    offloaded tool outputs read back whole."""

    def read(id: str, offset: int = 0) -> str:
        return page_of(lambda: store.load(session_id, full=True), id, offset)

    return StructuredTool.from_function(
        read, name=READ_CONTEXT_NAME, description=READ_CONTEXT_DESCRIPTION
    )
