"""What the MCP tools do, without MCP: plain values in, JSON-able dicts out.

:mod:`session_migrator.mcp_server` declares these as MCP tools; keeping the logic here means it
can be used and tested without the ``mcp`` extra. Errors are
:class:`~session_migrator.SessionMigratorError` subclasses whose messages are meant for the
caller (they become tool errors). The arguments are read and checked in ``_arguments``, the
answers shaped and paged in ``_answers``.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from session_migrator._errors import SessionNotFoundError
from session_migrator.mcp._answers import _Paging, _result_dict, _window_dict, jsonable
from session_migrator.mcp._arguments import (
    ArgumentError,
    MessagesArg,
    Strategy,
    _check_reserve,
    _lookup,
    _scope,
    parse_messages,
)
from session_migrator.recall._embeddings import as_embeddings

if TYPE_CHECKING:
    from session_migrator.messages._messages import Message
    from session_migrator.sessions._fitter import SessionFitter
    from session_migrator.store import BaseSessionStore
    from session_migrator.summaries._fact_extractors import FactExtractor
    from session_migrator.summaries._summarizers import Summarizer

__all__ = [
    "DEFAULT_ANSWER_TOKENS",
    "SESSIONS_PAGE",
    "ArgumentError",
    "MessagesArg",
    "SessionTools",
    "Strategy",
    "parse_messages",
]

#: The most tokens an answer carrying messages takes by default: clients refuse larger tool
#: results (Claude Code: about 25,000 tokens unless MAX_MCP_OUTPUT_TOKENS says otherwise).
DEFAULT_ANSWER_TOKENS = 20_000
#: How many sessions' fitted views the server keeps (each holds the session's full log).
DEFAULT_CACHED_SESSIONS = 4


#: The sessions one ``session_list`` answer holds unless its ``limit`` says otherwise.
SESSIONS_PAGE = 100


class SessionTools:
    """What the MCP tools do, without MCP: each method takes plain values and returns a dict.

    ``store`` is a store URL or object (``None``: the default store), opened on first use so the
    model tools work even when no store can be opened. Errors are
    :class:`~session_migrator.SessionMigratorError` subclasses with messages meant for the caller.
    Thread-safe: calls are serialised. The fitted views of the ``max_sessions`` sessions
    served last are kept (each holds its session's full log); older ones are let go.
    ``embeddings``: an embedding model (any that ``migrate()`` takes) for hybrid recall in
    :meth:`migrate_session` and :meth:`session_context` (which keeps its vectors in the store).
    ``summarizer``: a model that writes the summaries of what :meth:`session_context` cuts; it
    runs in the background (the process's :class:`~session_migrator.Compactor`), so no call waits
    for it, and until a summary is written the fit sends the offline one.
    ``user_facts``: what the users of appended sessions (their metadata's ``user_id``) state
    about themselves is read by rules as it is appended, and by ``fact_extractor`` (a
    :class:`~session_migrator.FactExtractor`) in the background, kept per user, and sent in
    every :meth:`session_context` of their sessions (see ``SessionFitter(user_facts=True)``).
    :meth:`session_usage` says where the session's compaction stands.

    >>> tools = SessionTools(store="memory://")
    >>> tools.model_context_window("gpt-4o")["context_window"]
    128000
    """

    def __init__(
        self,
        store: str | BaseSessionStore | None = None,
        *,
        max_sessions: int = DEFAULT_CACHED_SESSIONS,
        embeddings: Any = None,
        summarizer: Summarizer | None = None,
        user_facts: bool = False,
        fact_extractor: FactExtractor | None = None,
    ) -> None:
        from session_migrator.sessions._facts import check_extractor

        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        self.embeddings = None if embeddings is None else as_embeddings(embeddings)
        self.summarizer = summarizer
        self.user_facts = user_facts
        self.fact_extractor = check_extractor(fact_extractor, user_facts)
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
                related = related_sessions(self.store, session_id, scope, query=query or messages)
            result = migrate(
                messages,
                window,
                strategy=strategy,
                query=query,
                reserve_output=reserve_output_tokens,
                related=related,
                embeddings=self.embeddings,
            )
        return _result_dict(result, paging, "migrate_session")

    def read_context(
        self, session_id: str, message_id: str, offset: int = 0, limit: int = 4_000
    ) -> dict[str, Any]:
        from session_migrator.context_tools import read_context
        from session_migrator.store import NotOffloadedError

        with self._lock:
            self._require(session_id)
            messages = self.store.load(session_id)
            found = next((m for m in messages if m.id == message_id), None)
            if found is not None and found.role == "tool":
                # an output kept outside the log: its whole text, not the preview
                with contextlib.suppress(NotOffloadedError):
                    whole = self.store.get_offloaded(session_id, message_id)
                    messages = [found.replace(content=whole)]
        page = read_context(messages, message_id, offset, limit)
        return {"session_id": session_id, "id": message_id, "offset": offset, "text": page}

    def import_session(
        self,
        path: str | None = None,
        source: str | None = None,
        cwd: str | None = None,
        home: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
    ) -> dict[str, Any]:
        """Import a Claude Code or Codex session file into the store: ``path``, or without it the
        newest session of working directory ``cwd`` that agent ``source`` keeps under ``home``.
        Answers what a caller needs next, kept small: the stored session's id, its counts, and
        a short brief."""
        from session_migrator.importers._handoff import brief_of, read_session

        if path is None and cwd is None:
            raise ArgumentError(
                "give path (a session file) or cwd (whose newest session to import)"
            )
        kind, result = read_session(
            path,
            source=source,
            cwd=cwd,
            home=home,
            session_id=session_id,
            workspace=workspace or "default",
        )
        added = result.save(self.store)
        session = result.session
        meta = session.metadata
        return {
            "session_id": session.id,
            "path": str(result.path),
            "source_format": kind,
            "source_model": result.source_model,
            "cwd": meta.get("cwd"),
            "git_branch": meta.get("git_branch"),
            "title": meta.get("title"),
            "messages": len(session.messages),
            "tool_calls": sum(len(m.tool_calls) for m in session.messages),
            "stored": added,
            "warnings": list(result.warnings[:5]),
            "brief": brief_of(session),
            "next": (
                f"session_context(session_id={session.id!r}, model=...) gives it fitted to a "
                "model; handoff_session continues it in another agent"
            ),
        }

    def handoff_session(
        self,
        path: str | None,
        to: str,
        model: str,
        home: str | None = None,
        cwd: str | None = None,
        source: str | None = None,
    ) -> dict[str, Any]:
        from session_migrator.importers import handoff

        if path is None and cwd is None:
            raise ArgumentError(
                "give path (a session file) or cwd (whose newest session to continue)"
            )
        done = handoff(path, to=to, model=model, home=home, cwd=cwd, source=source,
                       store=self.store)  # fmt: skip
        report = done.report
        return {
            "session_id": done.session_id,
            "path": str(done.path),
            "command": done.command,
            "commands": list(done.commands),
            "brief": done.brief,
            "cwd": done.cwd,
            "messages": done.messages,
            "source_messages": done.source_messages,
            "source_path": str(done.source_path),
            "source_format": done.source_format,
            "stored_session_id": done.stored_session_id,
            "harness_left_out": dict(done.harness_left_out),
            "harness_tokens": done.harness_tokens,
            "decision": report.decision,
            "tokens_after": report.tokens_after,
            "budget": report.budget,
        }

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
        user_id: str | None = None,
    ) -> dict[str, Any]:
        messages = parse_messages(messages_json)
        with self._lock:
            existing = self.store.get_session(session_id)
            if existing is not None and workspace is not None and existing.workspace != workspace:
                raise ArgumentError(
                    f"session {session_id!r} is in workspace {existing.workspace!r}, not "
                    f"{workspace!r}: workspace only places a new session (leave it out to "
                    "append to this one, or use another session_id)"
                )
            owner = existing.metadata.get("user_id") if existing is not None else None
            if existing is not None and user_id is not None and owner != user_id:
                raise ArgumentError(
                    f"session {session_id!r} belongs to user {owner!r}, not {user_id!r}: "
                    "user_id only stamps a new session (leave it out to append to this one)"
                )
            added = self.store.append(
                session_id,
                messages,
                workspace=workspace or "default",
                metadata={"user_id": user_id} if existing is None and user_id else None,
                idempotency_key=idempotency_key,
            )
            info = self.store.get_session(session_id)
            self.learn(info.metadata if info else None, messages, added)
        return {
            "session_id": session_id,
            "workspace": info.workspace if info else workspace or "default",
            "received": len(messages),
            "appended": added,
            "already_stored": len(messages) - added,
            "message_count": info.message_count if info else added,
        }

    def learn(
        self, metadata: Mapping[str, Any] | None, messages: list[Message], added: int
    ) -> None:
        """With ``user_facts``: learn the facts the session's user (``metadata``'s
        ``user_id``) states in the ``added`` newest of the appended ``messages`` (by rules now,
        by the fact extractor in the background)."""
        user = (metadata or {}).get("user_id")
        if not self.user_facts or not added or not isinstance(user, str) or not user:
            return
        from session_migrator.sessions._facts import learn_facts

        new = messages[len(messages) - added :]
        learn_facts(self.store, user, new, self.fact_extractor, datetime.now(UTC), self._lock)

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
                    embeddings=self.embeddings,
                    summarizer=self.summarizer,
                    compactor=self.summarizer is not None,
                    user_facts=self.user_facts,
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
            return {
                **usage(self.store, session_id, window).to_dict(),
                "compaction": self.compaction(session_id),
            }

    def compaction(self, session_id: str) -> dict[str, Any]:
        """Where background compaction of ``session_id`` stands here: ``state`` (``off`` with no
        summarizer; ``idle`` before a fit of it; else its newest fitted view's: ``pending``,
        ``ready``, ``failed: ...``, ``waiting: another process is compacting``), summaries
        ``written`` ahead, and the last one's ``seconds``."""
        with self._lock:
            views = [f for key, f in self._fitters.items() if key[0] == session_id]
        if views:
            return views[-1].compaction
        state = "off" if self.summarizer is None else "idle"
        return {"state": state, "written": 0, "seconds": 0.0}

    def session_list(
        self, workspace: str | None = None, offset: int = 0, limit: int = SESSIONS_PAGE
    ) -> dict[str, Any]:
        if offset < 0:
            raise ArgumentError(f"offset must be 0 or more, got {offset}")
        if limit < 1:
            raise ArgumentError(f"limit must be at least 1, got {limit}")
        with self._lock:
            infos = self.store.list_sessions(workspace)
        shown = infos[offset : offset + limit]
        end = offset + len(shown)
        return {
            "workspace": workspace,
            "count": len(infos),
            "returned": len(shown),
            "next_offset": end if end < len(infos) else None,
            "sessions": [jsonable(asdict(info)) for info in shown],
        }

    def _require(self, session_id: str) -> None:
        if self.store.get_session(session_id) is None:
            raise SessionNotFoundError(
                session_id,
                "session_list lists the stored sessions (of every workspace without one); "
                "session_append creates a session.",
            )
