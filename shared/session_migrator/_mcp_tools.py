"""What the MCP tools do, without MCP: plain values in, JSON-able dicts out.

:mod:`session_migrator.mcp_server` declares these as MCP tools; keeping the logic here means it
can be used and tested without the ``mcp`` extra. Errors are
:class:`~session_migrator.SessionMigratorError` subclasses whose messages are meant for the
caller (they become tool errors).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from session_migrator._errors import (
    InvalidMessageError,
    SessionMigratorError,
    SessionNotFoundError,
    UnknownModelError,
)
from session_migrator._messages import Message, messages_from_openai, messages_to_openai

if TYPE_CHECKING:
    from session_migrator._fitter import SessionFitter
    from session_migrator._migrate import MigrationResult
    from session_migrator._windows import ModelWindow
    from session_migrator.store import BaseSessionStore

__all__ = ["ArgumentError", "MessagesArg", "SessionTools", "Strategy", "parse_messages"]

Strategy = Literal["auto", "trim", "summarize", "recall"]
#: ``messages_json`` as a JSON string, or already parsed (a list, or ``{"messages": [...]}``).
MessagesArg = str | list[Any] | dict[str, Any]


#: What the tools say to do about a model the table does not know.
UNKNOWN_MODEL_REMEDY = (
    "migrate_session, session_context and session_usage take context_window (its window in "
    "tokens) for a model not in the table; or add it to the JSON/TOML file named by "
    "SESSION_MIGRATOR_MODELS where this server runs."
)


class ArgumentError(SessionMigratorError, ValueError):
    """A tool argument is wrong (bad JSON, wrong shape, out of range)."""


class SessionTools:
    """What the MCP tools do, without MCP: each method takes plain values and returns a dict.

    ``store`` is a store URL or object (``None``: the default store), opened on first use so the
    model tools work even when no store can be opened. Errors are
    :class:`~session_migrator.SessionMigratorError` subclasses with messages meant for the caller.
    Thread-safe: calls are serialised.

    >>> tools = SessionTools(store="memory://")
    >>> tools.model_context_window("gpt-4o")["context_window"]
    128000
    """

    def __init__(self, store: str | BaseSessionStore | None = None) -> None:
        self._store_arg = store
        self._store: BaseSessionStore | None = None
        self._fitters: dict[tuple[str, str, int | None], SessionFitter] = {}
        self._lock = threading.RLock()

    # -- models ------------------------------------------------------------------------------

    def model_context_window(self, model: str) -> dict[str, Any]:
        return _window_dict(_lookup(model))

    def list_known_models(
        self, query: str | None = None, provider: str | None = None, limit: int = 50
    ) -> dict[str, Any]:
        from session_migrator._models import known_models

        if limit < 1:
            raise ArgumentError(f"limit must be at least 1, got {limit}")
        found = known_models(query, provider=provider)
        shown = found[:limit]
        return {
            "count": len(found),
            "returned": len(shown),
            "truncated": len(found) > len(shown),
            "models": [_window_dict(w) for w in shown],
        }

    # -- migration ---------------------------------------------------------------------------

    def migrate_session(
        self,
        messages_json: MessagesArg,
        target_model: str,
        strategy: str = "auto",
        reserve_output_tokens: int | None = None,
        query: str | None = None,
        context_window: int | None = None,
    ) -> dict[str, Any]:
        from session_migrator._migrate import migrate

        messages = parse_messages(messages_json)
        window = _lookup(target_model, context_window)
        _check_reserve(reserve_output_tokens)
        with self._lock:
            result = migrate(
                messages,
                window,
                strategy=strategy,
                query=query,
                reserve_output=reserve_output_tokens,
            )
        return _result_dict(result)

    # -- the store ---------------------------------------------------------------------------

    @property
    def store(self) -> BaseSessionStore:
        """The store, opened on first use."""
        with self._lock:
            if self._store is None:
                from session_migrator.store import open_store

                arg = self._store_arg
                self._store = open_store(arg) if arg is None or isinstance(arg, str) else arg
            return self._store

    def close(self) -> None:
        """Close the store if this object opened it."""
        with self._lock:
            if self._store is not None and (
                self._store_arg is None or isinstance(self._store_arg, str)
            ):
                self._store.close()
            self._store = None
            self._fitters.clear()

    def session_append(
        self,
        session_id: str,
        messages_json: MessagesArg,
        workspace: str = "default",
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        messages = parse_messages(messages_json)
        with self._lock:
            added = self.store.append(
                session_id, messages, workspace=workspace, idempotency_key=idempotency_key
            )
            info = self.store.get_session(session_id)
        return {
            "session_id": session_id,
            "workspace": info.workspace if info else workspace,
            "received": len(messages),
            "appended": added,
            "already_stored": len(messages) - added,
            "message_count": info.message_count if info else added,
        }

    def session_context(
        self,
        session_id: str,
        model: str,
        strategy: str = "auto",
        query: str | None = None,
        reserve_output_tokens: int | None = None,
        context_window: int | None = None,
    ) -> dict[str, Any]:
        from session_migrator._fitter import SessionFitter

        window = _lookup(model, context_window)
        _check_reserve(reserve_output_tokens)
        with self._lock:
            self._require(session_id)
            key = (session_id, strategy, reserve_output_tokens)
            fitter = self._fitters.get(key)
            if fitter is None:
                fitter = SessionFitter(
                    session_id,
                    store=self.store,
                    strategy=strategy,
                    reserve_output=reserve_output_tokens,
                )
                self._fitters[key] = fitter
            result = fitter.fit(window, query=query)
        return {"session_id": session_id, **_result_dict(result)}

    def session_usage(
        self, session_id: str, model: str, context_window: int | None = None
    ) -> dict[str, Any]:
        from session_migrator.store import usage

        window = _lookup(model, context_window)
        with self._lock:
            self._require(session_id)
            return usage(self.store, session_id, window).to_dict()

    def session_list(self, workspace: str | None = None) -> dict[str, Any]:
        with self._lock:
            infos = self.store.list_sessions(workspace)
        return {
            "workspace": workspace,
            "count": len(infos),
            "sessions": [jsonable(asdict(info)) for info in infos],
        }

    def _require(self, session_id: str) -> None:
        if self.store.get_session(session_id) is None:
            raise SessionNotFoundError(
                session_id,
                "session_list lists the stored sessions (of every workspace without one); "
                "session_append creates a session.",
            )


# -- helpers -----------------------------------------------------------------------------------


def parse_messages(value: MessagesArg) -> list[Message]:
    """OpenAI-format messages from a JSON string or an already parsed list.

    Raises :class:`ArgumentError` for invalid JSON or a wrong shape, naming the spot.
    """
    data: Any = value
    if isinstance(value, str):
        try:
            data = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ArgumentError(
                f"messages_json is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                f"{exc.msg}); pass a JSON list of OpenAI chat messages such as "
                '[{"role": "user", "content": "hi"}]'
            ) from None
    try:
        return messages_from_openai(data)
    except InvalidMessageError as exc:
        raise ArgumentError(f"messages_json: {exc}") from None


def _lookup(model: str, context_window: int | None = None) -> ModelWindow:
    from session_migrator._models import lookup_model

    if context_window is not None and context_window < 1:
        raise ArgumentError(f"context_window must be positive, got {context_window}")
    try:
        return lookup_model(model, context_window=context_window)
    except UnknownModelError as exc:
        raise exc.with_remedy(UNKNOWN_MODEL_REMEDY) from None
    except ValueError as exc:
        if isinstance(exc, SessionMigratorError):
            raise
        raise ArgumentError(f"model: {exc}") from None


def _check_reserve(value: int | None) -> None:
    if value is not None and value < 0:
        raise ArgumentError(f"reserve_output_tokens must not be negative, got {value}")


def _window_dict(window: ModelWindow) -> dict[str, Any]:
    return {
        "name": window.name,
        "provider": window.provider,
        "context_window": window.context_window,
        "max_input_tokens": window.max_input_tokens,
        "max_output_tokens": window.max_output_tokens,
        "tokenizer": window.tokenizer,
        "source": window.source,
        "as_of": window.as_of,
    }


def _result_dict(result: MigrationResult) -> dict[str, Any]:
    report = jsonable(result.report.to_dict())
    return {
        "decision": report["decision"],
        "tokens_before": report["tokens_before"],
        "tokens_after": report["tokens_after"],
        "budget": report["budget"],
        "report": report,
        "messages": messages_to_openai(result.messages, include_id=False),
    }


def jsonable(value: Any) -> Any:
    """``value`` as what JSON text in UTF-8 can carry: datetimes as ISO strings, mappings as
    dicts with string keys, tuples as lists, and every lone surrogate (JSON text can escape one,
    UTF-8 cannot encode it: the protocol's encoder refuses it) as U+FFFD; the store keeps the
    originals.
    """
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return _LONE_SURROGATE.sub("\ufffd", value)
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {jsonable(str(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
