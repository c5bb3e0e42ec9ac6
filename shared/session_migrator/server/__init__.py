"""The HTTP API: the context store and fitting over versioned ``/v1`` routes, for hosts that are
not Python (a Node or Go dispatcher, a LangChain.js or Vercel AI SDK app).

It owns the ASGI app (:func:`create_app`, Starlette, every store and fitting call in a worker
thread), its tenancy (bearer tokens scoped to a user or a workspace, :class:`Tokens`), its
problem documents and its OpenAPI document (:func:`openapi`); ``session-migrator serve`` runs it
under uvicorn on TCP or a Unix socket. It imports the MCP layer's tools (what the routes do) and
the layers under it; the ``server`` extra brings Starlette and uvicorn.
"""

from __future__ import annotations

from session_migrator.server._app import ROUTES, create_app
from session_migrator.server._auth import ENV_TOKEN, Scope, Tokens, TokensError
from session_migrator.server._openapi import openapi

__all__ = ["ENV_TOKEN", "ROUTES", "Scope", "Tokens", "TokensError", "create_app", "openapi"]
