"""The MCP tools that read a coding agent's session from disk: ``import_session`` (into the
store) and ``handoff_session`` (continued in another agent), by path or as the newest session of
a working directory, so that an agent never sends its whole history as an argument. Registered
on the server :func:`session_migrator.mcp_server.build_server` builds; the work is in
:class:`~session_migrator.mcp._tools.SessionTools` and :mod:`session_migrator.importers`.
This module needs the ``[mcp]`` extra.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from session_migrator.mcp import _schemas as out
from session_migrator.mcp._tools import SessionTools

__all__ = ["ModelName", "register_disk_tools"]

ModelName = Annotated[
    str,
    Field(
        min_length=1,
        description="A model name, e.g. 'gpt-4o', 'claude-sonnet-4-5', "
        "'openai/gpt-5-2025-08-07' (provider prefixes and date suffixes are understood).",
    ),
]


SessionPath = Annotated[
    str | None,
    Field(
        min_length=1,
        description="A Claude Code session (~/.claude/projects/<project>/<id>.jsonl) or a "
        "Codex rollout (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl). Leave it out to "
        "take the newest session of 'cwd'.",
    ),
]
Source = Annotated[
    Literal["claude-code", "codex"] | None,
    Field(
        description="The agent whose session it is: its file format, and without 'path' "
        "where to look (default: either; the session written last wins)."
    ),
]
Home = Annotated[
    str | None,
    Field(
        description="The home folder the agents keep their sessions under (default: ~; "
        "for Codex, $CODEX_HOME when it is set)."
    ),
]

#: The server's tool decorator, given a tool's annotations.
ToolDecorator = Callable[
    [ToolAnnotations],
    Callable[[Callable[..., CallToolResult]], Callable[..., CallToolResult]],
]


def register_disk_tools(
    tool: ToolDecorator,
    call: Callable[..., CallToolResult],
    tools: SessionTools,
) -> None:
    """Add ``import_session`` and ``handoff_session`` through ``tool`` (the server's decorator:
    a tool's description is its docstring); ``call`` answers as the others do."""

    @tool(ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    def import_session(
        path: SessionPath = None,
        source: Source = None,
        cwd: Annotated[
            str | None,
            Field(
                min_length=1,
                description="Without 'path': the working directory whose newest session to "
                "import (the agent's own cwd, absolute).",
            ),
        ] = None,
        home: Home = None,
        session_id: Annotated[
            str | None,
            Field(min_length=1, description="Store it under this id (default: the file's)."),
        ] = None,
        workspace: Annotated[
            str | None, Field(min_length=1, description="Its workspace (default 'default').")
        ] = None,
    ) -> Annotated[CallToolResult, out.ImportAnswer]:
        """Import a coding agent's session from disk into the store, by path or as the newest
        session of a working directory, instead of sending its messages: tool calls paired,
        times, models, cwd and branch kept. Importing it again stores only what is new.
        Answers the stored session's id, its message count and a short brief; session_context
        then fits it to any model."""
        return call(tools.import_session, path, source, cwd, home, session_id, workspace)

    @tool(ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    def handoff_session(
        to: Annotated[
            Literal["claude-code", "codex", "gemini-cli", "opencode"],
            Field(description="The agent to continue in."),
        ],
        model: ModelName,
        path: SessionPath = None,
        source: Source = None,
        home: Annotated[
            str | None,
            Field(
                description="The home folder the agents keep their sessions under, read and "
                "written (default: ~)."
            ),
        ] = None,
        cwd: Annotated[
            str | None,
            Field(
                min_length=1,
                description="Without 'path': the working directory whose newest session to "
                "continue. With 'path': where it continues (default: the session's own).",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, out.HandoffAnswer]:
        """Continue a coding agent's session in another agent on a model: the session file
        (path, or the newest session of cwd) is read from disk and kept whole in the store,
        fitted to the model's window without the source agent's own harness prompt (the target
        sends its own), and written where the target agent looks for its sessions. Answers the
        command that resumes it and a short brief."""
        return call(tools.handoff_session, path, to, model, home, cwd, source)
