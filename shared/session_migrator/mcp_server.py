"""The MCP server: model windows, migration and the session store as MCP tools (stdio).

Run it with ``session-migrator mcp`` (or ``python -m session_migrator mcp``); it needs the
``[mcp]`` extra. Importing this module does not import ``mcp``: :func:`build_server` does, and
raises :class:`~session_migrator.MissingDependencyError` with the install command without it.

Tools (every result is a JSON object; bad arguments come back as tool errors with a message that
says what to fix, and the server keeps serving):

- ``model_context_window(model)``: window, input cap, max output, tokenizer, source;
- ``list_known_models(query?, provider?, limit?)``;
- ``migrate_session(messages_json, target_model, strategy?, reserve_output_tokens?, query?,
  context_window?)``: the migration report (decision, tokens before and after, budget, what was
  dropped) and the messages to send, in OpenAI chat format (without ids or library markers);
- ``session_append(session_id, messages_json, workspace?, idempotency_key?)``,
  ``session_context(session_id, model, strategy?, query?, reserve_output_tokens?,
  context_window?)``, ``session_usage(session_id,
  model, context_window?)``, ``session_list(workspace?)``: the session store (``--store URL``,
  default the embedded SQLite file under ``SESSION_MIGRATOR_HOME``). ``session_context`` goes
  through :class:`~session_migrator._fitter.SessionFitter`: cached counts, the rolling summary
  and the migration log are kept in the store.

``context_window`` describes a model the table does not know (or overrides the known window).

The logic lives in :class:`SessionTools` (``session_migrator._mcp_tools``, no ``mcp`` needed, so it
is tested directly too); this module only declares the tools and maps errors.
"""

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from session_migrator._errors import MissingDependencyError, SessionMigratorError
from session_migrator._mcp_tools import (
    ArgumentError,
    MessagesArg,
    SessionTools,
    Strategy,
    jsonable,
    parse_messages,
)
from session_migrator._version import __version__

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from session_migrator.store import BaseSessionStore

__all__ = [
    "SERVER_NAME",
    "ArgumentError",
    "SessionTools",
    "build_server",
    "parse_messages",
    "run_stdio",
]

SERVER_NAME = "session-migrator"
_T = TypeVar("_T")

INSTRUCTIONS = (
    "Fit a conversation to another model's context window without losing it. "
    "model_context_window / list_known_models look up windows; migrate_session fits a list of "
    "OpenAI-format messages to a target model (unchanged when it fits, compressed otherwise, "
    "never over budget); the session_* tools keep the full conversation in a store and return "
    "it fitted to any model."
)


# -- the MCP layer -----------------------------------------------------------------------------


def build_server(store: "str | BaseSessionStore | None" = None) -> "MCPServer[Any]":
    """The MCP server object with every tool registered (not yet running).

    Raises :class:`~session_migrator.MissingDependencyError` when the ``mcp`` extra is missing.
    """
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp_types import ToolAnnotations
        from pydantic import Field
    except ImportError as exc:
        raise MissingDependencyError("The MCP server", "mcp") from exc

    tools = SessionTools(store)

    def call(fn: Callable[..., _T], *args: Any) -> _T:
        try:
            return jsonable(fn(*args))  # type: ignore[no-any-return]
        except (SessionMigratorError, ValueError, LookupError) as exc:
            raise ToolError(str(exc)) from exc

    @asynccontextmanager
    async def lifespan(_: "MCPServer[Any]") -> AsyncIterator[None]:
        try:
            yield None
        finally:
            tools.close()

    server: MCPServer[Any] = MCPServer(
        SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, lifespan=lifespan
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    def tool(
        annotations: ToolAnnotations | None = None,
    ) -> Callable[[Callable[..., _T]], Callable[..., _T]]:
        def register(fn: Callable[..., _T]) -> Callable[..., _T]:
            server.add_tool(
                fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=annotations
            )
            return fn

        return register

    Model = Annotated[
        str,
        Field(
            min_length=1,
            description="A model name, e.g. 'gpt-4o', 'claude-sonnet-4-5', "
            "'openai/gpt-5-2025-08-07' (provider prefixes and date suffixes are understood).",
        ),
    ]
    Messages = Annotated[
        MessagesArg,
        Field(
            description="The conversation: a JSON list of OpenAI chat messages "
            '([{"role": "system"|"user"|"assistant"|"tool", "content": ...}], tool calls '
            "as 'tool_calls' with 'tool_call_id' on results), as a string or an array."
        ),
    ]
    StrategyArg = Annotated[
        Strategy,
        Field(
            description="How to compress when the conversation does not fit: 'auto' (best "
            "offline strategy), 'trim' (keep system + newest turns and a note), 'summarize' "
            "(newest turns + a summary of the rest), 'recall' (also bring back older turns "
            "relevant to the query)."
        ),
    ]
    Reserve = Annotated[
        int | None,
        Field(
            ge=0,
            description="Tokens to keep free for the reply (default: the model's max output, "
            "capped at a quarter of the window).",
        ),
    ]
    Query = Annotated[
        str | None,
        Field(
            description="What the next turn is about; steers 'recall' (default: the last "
            "user message)."
        ),
    ]
    SessionId = Annotated[str, Field(min_length=1, description="The session id in the store.")]
    Window = Annotated[
        int | None,
        Field(
            ge=1,
            description="The model's context window in tokens, for a model not in the table "
            "(or to override the known window).",
        ),
    ]

    @tool(read_only)
    def model_context_window(model: Model) -> dict[str, Any]:
        """The context window of a model: total window, input cap, max output tokens,
        tokenizer, and where the facts come from. Unknown names fail with close matches."""
        return call(tools.model_context_window, model)

    @tool(read_only)
    def list_known_models(
        query: Annotated[
            str | None, Field(description="Keep names containing this text, e.g. 'gpt-4'.")
        ] = None,
        provider: Annotated[
            str | None, Field(description="Keep one provider, e.g. 'openai', 'anthropic'.")
        ] = None,
        limit: Annotated[
            int, Field(ge=1, le=1000, description="At most this many models (count says all).")
        ] = 50,
    ) -> dict[str, Any]:
        """Known models with their windows, sorted by name; 'count' is the number that matched
        and 'truncated' says whether 'limit' cut the list."""
        return call(tools.list_known_models, query, provider, limit)

    @tool(read_only)
    def migrate_session(
        messages_json: Messages,
        target_model: Model,
        strategy: StrategyArg = "auto",
        reserve_output_tokens: Reserve = None,
        query: Query = None,
        context_window: Window = None,
    ) -> dict[str, Any]:
        """Fit a conversation to target_model's input budget. If it fits it comes back
        unchanged (decision 'fits'); otherwise it is compressed (decision 'compressed') and never
        exceeds the budget; tool calls stay with their results. Returns the decision,
        tokens_before, tokens_after, budget, the full report (what was dropped or summarized)
        and the messages to send, in OpenAI chat format."""
        return call(
            tools.migrate_session,
            messages_json,
            target_model,
            strategy,
            reserve_output_tokens,
            query,
            context_window,
        )

    @tool(ToolAnnotations(destructive_hint=False, idempotent_hint=True))
    def session_append(
        session_id: SessionId,
        messages_json: Messages,
        workspace: Annotated[
            str, Field(min_length=1, description="Workspace of a new session.")
        ] = "default",
        idempotency_key: Annotated[
            str | None,
            Field(
                min_length=1,
                description="Names this batch: sending the same batch again with the same key "
                "stores nothing twice. Without it, messages without an 'id' are always appended.",
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Append messages to a stored session (created on first append). Messages with an
        'id' already stored are skipped; messages without one are always appended unless
        idempotency_key names the batch, so a retry with the same key is safe. The full log
        is kept."""
        return call(tools.session_append, session_id, messages_json, workspace, idempotency_key)

    @tool()
    def session_context(
        session_id: SessionId,
        model: Model,
        strategy: StrategyArg = "auto",
        query: Query = None,
        reserve_output_tokens: Reserve = None,
        context_window: Window = None,
    ) -> dict[str, Any]:
        """A stored session fitted to a model: the messages to send (OpenAI format) and the
        report. The stored log is not changed; a rolling summary and the switch of model are
        recorded in the store."""
        return call(
            tools.session_context,
            session_id,
            model,
            strategy,
            query,
            reserve_output_tokens,
            context_window,
        )

    @tool(read_only)
    def session_usage(
        session_id: SessionId, model: Model, context_window: Window = None
    ) -> dict[str, Any]:
        """How much of a model's input budget a stored session takes: tokens, budget, share,
        whether it fits, and whether the count is exact."""
        return call(tools.session_usage, session_id, model, context_window)

    @tool(read_only)
    def session_list(
        workspace: Annotated[
            str | None, Field(description="Only this workspace (default: every workspace).")
        ] = None,
    ) -> dict[str, Any]:
        """The stored sessions: id, workspace, message count, creation and last update time,
        metadata."""
        return call(tools.session_list, workspace)

    return server


def run_stdio(store: str | None = None) -> None:
    """Serve on stdin/stdout until the client closes the connection."""
    build_server(store).run("stdio")
