"""The MCP tools ``compress_context``, ``list_placeholders`` and ``restore_context``, registered
on the server :func:`session_migrator.mcp_server.build_server` builds (beside ``read_context``).
This module needs the ``[mcp]`` extra; the work is in :mod:`session_migrator.mcp._placeholders`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from session_migrator.mcp import _schemas as out
from session_migrator.mcp._placeholders import (
    COMPRESS_DESCRIPTION,
    LIST_DESCRIPTION,
    RESTORE_DESCRIPTION,
    compress_answer,
    list_answer,
    restore_answer,
)
from session_migrator.mcp._tools import SessionTools

__all__ = ["register_placeholder_tools"]

SessionId = Annotated[str, Field(min_length=1, description="The session id in the store.")]
MessageId = Annotated[
    str | None, Field(min_length=1, description="A stored message's id (a fit's messages show it).")
]


def register_placeholder_tools(
    server: Any, call: Callable[..., CallToolResult], tools: SessionTools
) -> None:
    """Add the three placeholder tools to ``server``; ``call`` answers as the others do."""

    def compress_context(
        session_id: SessionId,
        first_id: MessageId = None,
        last_id: MessageId = None,
        summary: Annotated[
            str | None,
            Field(description="Your summary of them (default: one written offline)."),
        ] = None,
        tool: Annotated[
            str | None,
            Field(min_length=1, description="Compress this tool's outputs (in the range, if any)."),
        ] = None,
    ) -> Annotated[CallToolResult, out.PlaceholderAnswer]:
        return call(_compress, session_id, first_id, last_id, summary, tool)

    def list_placeholders(session_id: SessionId) -> Annotated[CallToolResult, out.PlaceholderList]:
        return call(_list, session_id)

    def restore_context(
        session_id: SessionId,
        id: Annotated[str, Field(min_length=1, description="The placeholder's id, e.g. 'p1'.")],
    ) -> Annotated[CallToolResult, out.PlaceholderAnswer]:
        return call(_restore, session_id, id)

    def _compress(
        session_id: str,
        first_id: str | None,
        last_id: str | None,
        summary: str | None,
        tool: str | None,
    ) -> dict[str, Any]:
        with tools._lock:
            tools._require(session_id)
            return compress_answer(tools.store, session_id, first_id, last_id, summary, tool)

    def _list(session_id: str) -> dict[str, Any]:
        with tools._lock:
            tools._require(session_id)
            return list_answer(tools.store, session_id)

    def _restore(session_id: str, id: str) -> dict[str, Any]:
        with tools._lock:
            tools._require(session_id)
            return restore_answer(tools.store, session_id, id)

    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    server.add_tool(compress_context, description=COMPRESS_DESCRIPTION, annotations=writes)
    server.add_tool(list_placeholders, description=LIST_DESCRIPTION, annotations=read_only)
    server.add_tool(restore_context, description=RESTORE_DESCRIPTION, annotations=writes)
