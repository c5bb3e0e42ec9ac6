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
from collections import OrderedDict
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
from session_migrator.messages._messages import Message, messages_from_openai, messages_to_openai
from session_migrator.messages._nesting import MAX_NESTING

if TYPE_CHECKING:
    from session_migrator.migration._report import MigrationResult
    from session_migrator.models._windows import ModelWindow
    from session_migrator.recall._related import RecallScope
    from session_migrator.sessions._fitter import SessionFitter
    from session_migrator.store import BaseSessionStore

__all__ = [
    "DEFAULT_ANSWER_TOKENS",
    "ArgumentError",
    "MessagesArg",
    "SessionTools",
    "Strategy",
    "parse_messages",
]

Strategy = Literal["auto", "trim", "summarize", "recall"]
#: ``messages_json`` as a JSON string, or already parsed (a list, or ``{"messages": [...]}``).
MessagesArg = str | list[Any] | dict[str, Any]


#: What the tools say to do about a model the table does not know.
UNKNOWN_MODEL_REMEDY = (
    "migrate_session, session_context and session_usage take context_window (its window in "
    "tokens) for a model not in the table; or add it to the JSON/TOML file named by "
    "SESSION_MIGRATOR_MODELS where this server runs."
)


#: The most tokens an answer carrying messages takes by default: clients refuse larger tool
#: results (Claude Code: about 25,000 tokens unless MAX_MCP_OUTPUT_TOKENS says otherwise).
DEFAULT_ANSWER_TOKENS = 20_000
#: How many sessions' fitted views the server keeps (each holds the session's full log).
DEFAULT_CACHED_SESSIONS = 4
#: Characters per token assumed when sizing an answer (JSON runs 3-4; 3 errs on the small side).
_CHARS_PER_TOKEN = 3


class ArgumentError(SessionMigratorError, ValueError):
    """A tool argument is wrong (bad JSON, wrong shape, out of range)."""


class SessionTools:
    """What the MCP tools do, without MCP: each method takes plain values and returns a dict.

    ``store`` is a store URL or object (``None``: the default store), opened on first use so the
    model tools work even when no store can be opened. Errors are
    :class:`~session_migrator.SessionMigratorError` subclasses with messages meant for the caller.
    Thread-safe: calls are serialised. The fitted views of the ``max_sessions`` sessions
    served last are kept (each holds its session's full log); older ones are let go.

    >>> tools = SessionTools(store="memory://")
    >>> tools.model_context_window("gpt-4o")["context_window"]
    128000
    """

    def __init__(
        self,
        store: str | BaseSessionStore | None = None,
        *,
        max_sessions: int = DEFAULT_CACHED_SESSIONS,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        self._store_arg = store
        self._store: BaseSessionStore | None = None
        self.max_sessions = max_sessions
        self._fitters: OrderedDict[tuple[str, str, int | None, str], SessionFitter] = OrderedDict()
        self._lock = threading.RLock()

    # -- models ------------------------------------------------------------------------------

    def model_context_window(self, model: str) -> dict[str, Any]:
        return _window_dict(_lookup(model))

    def list_known_models(
        self, query: str | None = None, provider: str | None = None, limit: int = 50
    ) -> dict[str, Any]:
        from session_migrator.models._lookup import known_models

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
        include_messages: bool = True,
        offset: int = 0,
        limit: int | None = None,
        max_answer_tokens: int = DEFAULT_ANSWER_TOKENS,
        recall_scope: str = "session",
        session_id: str | None = None,
    ) -> dict[str, Any]:
        from session_migrator.migration._migrate import migrate

        paging = _Paging.checked(include_messages, offset, limit, max_answer_tokens)
        messages = parse_messages(messages_json)
        window = _lookup(target_model, context_window)
        _check_reserve(reserve_output_tokens)
        scope = _scope(recall_scope)
        if scope != "session" and session_id is None:
            raise ArgumentError(
                f"recall_scope {scope!r} needs session_id: the stored session these messages "
                "are of, whose user's or workspace's other sessions to recall from"
            )
        with self._lock:
            related = None
            if scope != "session" and session_id is not None:
                from session_migrator.store import related_sessions

                self._require(session_id)
                related = related_sessions(self.store, session_id, scope)
            result = migrate(
                messages,
                window,
                strategy=strategy,
                query=query,
                reserve_output=reserve_output_tokens,
                related=related,
            )
        return _result_dict(result, paging, "migrate_session")

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
        workspace: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        messages = parse_messages(messages_json)
        with self._lock:
            existing = self.store.get_session(session_id) if workspace is not None else None
            if existing is not None and existing.workspace != workspace:
                raise ArgumentError(
                    f"session {session_id!r} is in workspace {existing.workspace!r}, not "
                    f"{workspace!r}: workspace only places a new session (leave it out to "
                    "append to this one, or use another session_id)"
                )
            added = self.store.append(
                session_id,
                messages,
                workspace=workspace or "default",
                idempotency_key=idempotency_key,
            )
            info = self.store.get_session(session_id)
        return {
            "session_id": session_id,
            "workspace": info.workspace if info else workspace or "default",
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
        include_messages: bool = True,
        offset: int = 0,
        limit: int | None = None,
        max_answer_tokens: int = DEFAULT_ANSWER_TOKENS,
        recall_scope: str = "session",
    ) -> dict[str, Any]:
        from session_migrator.sessions._fitter import SessionFitter

        paging = _Paging.checked(include_messages, offset, limit, max_answer_tokens)
        window = _lookup(model, context_window)
        _check_reserve(reserve_output_tokens)
        scope = _scope(recall_scope)
        with self._lock:
            self._require(session_id)
            key = (session_id, strategy, reserve_output_tokens, scope)
            fitter = self._fitters.get(key)
            if fitter is None:
                fitter = SessionFitter(
                    session_id,
                    store=self.store,
                    strategy=strategy,
                    reserve_output=reserve_output_tokens,
                    recall_scope=scope,
                )
            self._fitters[key] = fitter
            self._fitters.move_to_end(key)
            while len(self._fitters) > self.max_sessions:
                self._fitters.popitem(last=False)
            result = fitter.fit(window, query=query)
        return {"session_id": session_id, **_result_dict(result, paging, "session_context")}

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
        except RecursionError:
            raise ArgumentError(
                f"messages_json is nested too deeply to read (a message may nest at most "
                f"{MAX_NESTING} levels); flatten it"
            ) from None
    try:
        return messages_from_openai(data)
    except InvalidMessageError as exc:
        raise ArgumentError(f"messages_json: {exc}") from None


def _lookup(model: str, context_window: int | None = None) -> ModelWindow:
    from session_migrator.models._lookup import lookup_model

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


def _scope(value: str) -> RecallScope:
    from session_migrator.recall._related import check_scope

    try:
        return check_scope(value)
    except ValueError as exc:
        raise ArgumentError(f"recall_scope: {exc}") from None


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
        "ref": window.ref or None,
    }


class _Paging:
    """Which of the fitted messages an answer carries, and the size it may take."""

    def __init__(self, include: bool, offset: int, limit: int | None, tokens: int) -> None:
        self.include, self.offset, self.limit, self.tokens = include, offset, limit, tokens

    @classmethod
    def checked(cls, include: bool, offset: int, limit: int | None, tokens: int) -> _Paging:
        if offset < 0:
            raise ArgumentError(f"offset must not be negative, got {offset}")
        if limit is not None and limit < 1:
            raise ArgumentError(f"limit must be at least 1 (or left out), got {limit}")
        if tokens < 1_000:
            raise ArgumentError(f"max_answer_tokens must be at least 1000, got {tokens}")
        return cls(include, offset, limit, tokens)


#: Id lists longer than this are shortened in an answer (their head and tail kept, counted).
_IDS_SHOWN = 50


#: Characters of a summary's text shown in an answer's report (the summary itself is a message).
_SUMMARY_SHOWN = 300


def _short_report(report: dict[str, Any], room: int) -> dict[str, Any]:
    """``report`` within ``room`` characters where its id lists and the summary's text (which
    the messages carry whole) can be shortened."""
    if len(json.dumps(report)) <= room:
        return report
    out = dict(report)
    summary = report.get("summary")
    if isinstance(summary, dict) and len(str(summary.get("text", ""))) > _SUMMARY_SHOWN:
        text = str(summary["text"])
        out["summary"] = {
            **summary,
            "text": text[:_SUMMARY_SHOWN] + "...",
            "text_chars": len(text),
            "text_note": "shortened here: the messages carry the whole summary",
        }
    for key, value in report.items():
        if key.endswith("_ids") and isinstance(value, list) and len(value) > _IDS_SHOWN:
            half = _IDS_SHOWN // 2
            out[key] = [*value[:half], *value[-half:]]
            out[f"{key}_omitted"] = len(value) - _IDS_SHOWN
    return out


def _result_dict(result: MigrationResult, paging: _Paging, tool: str) -> dict[str, Any]:
    """The answer of ``tool``: the decision, the report, and the page of messages that fits
    the answer's size (``paging``), with how to ask for the rest."""
    room = paging.tokens * _CHARS_PER_TOKEN
    report = _short_report(jsonable(result.report.to_dict()), room // 4)
    room -= len(json.dumps(report)) + 400  # (the page's own fields)
    total = len(result.messages)
    start = min(paging.offset, total)
    stop = total if paging.limit is None else min(total, start + paging.limit)
    page: list[dict[str, Any]] = []
    cut: int | None = None  # the size of a message cut to fit the answer
    if paging.include:
        for message in result.messages[start:stop]:
            data = jsonable(messages_to_openai([message], include_id=False)[0])
            size = len(json.dumps(data)) + 2
            if size > room and not page and isinstance(data.get("content"), str):
                # alone over the cap: its text's head, said so (raise the cap to get it whole)
                cut = size
                data["content"] = data["content"][: max(room, 1_000)] + " [... cut here]"
                size = len(json.dumps(data)) + 2
            room -= size
            if room < 0 and page:
                break
            page.append(data)
    shown_end = start + len(page)
    complete = shown_end >= total and cut is None
    hint: str | None = None
    if cut is not None:
        hint = (
            f"message {start} is larger than the answer's cap and is cut here; call {tool} "
            f"again with offset={start} and max_answer_tokens={cut // _CHARS_PER_TOKEN + 2_000} "
            f"to get it whole, or offset={shown_end} for the next page"
        )
    elif not paging.include:
        hint = f"messages left out (include_messages=false); {total} in the fitted conversation"
    elif not complete:
        why = f"the answer is capped at about {paging.tokens:,} tokens"
        if paging.limit is not None and shown_end == stop:
            why = f"limit={paging.limit}"
        hint = (
            f"messages {start} to {shown_end - 1} of {total} ({why}); call {tool} again with "
            f"offset={shown_end} for the next page, or raise max_answer_tokens if your client "
            "takes larger answers"
        )
    return {
        "decision": report["decision"],
        "tokens_before": report["tokens_before"],
        "tokens_after": report["tokens_after"],
        "budget": report["budget"],
        "report": report,
        "messages": page,
        "page": {
            "offset": start,
            "returned": len(page),
            "total": total,
            "complete": complete and paging.include,
            "next_offset": None if shown_end >= total or not paging.include else shown_end,
            "hint": hint,
        },
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
