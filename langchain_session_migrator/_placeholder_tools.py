"""The agent's placeholder tools for LangChain: ``compress_context``, ``list_placeholders`` and
``restore_context`` over a session store (what ``FittedChatMessageHistory.context_tools()``
returns beside ``read_context``).

The model compresses a range of its own context (or every output of one tool) into a summary
placeholder, lists those in force and restores one; the history's fits honour them (a
compressed range is sent as one line naming its id). Each answer is text within 2,000
characters; a call that cannot be done is answered with what to do, not raised.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from session_migrator.context_tools import (
    COMPRESS_DESCRIPTION,
    LIST_DESCRIPTION,
    RESTORE_DESCRIPTION,
    compress_text,
    placeholders_text,
    restore_text,
)

__all__ = ["store_placeholder_tools"]


def store_placeholder_tools(store: Any, session_id: str) -> list[BaseTool]:
    """``compress_context``, ``list_placeholders`` and ``restore_context`` over session
    ``session_id`` of ``store``."""

    def compress(
        first_id: str | None = None,
        last_id: str | None = None,
        summary: str | None = None,
        tool: str | None = None,
    ) -> str:
        return compress_text(store, session_id, first_id, last_id, summary, tool)

    def listed() -> str:
        return placeholders_text(store, session_id)

    def restore(id: str) -> str:
        return restore_text(store, session_id, id)

    return [
        StructuredTool.from_function(
            compress, name="compress_context", description=COMPRESS_DESCRIPTION
        ),
        StructuredTool.from_function(
            listed, name="list_placeholders", description=LIST_DESCRIPTION
        ),
        StructuredTool.from_function(
            restore, name="restore_context", description=RESTORE_DESCRIPTION
        ),
    ]
