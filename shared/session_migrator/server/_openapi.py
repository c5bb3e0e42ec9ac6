"""The OpenAPI document of the HTTP API, made from its route table (docs/openapi.json is this
document; a test fails when the two differ)."""

from __future__ import annotations

from typing import Any

from session_migrator.server._app import ROUTES

__all__ = ["openapi"]

_PROBLEM = {"description": "A problem document (RFC 9457)", "content": {
    "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}  # fmt: skip
_QUERY = {
    "list_sessions": ["offset", "limit"],
    "messages": ["offset", "limit"],
    "usage": ["model", "context_window"],
    "read_context": ["offset", "limit"],
}
_BODY = {
    "append": {
        "messages": {"type": "array", "items": {"type": "object"}},
        "key": {"type": "string"},
    },
    "build_outbound": {
        "model": {"type": "string"},
        "strategy": {"type": "string", "enum": ["auto", "trim", "summarize", "recall"]},
        "query": {"type": "string"},
        "reserve_output_tokens": {"type": "integer"},
        "context_window": {"type": "integer"},
        "tools": {"type": "array", "items": {"type": "object"}},
        "max_output_tokens": {"type": "integer"},
    },
    "erase": {"user_id": {"type": "string"}},
    "user_fact_set": {"text": {"type": "string"}},
    "compress_context": {
        "first_id": {"type": "string"},
        "last_id": {"type": "string"},
        "summary": {"type": "string"},
        "tool": {"type": "string"},
    },
    "migrate": {
        "model": {"type": "string"},
        "messages": {"type": "array", "items": {"type": "object"}},
        "strategy": {"type": "string", "enum": ["auto", "trim", "summarize", "recall"]},
        "query": {"type": "string"},
        "reserve_output_tokens": {"type": "integer"},
        "context_window": {"type": "integer"},
    },
}
_REQUIRED = {
    "append": ["messages"],
    "build_outbound": ["model"],
    "migrate": ["model", "messages"],
    "user_fact_set": ["text"],
}


def openapi() -> dict[str, Any]:
    """The OpenAPI 3.1 document of every route in :data:`~session_migrator.server.ROUTES`."""
    from session_migrator._version import __version__

    paths: dict[str, dict[str, Any]] = {}
    for spec in ROUTES:
        operation: dict[str, Any] = {
            "operationId": spec.handler,
            "summary": spec.summary,
            "responses": {"200": {"description": "OK", "content": {"application/json": {}}},
                          "4XX": _PROBLEM, "5XX": _PROBLEM},
        }  # fmt: skip
        parameters = [
            {"name": "session_id", "in": "path", "required": True, "schema": {"type": "string"}}
        ] if "{session_id}" in spec.path else []  # fmt: skip
        for name in ("message_id", "placeholder_id", "user_id", "key"):
            if f"{{{name}}}" in spec.path:
                parameters.append(
                    {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                )
        parameters += [
            {"name": name, "in": "query", "required": name == "model",
             "schema": {"type": "string" if name == "model" else "integer"}}
            for name in _QUERY.get(spec.handler, [])
        ]  # fmt: skip
        if parameters:
            operation["parameters"] = parameters
        if spec.handler in _BODY:
            schema = {"type": "object", "properties": _BODY[spec.handler]}
            if spec.handler in _REQUIRED:
                schema["required"] = _REQUIRED[spec.handler]
            operation["requestBody"] = {
                "required": spec.handler in _REQUIRED,
                "content": {"application/json": {"schema": schema}},
            }
        if spec.handler != "healthz":
            operation["security"] = [{"bearer": []}]
        paths.setdefault(spec.path, {})[spec.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "session-migrator HTTP API", "version": __version__},
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Problem": {
                    "type": "object",
                    "properties": {
                        "type": {"type": "string"},
                        "title": {"type": "string"},
                        "status": {"type": "integer"},
                        "detail": {"type": "string"},
                        "kind": {"type": "string"},
                    },
                }
            },
        },
    }
