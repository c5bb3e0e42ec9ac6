"""The HTTP API as an ASGI app (Starlette): versioned ``/v1`` routes over one session store.

Each route reads its JSON body (at most ``max_body`` bytes), runs the store and fitting work in
a worker thread (the event loop never blocks on them) within ``timeout`` seconds, and answers
JSON; every error is a problem document (RFC 9457, ``application/problem+json``) with the
library's error kind and what to do. With tokens, every route but ``/v1/healthz`` needs
``Authorization: Bearer TOKEN``, and a session is reachable only with its owner's tokens
(:mod:`session_migrator.server._auth`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from session_migrator._errors import (
    SessionMigratorError,
    UnknownModelError,
)
from session_migrator._version import __version__
from session_migrator.mcp._answers import jsonable
from session_migrator.mcp._tools import SESSIONS_PAGE, SessionTools, parse_messages
from session_migrator.server._auth import Scope, Tokens
from session_migrator.server._fact_routes import FACT_ROUTES, FactRoutes
from session_migrator.server._placeholder_routes import PlaceholderRoutes
from session_migrator.server._problems import Problem, problem_of

__all__ = ["DEFAULT_MAX_BODY", "DEFAULT_TIMEOUT", "ROUTES", "create_app"]

#: The largest request body read (bytes), and the most seconds a request may take.
DEFAULT_MAX_BODY = 8 * 1024 * 1024
DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True)
class RouteSpec:
    """One route: its method and path, what it does, and its handler's name."""

    method: str
    path: str
    summary: str
    handler: str


#: Every route, as the OpenAPI document describes them (docs/openapi.json is made from these).
ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("GET", "/v1/healthz", "The server is up (no token needed).", "healthz"),
    RouteSpec("GET", "/v1/sessions", "The sessions the token reaches, paged.", "list_sessions"),
    RouteSpec("GET", "/v1/sessions/{session_id}", "One session: its count and metadata.", "info"),
    RouteSpec("GET", "/v1/sessions/{session_id}/messages", "The full log, paged.", "messages"),
    RouteSpec(
        "POST",
        "/v1/sessions/{session_id}/append",
        "Append messages (OpenAI format; idempotent by message id).",
        "append",
    ),
    RouteSpec(
        "POST",
        "/v1/sessions/{session_id}/build_outbound",
        "The conversation fitted to a model: the whole request (tools, output reserve).",
        "build_outbound",
    ),
    RouteSpec(
        "GET",
        "/v1/sessions/{session_id}/messages/{message_id}/context",
        "A page of a stored message's whole text, by the id a fit's marker names (read_context).",
        "read_context",
    ),
    RouteSpec(
        "POST",
        "/v1/sessions/{session_id}/compress",
        "Compress a range (first_id..last_id) or one tool's outputs into a summary placeholder.",
        "compress_context",
    ),
    RouteSpec(
        "GET",
        "/v1/sessions/{session_id}/placeholders",
        "The placeholders in force (what the agent compressed).",
        "list_placeholders",
    ),
    RouteSpec(
        "POST",
        "/v1/sessions/{session_id}/placeholders/{placeholder_id}/restore",
        "Restore a placeholder: its messages are sent whole again when they fit.",
        "restore_context",
    ),
    RouteSpec("GET", "/v1/sessions/{session_id}/usage", "The session against a model.", "usage"),
    RouteSpec("DELETE", "/v1/sessions/{session_id}", "Delete a session.", "delete"),
    RouteSpec(
        "POST",
        "/v1/migrate",
        "Messages given in the body fitted to a model (nothing stored).",
        "migrate",
    ),
    RouteSpec(
        "POST",
        "/v1/erase",
        "Erase every session of the token's user (or of a user, unscoped).",
        "erase",
    ),
    *(RouteSpec(*route) for route in FACT_ROUTES),
)


class _Api(PlaceholderRoutes, FactRoutes):
    def __init__(
        self,
        store: Any,
        tokens: Tokens | None,
        max_body: int,
        timeout: float,
        summarizer: Any = None,
        user_facts: bool = False,
        fact_extractor: Any = None,
    ) -> None:
        self.tools = SessionTools(
            store=store,
            summarizer=summarizer,
            user_facts=user_facts,
            fact_extractor=fact_extractor,
        )
        self.tokens = tokens
        self.max_body = max_body
        self.timeout = timeout

    # -- the plumbing ------------------------------------------------------------------------

    def scope(self, request: Request) -> Scope:
        if self.tokens is None:
            return Scope()
        header = request.headers.get("authorization", "")
        kind, _, token = header.partition(" ")
        scope = self.tokens.scope_of(token.strip()) if kind.lower() == "bearer" else None
        if scope is None:
            raise Problem(
                401,
                "Unauthorized",
                "send Authorization: Bearer TOKEN with a token the server was given "
                "(SESSION_MIGRATOR_API_TOKEN or its tokens file)",
            )
        return scope

    async def body(self, request: Request) -> dict[str, Any]:
        size = request.headers.get("content-length")
        if size is not None and size.isdigit() and int(size) > self.max_body:
            raise Problem(413, "Body too large", f"the body is over {self.max_body:,} bytes")
        chunks: list[bytes] = []
        total = 0
        async for chunk in request.stream():
            total += len(chunk)
            if total > self.max_body:
                raise Problem(413, "Body too large", f"the body is over {self.max_body:,} bytes")
            chunks.append(chunk)
        try:
            data = json.loads(b"".join(chunks) or b"{}")
        except ValueError as exc:
            raise Problem(400, "Bad request", f"the body is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise Problem(400, "Bad request", "the body is a JSON object")
        return data

    def owned(self, scope: Scope, session_id: str) -> Any:
        """The session's info, when the scope reaches it (else 404, as if it did not exist)."""
        info = self.tools.store.get_session(session_id)
        if info is None or not scope.owns(info.workspace, info.metadata):
            raise Problem(
                404,
                "Session not found",
                f"no session {session_id!r} this token reaches: GET /v1/sessions lists them",
                "SessionNotFoundError",
            )
        return info

    def route(
        self, handler: Callable[[_Call, Scope], Any], *, needs_token: bool = True
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                with anyio.fail_after(self.timeout):
                    scope = self.scope(request) if needs_token else Scope()
                    body = await self.body(request) if request.method in ("POST", "PUT") else {}
                    answer = await anyio.to_thread.run_sync(handler, _Call(request, body), scope)
            except Problem as problem:
                return problem.response()
            except TimeoutError:
                return Problem(
                    503, "Timed out", f"the request took over {self.timeout:g} s"
                ).response()
            except (SessionMigratorError, ValueError, TypeError) as exc:
                return problem_of(exc).response()
            return JSONResponse(jsonable(answer))

        return endpoint

    # -- the routes --------------------------------------------------------------------------

    def healthz(self, call: _Call, scope: Scope) -> dict[str, Any]:
        return {"status": "ok", "version": __version__}

    def list_sessions(self, call: _Call, scope: Scope) -> dict[str, Any]:
        offset, limit = _paging(call, SESSIONS_PAGE)
        infos = [
            i for i in self.tools.store.list_sessions(None) if scope.owns(i.workspace, i.metadata)
        ]
        shown = infos[offset : offset + limit]
        end = offset + len(shown)
        return {
            "count": len(infos),
            "next_offset": end if end < len(infos) else None,
            "sessions": [asdict(i) for i in shown],
        }

    def info(self, call: _Call, scope: Scope) -> dict[str, Any]:
        return asdict(self.owned(scope, call.session_id))

    def messages(self, call: _Call, scope: Scope) -> dict[str, Any]:
        self.owned(scope, call.session_id)
        offset, limit = _paging(call, 200)
        log = self.tools.store.load(call.session_id)
        shown = log[offset : offset + limit]
        end = offset + len(shown)
        return {
            "count": len(log),
            "next_offset": end if end < len(log) else None,
            "messages": [m.to_openai() for m in shown],
        }

    def append(self, call: _Call, scope: Scope) -> dict[str, Any]:
        session_id = call.session_id
        raw = call.body.get("messages")
        if not isinstance(raw, list):
            raise Problem(400, "Bad request", 'the body is {"messages": [...]} (OpenAI format)')
        messages = parse_messages(raw)
        key = call.body.get("key")
        store = self.tools.store
        info = store.get_session(session_id)
        if info is not None:
            self.owned(scope, session_id)
        # a new session is placed in the token's workspace and stamped with its user
        added = store.append(
            session_id,
            messages,
            workspace=scope.workspace or "default" if info is None else info.workspace,
            metadata={"user_id": scope.user} if info is None and scope.user else None,
            idempotency_key=key if isinstance(key, str) else None,
        )
        after = store.get_session(session_id)
        self.tools.learn(after.metadata if after else None, messages, added)
        return {
            "session_id": session_id,
            "received": len(messages),
            "appended": added,
            "already_stored": len(messages) - added,
            "message_count": after.message_count if after else added,
        }

    def build_outbound(self, call: _Call, scope: Scope) -> dict[str, Any]:
        self.owned(scope, call.session_id)
        body = call.body
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise Problem(400, "Bad request", 'the body names the model: {"model": "gpt-4o"}')
        tools = body.get("tools") or []
        if tools or body.get("max_output_tokens") is not None:
            from session_migrator.migration._request import fit_request
            from session_migrator.sessions._placeholder_view import PlaceholderView

            log = self.tools.store.load(call.session_id)  # (the agent's placeholders honoured)
            fit = fit_request(
                PlaceholderView().view(self.tools.store, call.session_id, log),
                model,
                tools=tools,
                max_output_tokens=body.get("max_output_tokens"),
                strategy=body.get("strategy", "auto"),
                query=body.get("query"),
            )
            return {
                "session_id": call.session_id,
                "decision": fit.report.decision,
                "report": fit.report.to_dict(),
                "messages": [m.to_openai(include_id=False) for m in fit.messages],
            }
        with _http_remedy():
            return self.tools.session_context(
                call.session_id,
                model,
                strategy=body.get("strategy", "auto"),
                query=body.get("query"),
                reserve_output_tokens=body.get("reserve_output_tokens"),
                context_window=body.get("context_window"),
            )

    def usage(self, call: _Call, scope: Scope) -> dict[str, Any]:
        self.owned(scope, call.session_id)
        model = call.request.query_params.get("model")
        if not model:
            raise Problem(400, "Bad request", "name the model: ?model=gpt-4o")
        window = call.request.query_params.get("context_window")
        with _http_remedy():
            return self.tools.session_usage(
                call.session_id, model, int(window) if window and window.isdigit() else None
            )

    def read_context(self, call: _Call, scope: Scope) -> dict[str, Any]:
        self.owned(scope, call.session_id)
        message_id = call.request.path_params["message_id"]
        offset, limit = _paging(call, 4_000)
        limit = min(limit, 100_000)
        try:
            return self.tools.read_context(call.session_id, message_id, offset, limit)
        except KeyError as exc:
            raise Problem(404, "Message not found", str(exc.args[0]), "KeyError") from None

    def delete(self, call: _Call, scope: Scope) -> dict[str, Any]:
        self.owned(scope, call.session_id)
        return {"deleted": self.tools.store.delete_session(call.session_id)}

    def migrate(self, call: _Call, scope: Scope) -> dict[str, Any]:
        body = call.body
        model = body.get("model")
        messages = body.get("messages")
        if not isinstance(model, str) or not isinstance(messages, list):
            raise Problem(400, "Bad request", 'the body is {"model": "gpt-4o", "messages": [...]}')
        with _http_remedy():
            return self.tools.migrate_session(
                messages,
                model,
                strategy=body.get("strategy", "auto"),
                query=body.get("query"),
                reserve_output_tokens=body.get("reserve_output_tokens"),
                context_window=body.get("context_window"),
            )

    def erase(self, call: _Call, scope: Scope) -> dict[str, Any]:
        user = scope.user if scope.user is not None else call.body.get("user_id")
        if not isinstance(user, str) or not user:
            raise Problem(400, "Bad request", 'an unscoped token names the user: {"user_id": ...}')
        return {"user_id": user, "erased": self.tools.store.erase_user(user)}


@contextlib.contextmanager
def _http_remedy() -> Iterator[None]:
    """An unknown model's error, with what to do over HTTP."""
    try:
        yield
    except UnknownModelError as exc:
        raise exc.with_remedy(
            'Give its window: build_outbound takes "context_window" in the body, usage '
            "?context_window=; or register the model in the JSON/TOML file named by "
            "SESSION_MIGRATOR_MODELS where this server runs."
        ) from None


@dataclass(frozen=True)
class _Call:
    request: Request
    body: dict[str, Any]

    @property
    def session_id(self) -> str:
        return str(self.request.path_params["session_id"])


def _paging(call: _Call, default: int) -> tuple[int, int]:
    try:
        offset = int(call.request.query_params.get("offset", 0))
        limit = int(call.request.query_params.get("limit", default))
    except ValueError:
        raise Problem(400, "Bad request", "offset and limit are whole numbers") from None
    if offset < 0 or limit < 1:
        raise Problem(400, "Bad request", "offset is 0 or more and limit at least 1")
    return offset, limit


def _admins_only(app: Any, tokens: Tokens | None) -> Any:
    """``app`` (the MCP endpoint) behind the tokens: an unscoped token only, since the MCP
    tools reach every session."""

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and tokens is not None:
            headers = dict(scope.get("headers") or [])
            kind, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
            found = tokens.scope_of(token.strip()) if kind.lower() == "bearer" else None
            if found is None or found != Scope():
                problem = Problem(
                    401 if found is None else 403,
                    "Unauthorized" if found is None else "Forbidden",
                    "MCP over HTTP takes an unscoped token (its tools reach every session): "
                    "send Authorization: Bearer TOKEN",
                )
                await problem.response()(scope, receive, send)
                return
        await app(scope, receive, send)

    return guarded


def create_app(
    store: Any = None,
    *,
    tokens: Tokens | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    timeout: float = DEFAULT_TIMEOUT,
    mcp: bool = False,
    host: str = "127.0.0.1",
    summarizer: Any = None,
    user_facts: bool = False,
    fact_extractor: Any = None,
) -> Starlette:
    """The HTTP API over ``store`` (a store or URL; ``None``: the default store).

    ``tokens``: who may call it (``None`` or empty: anyone who reaches it; serve it on loopback
    only). ``mcp``: also serve the MCP tools over streamable HTTP at ``/mcp/`` (the ``mcp``
    extra), behind the same tokens; ``host`` is where it is served (the MCP endpoint checks the
    ``Host`` header against it). ``summarizer``: writes the summaries of what a session's
    context cuts, in the background (``session-migrator serve --summarizer openai``); the
    usage route says where each session's compaction stands. ``user_facts``
    (``serve --user-facts``): the facts a token's user states in appended messages are learnt
    (by rules, and by ``fact_extractor`` in the background) and sent in every outbound request
    of their sessions.
    """
    api = _Api(
        store, tokens if tokens else None, max_body, timeout, summarizer, user_facts, fact_extractor
    )
    routes: list[BaseRoute] = [
        Route(
            spec.path,
            api.route(getattr(api, spec.handler), needs_token=spec.handler != "healthz"),
            methods=[spec.method],
        )
        for spec in ROUTES
    ]
    lifespan = None
    if mcp:
        from session_migrator.mcp_server import build_server

        server = build_server(
            api.tools.store,
            summarizer=summarizer,
            user_facts=user_facts,
            fact_extractor=fact_extractor,
        )
        endpoint = server.streamable_http_app(streamable_http_path="/", host=host)
        routes.append(Mount("/mcp", app=_admins_only(endpoint, api.tokens)))

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            async with server.session_manager.run():
                yield

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.api = api
    return app
