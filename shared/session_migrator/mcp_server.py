"""The MCP server: model windows, migration and the session store as MCP tools (stdio).

Run it with ``session-migrator mcp`` (or ``python -m session_migrator mcp``); it needs the
``[mcp]`` extra. Importing this module does not import ``mcp``: :func:`build_server` does, and
raises :class:`~session_migrator.MissingDependencyError` with the install command without it.

Tools (every result is a JSON object, sent as ``structuredContent`` checked against the tool's
output schema, and as one text block for the clients that read only text: a line saying what it
holds, then the same JSON, compact; bad arguments come back as tool errors with a message that
says what to fix, and the server keeps serving):

- ``model_context_window(model)``: window, input cap, max output, tokenizer, source;
- ``list_known_models(query?, provider?, limit?)``;
- ``migrate_session(messages_json, target_model, strategy?, reserve_output_tokens?, query?,
  context_window?, recall_scope?, session_id?)``: the migration report (decision, tokens
  before and after, budget, what was dropped) and the messages to send, in OpenAI chat format
  (without ids or library markers);
- ``session_append(session_id, messages_json, workspace?, idempotency_key?)`` (a workspace
  other than the stored session's is refused), ``session_context(session_id, model,
  strategy?, query?, reserve_output_tokens?, context_window?, recall_scope?)``,
  ``session_usage(session_id, model, context_window?)``,
  ``session_list(workspace?, offset?, limit?)``, ``read_context(session_id, id, offset?)``,
  ``compress_context(session_id, first_id?, last_id?, summary?, tool?)``,
  ``list_placeholders(session_id)``, ``restore_context(session_id, id)``: the session store
  (``--store URL``, default the embedded SQLite file under ``SESSION_MIGRATOR_HOME``).
  ``session_context`` goes through :class:`~session_migrator.sessions._fitter.SessionFitter`:
  cached counts, the rolling summary and the migration log are kept in the store, and the
  placeholders the agent put (``compress_context``) are honoured.
- ``import_session(path?, source?, cwd?, home?, session_id?, workspace?)``: a Claude Code or
  Codex session file imported into the store from disk (by path, or the newest session of a
  working directory), answered by its id, counts and a short brief;
  ``handoff_session(to, model, path?, source?, home?, cwd?)``: the same session continued in
  Claude Code, Codex, Gemini CLI or OpenCode (kept whole in the store, fitted without the source
  agent's harness, written where the target looks), answered by the resume command and the brief.

With an embedding model (``build_server(embeddings=...)``; ``session-migrator mcp --embeddings
local``: :func:`session_migrator.local_embeddings`), ``migrate_session`` and ``session_context``
rank the cut turns by bm25 and the model's similarity (hybrid recall, docs/embeddings.md);
``session_context`` keeps the vectors in the store.

``recall_scope`` (``user`` or ``workspace``) also recalls from the stored session's other
sessions (:func:`~session_migrator.store.related_sessions`).

``context_window`` describes a model the table does not know (or overrides the known window).
``migrate_session`` and ``session_context`` page their messages to stay under
``max_answer_tokens`` (about 20,000 tokens by default; ``offset``, ``limit``, and
``include_messages=false`` for the report alone): ``page`` says how to get the rest.

The logic lives in :class:`SessionTools` (``session_migrator.mcp._tools``, no ``mcp`` needed, so it
is tested directly too); this module only declares the tools and maps errors.
"""

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from session_migrator._errors import MissingDependencyError, SessionMigratorError
from session_migrator._version import __version__
from session_migrator.mcp._answers import answer_text, jsonable
from session_migrator.mcp._arguments import argument_problems
from session_migrator.mcp._tools import (
    DEFAULT_ANSWER_TOKENS,
    DEFAULT_CACHED_SESSIONS,
    SESSIONS_PAGE,
    ArgumentError,
    MessagesArg,
    SessionTools,
    Strategy,
    parse_messages,
)
from session_migrator.recall._related import RecallScope

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
    "it fitted to any model. import_session reads a Claude Code or Codex session from disk (by "
    "path, or the newest of a working directory) into the store; handoff_session continues it "
    "in another coding agent. Long answers are paged: call again with offset=page.next_offset."
)


# -- the MCP layer -----------------------------------------------------------------------------


def build_server(
    store: "str | BaseSessionStore | None" = None,
    *,
    max_sessions: int = DEFAULT_CACHED_SESSIONS,
    embeddings: Any = None,
    summarizer: Any = None,
    user_facts: bool = False,
    fact_extractor: Any = None,
) -> "MCPServer[Any]":
    """The MCP server object with every tool registered (not yet running).

    ``max_sessions``: how many sessions' fitted views are kept between calls. ``embeddings``:
    an embedding model for the recall of ``migrate_session`` and ``session_context`` (e.g.
    :func:`session_migrator.local_embeddings`, what ``session-migrator mcp --embeddings local``
    gives; see :class:`SessionTools`). ``summarizer``: writes the summaries of what
    ``session_context`` cuts, in the background (``session-migrator mcp --summarizer openai``).
    ``user_facts`` (``--user-facts``): the facts users state in the messages ``session_append``
    stores are learnt (by rules, and by ``fact_extractor`` in the background) and sent in every
    ``session_context`` of their sessions.
    Raises :class:`~session_migrator.MissingDependencyError` when the ``mcp`` extra is missing.
    """
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp_types import CallToolResult, TextContent, ToolAnnotations
        from pydantic import Field, ValidationError

        from session_migrator.mcp import _schemas as out
    except ImportError as exc:
        raise MissingDependencyError("The MCP server", "mcp") from exc

    tools = SessionTools(
        store,
        max_sessions=max_sessions,
        embeddings=embeddings,
        summarizer=summarizer,
        user_facts=user_facts,
        fact_extractor=fact_extractor,
    )

    def call(fn: Callable[..., dict[str, Any]], *args: Any) -> CallToolResult:
        """The answer: structuredContent (checked against the tool's output schema), and for
        the clients that read only text, one text block: a line saying what it holds, then the
        same JSON, compact."""
        try:
            data = jsonable(fn(*args))
        except (SessionMigratorError, ValueError, LookupError) as exc:
            raise ToolError(str(exc)) from exc
        text = TextContent(type="text", text=answer_text(fn.__name__, data))
        return CallToolResult(content=[text], structured_content=data)

    class Server(MCPServer[Any]):
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                cause = exc.__cause__
                if isinstance(cause, ValidationError):
                    raise ToolError(argument_problems(name, cause.errors())) from cause
                raise

    @asynccontextmanager
    async def lifespan(_: "MCPServer[Any]") -> AsyncIterator[None]:
        try:
            yield None
        finally:
            tools.close()

    server = Server(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, lifespan=lifespan)
    # pure lookups and computations: nothing changes, the same call gives the same answer
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

    def tool(
        annotations: ToolAnnotations,
    ) -> Callable[[Callable[..., _T]], Callable[..., _T]]:
        def register(fn: Callable[..., _T]) -> Callable[..., _T]:
            server.add_tool(
                fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=annotations
            )
            return fn

        return register

    from session_migrator.mcp._disk_tools import ModelName, register_disk_tools

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
    Scope = Annotated[
        RecallScope,
        Field(
            description="Where recall looks besides this conversation: 'session' (only here, "
            "the default), 'user' (the other stored sessions of its user: metadata user_id) "
            "or 'workspace' (those of its workspace). Their exchanges relevant to the query "
            "come as dated excerpts in one system message, within the budget; "
            "report.related_ids names them by session."
        ),
    ]
    Window = Annotated[
        int | None,
        Field(
            ge=1,
            description="The model's context window in tokens, for a model not in the table "
            "(or to override the known window).",
        ),
    ]
    Include = Annotated[
        bool,
        Field(description="false: the decision and the report alone, without the messages."),
    ]
    Offset = Annotated[
        int,
        Field(ge=0, description="The first fitted message to return (for the next page)."),
    ]
    Limit = Annotated[
        int | None,
        Field(ge=1, description="At most this many messages (default: as many as fit)."),
    ]
    AnswerTokens = Annotated[
        int,
        Field(
            ge=1_000,
            description="The answer's size cap in tokens (about; default 20000, under what "
            "clients accept); past it the messages are paged (see 'page').",
        ),
    ]

    @tool(read_only)
    def model_context_window(model: ModelName) -> Annotated[CallToolResult, out.WindowInfo]:
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
    ) -> Annotated[CallToolResult, out.ModelList]:
        """Known models with their windows, sorted by name; 'count' is the number that matched
        and 'truncated' says whether 'limit' cut the list."""
        return call(tools.list_known_models, query, provider, limit)

    @tool(read_only)
    def migrate_session(
        messages_json: Messages,
        target_model: ModelName,
        strategy: StrategyArg = "auto",
        reserve_output_tokens: Reserve = None,
        query: Query = None,
        context_window: Window = None,
        include_messages: Include = True,
        offset: Offset = 0,
        limit: Limit = None,
        max_answer_tokens: AnswerTokens = DEFAULT_ANSWER_TOKENS,
        recall_scope: Scope = "session",
        session_id: Annotated[
            str | None,
            Field(
                min_length=1,
                description="The stored session these messages are of: for recall_scope "
                "'user' or 'workspace', whose other sessions to recall from.",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, out.MigrateAnswer]:
        """Fit a conversation to target_model's input budget. If it fits it comes back
        unchanged (decision 'fits'; what a model would reject, such as a tool call without its
        result, is left out and said in report.notes); otherwise it is compressed (decision
        'compressed') and never exceeds the budget; tool calls stay with their results.
        Returns the decision, tokens_before, tokens_after, budget, the report (what was
        dropped or summarized) and the messages to send, in OpenAI chat format, paged to stay
        under max_answer_tokens ('page' says how to get the rest)."""
        return call(
            tools.migrate_session,
            messages_json,
            target_model,
            strategy,
            reserve_output_tokens,
            query,
            context_window,
            include_messages,
            offset,
            limit,
            max_answer_tokens,
            recall_scope,
            session_id,
        )

    @tool(ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    def session_append(
        session_id: SessionId,
        messages_json: Messages,
        workspace: Annotated[
            str | None,
            Field(
                min_length=1,
                description="The workspace of a new session (default 'default'); an existing "
                "session's must match.",
            ),
        ] = None,
        idempotency_key: Annotated[
            str | None,
            Field(
                min_length=1,
                description="Names this batch: sending the same batch again with the same key "
                "stores nothing twice. Without it, messages without an 'id' are always appended.",
            ),
        ] = None,
        user_id: Annotated[
            str | None,
            Field(
                min_length=1,
                description="The user of a new session (recall across a user's sessions and "
                "their facts key on it); an existing session's must match.",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, out.AppendAnswer]:
        """Append messages to a stored session (created on first append). Messages with an
        'id' already stored are skipped; messages without one are always appended unless
        idempotency_key names the batch, so a retry with the same key is safe. The full log
        is kept."""
        return call(
            tools.session_append, session_id, messages_json, workspace, idempotency_key, user_id
        )

    # writes the rolling summary and the migration log; the same call gives the same answer
    @tool(ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True))
    def session_context(
        session_id: SessionId,
        model: ModelName,
        strategy: StrategyArg = "auto",
        query: Query = None,
        reserve_output_tokens: Reserve = None,
        context_window: Window = None,
        include_messages: Include = True,
        offset: Offset = 0,
        limit: Limit = None,
        max_answer_tokens: AnswerTokens = DEFAULT_ANSWER_TOKENS,
        recall_scope: Scope = "session",
    ) -> Annotated[CallToolResult, out.ContextAnswer]:
        """A stored session fitted to a model: the report and the messages to send (OpenAI
        format), paged to stay under max_answer_tokens ('page' says how to get the rest;
        include_messages=false gives the report alone). The stored log is not changed; a
        rolling summary and the switch of model are recorded in the store."""
        return call(
            tools.session_context,
            session_id,
            model,
            strategy,
            query,
            reserve_output_tokens,
            context_window,
            include_messages,
            offset,
            limit,
            max_answer_tokens,
            recall_scope,
        )

    @tool(read_only)
    def session_usage(
        session_id: SessionId, model: ModelName, context_window: Window = None
    ) -> Annotated[CallToolResult, out.UsageAnswer]:
        """How much of a model's input budget a stored session takes: tokens, budget, share,
        whether it fits, and whether the count is exact."""
        return call(tools.session_usage, session_id, model, context_window)

    @tool(read_only)
    def session_list(
        workspace: Annotated[
            str | None, Field(description="Only this workspace (default: every workspace).")
        ] = None,
        offset: Annotated[int, Field(ge=0, description="Skip this many sessions.")] = 0,
        limit: Annotated[
            int, Field(ge=1, le=1000, description="At most this many sessions (count says all).")
        ] = SESSIONS_PAGE,
    ) -> Annotated[CallToolResult, out.SessionList]:
        """The stored sessions, most recently active first, a page at a time: id, workspace,
        message count, creation and last update time, metadata."""
        return call(tools.session_list, workspace, offset, limit)

    @tool(read_only)
    def read_context(
        session_id: SessionId,
        id: Annotated[str, Field(min_length=1, description="The id a cut's marker names.")],
        offset: Annotated[int, Field(ge=0, description="Characters to skip.")] = 0,
        limit: Annotated[
            int, Field(ge=1, le=100_000, description="At most this many characters.")
        ] = 4_000,
    ) -> Annotated[CallToolResult, out.ContextPage]:
        """A page of the whole text of a stored message a fit cut or shrunk (its marker names
        the id), from the store."""
        return call(tools.read_context, session_id, id, offset, limit)

    from session_migrator.mcp._fact_tools import register_fact_tools
    from session_migrator.mcp._placeholder_tools import register_placeholder_tools

    register_disk_tools(tool, call, tools)
    register_placeholder_tools(server, call, tools)
    register_fact_tools(server, call, tools)
    return server


def run_stdio(store: str | None = None) -> None:
    """Serve on stdin/stdout until the client closes the connection."""
    build_server(store).run("stdio")
