"""``FittedChatMessageHistory``: a store-backed chat history whose ``messages`` fit the model."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from datetime import timedelta
from types import FrameType
from typing import Any, Self

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

from langchain_session_migrator._callbacks import ModelWatcher
from langchain_session_migrator._context_tools import store_read_context_tool
from langchain_session_migrator._convert import message_to_core, storable
from langchain_session_migrator._convert_parts import with_cache_breakpoint
from langchain_session_migrator._fact_extractor import LangChainFactExtractor
from langchain_session_migrator._history_model import _ModelChoice
from langchain_session_migrator._history_state import _SessionState
from langchain_session_migrator._loading import CallInput, input_being_loaded
from langchain_session_migrator._placeholder_tools import store_placeholder_tools
from langchain_session_migrator._summarizer import as_summarizer, check_store
from session_migrator import (
    DEFAULT_SLACK,
    Compactor,
    Compressor,
    FactExtractor,
    Message,
    MigrationReport,
    ModelWindow,
    RecallScope,
    SessionFitter,
    Summarizer,
    uses_query,
)

__all__ = ["FittedChatMessageHistory"]


class FittedChatMessageHistory(_ModelChoice, BaseChatMessageHistory):
    """A chat history kept whole in a session store, read back fitted to the current model.

    Drop-in for ``InMemoryChatMessageHistory`` / ``SQLChatMessageHistory`` in
    ``RunnableWithMessageHistory``:

    - :attr:`messages` (and :meth:`aget_messages`) is the conversation fitted to the current
      model's input budget with ``strategy`` (``auto``, ``trim``, ``summarize``, ``recall``, or a
      core compressor): all of it, untouched, when it fits; otherwise the system messages, a
      summary or note on the cut part, recalled older turns and the newest turns, tool calls
      kept with their results. Room is left for what the chain adds around the history (see
      ``reserve_tokens``). Two reads with nothing new in between return equal lists of the same
      message objects and tokenize nothing; do not mutate them.
    - :attr:`full_messages` is the whole log, which compression never touches.
    - :meth:`add_messages` / :meth:`aadd_messages` append (a message without an id is stored
      under one of its own, and reads back as given, without one); ``messages=[...]`` at
      construction appends too; :meth:`clear` / :meth:`aclear` delete the session.
    - Two histories are equal when their full logs are (as ``InMemoryChatMessageHistory``
      compares).
    - :meth:`context_tools` is ``[read_context]``, a tool that reads back what a fit cut.
    - :meth:`close` (or ``with``) closes a store the history opened from a URL.

    The current model is, first found: the model given to the constructor or
    :meth:`set_model` (a name, a chat model whose ``profile`` gives ``max_input_tokens`` /
    ``max_output_tokens``, or a :class:`~session_migrator.ModelWindow`); the model selected by
    the call's configurable field (through :class:`FittedHistoryFactory`); the model a
    :class:`ModelWatcher` saw run for this session; the last model this session was fitted to
    (from the store's migration log). With none of them, :attr:`messages` is the whole log.
    A change of model re-fits on the next read (a smaller window compresses, a larger one gives
    back more, up to everything) and is logged in the store's migration log.

    Query-aware recall (``auto``, ``recall``) ranks the cut turns against the question being
    asked. ``RunnableWithMessageHistory`` reads the history before it adds the call's input, so
    a read made by its history-loading step uses the call's input (its last human message);
    any other read uses the latest user message in the history.

    ``store`` is a store URL (``"memory://"``, ``"sqlite:///path"``, ``"redis://..."``,
    ``"postgresql://..."``) or store object; ``None`` is the embedded SQLite default under
    ``SESSION_MIGRATOR_HOME``. ``summarizer`` is a core summarizer or any LangChain chat model
    (wrapped in :class:`LangChainSummarizer`). ``reserve_output`` overrides the output tokens
    held back. ``reserve_tokens`` is the room kept for the prompt around the history; by default
    it is this call's input (its human and tool messages) plus the prompt the watcher measured
    on the session's last run, or before any run 10% of the budget (at most 1,024 tokens) for
    it (see :meth:`reserved_tokens`). The history cannot see everything a chain adds: wrap the
    chat model in :class:`FitToModel` for a request that always fits. A trailing tool call whose
    results are the call's input is always kept, with them. ``slack``
    (default 35%) is the share of the room a cut leaves free so that the next turns fit without
    cutting again: the head of the prompt (system messages, summary) stays the same from call to
    call, which keeps a provider's prompt cache warm; ``0`` cuts afresh at every read.
    ``compactor`` (a :class:`~session_migrator.Compactor`, or ``True`` for the process's shared
    one) writes the summaries of the cut part in the background, so that no read waits for the
    summarizer (docs/cost.md). ``gap_note``: a note of the gap before the newest user message
    when it is 30 minutes or more ("The user returns after 9 days ..."; ``False``: none, a
    ``timedelta``: the threshold; see :func:`~session_migrator.migrate`). ``recall_scope``
    (``"user"``, by the ``user_id`` in ``metadata``; or ``"workspace"``) recalls from the user's
    other sessions too, and ``user_facts=True`` sends the facts the user stated in earlier
    sessions (see :class:`~session_migrator.SessionFitter`); ``fact_extractor`` (a chat model,
    or a :class:`LangChainFactExtractor`) also reads them in the background.

    ``BaseChatMessageHistory`` is deprecated in langchain-core 1.x (removal in 2.0), with
    LangGraph persistence as its successor
    (https://docs.langchain.com/oss/python/langchain/short-term-memory); for agents use
    :class:`FitToModelMiddleware`, which fits what the agent's state sends.

    >>> history = FittedChatMessageHistory("demo", model="gpt-4o-mini", store="memory://")
    >>> history.add_user_message("Hi, I'm Ada.")
    >>> history.add_ai_message("Hello Ada!")
    >>> [m.content for m in history.messages]
    ["Hi, I'm Ada.", 'Hello Ada!']
    >>> history.last_report.decision
    'fits'
    """

    session_id: str
    watcher: ModelWatcher | None
    reserve_tokens: int | None

    def __init__(
        self,
        session_id: str,
        *,
        model: str | ModelWindow | BaseChatModel | Runnable[Any, Any] | None = None,
        store: Any = None,
        strategy: str | Compressor = "auto",
        summarizer: Summarizer | BaseChatModel | Runnable[Any, Any] | None = None,
        reserve_output: int | None = None,
        reserve_tokens: int | None = None,
        watcher: ModelWatcher | None = None,
        workspace: str = "default",
        metadata: dict[str, Any] | None = None,
        slack: float = DEFAULT_SLACK,
        messages: Sequence[BaseMessage] | None = None,
        embeddings: Any = None,
        compactor: Compactor | bool | None = None,
        gap_note: bool | timedelta = True,
        recall_scope: RecallScope = "session",
        user_facts: bool = False,
        fact_extractor: FactExtractor | BaseChatModel | Runnable[Any, Any] | None = None,
    ) -> None:
        super().__init__()
        check_store(store)
        fitter = SessionFitter(
            session_id,
            store=store,
            strategy=strategy,
            summarizer=as_summarizer(summarizer),
            reserve_output=reserve_output,
            workspace=workspace,
            metadata=metadata,
            slack=slack,
            embeddings=embeddings,
            compactor=compactor,
            gap_note=gap_note,
            recall_scope=recall_scope,
            user_facts=user_facts,
            fact_extractor=(
                LangChainFactExtractor(fact_extractor)
                if isinstance(fact_extractor, Runnable)
                else fact_extractor
            ),
        )
        self._setup(session_id, _SessionState(fitter), watcher, reserve_tokens, None)
        self._owns_store = store is None or isinstance(store, str)
        if model is not None:
            self.set_model(model)
        if messages:
            self.add_messages(messages)

    @classmethod
    def _view(
        cls,
        session_id: str,
        state: _SessionState,
        *,
        watcher: ModelWatcher | None,
        reserve_tokens: int | None,
        configured: ModelWindow | Callable[[], ModelWindow | None] | None,
    ) -> FittedChatMessageHistory:
        """A history object over shared state (what the factory hands out for one call)."""
        history = cls.__new__(cls)
        BaseChatMessageHistory.__init__(history)
        history._setup(session_id, state, watcher, reserve_tokens, configured)
        history._owns_store = False
        return history

    def _setup(
        self,
        session_id: str,
        state: _SessionState,
        watcher: ModelWatcher | None,
        reserve_tokens: int | None,
        configured: ModelWindow | Callable[[], ModelWindow | None] | None,
    ) -> None:
        if reserve_tokens is not None and reserve_tokens < 0:
            raise ValueError(f"reserve_tokens must not be negative, got {reserve_tokens}")
        self.session_id = session_id
        self.watcher = watcher
        self.reserve_tokens = reserve_tokens
        self._state = state
        self._explicit: ModelWindow | None = None
        # a callable is resolved at the first read (a name lookup may read files, and an async
        # chain builds the history on its event loop but reads it in a worker thread)
        self._configured = configured
        self._observed: ModelWindow | None = None
        self._overhead: tuple[Message, ...] | None = None
        self._take_observation()

    # -- reading -----------------------------------------------------------------------------

    @property
    def messages(self) -> list[BaseMessage]:
        """The conversation fitted to :attr:`model` (a new list each time)."""
        return self._read(self._asked(sys._getframe(1)))

    @messages.setter
    def messages(self, value: Sequence[BaseMessage]) -> None:
        """Replace the whole log with ``value`` (converted first: a message that cannot be stored
        raises before anything is deleted)."""
        core = self._storable(value)
        self.clear()
        self._append(core)

    async def aget_messages(self) -> list[BaseMessage]:
        """:attr:`messages`, with the store and any summarizer called in a worker thread."""
        return await asyncio.to_thread(self._read, self._asked(sys._getframe(1)))

    @property
    def full_messages(self) -> list[BaseMessage]:
        """The whole log, oldest first, as stored (never compressed)."""
        state = self._state
        log = state.fitter.refresh()
        with state.lock:
            key = (len(log), log[-1].id if log else None)
            if state.full is None or state.full[:2] != key:
                state.full = (key[0], key[1], state.to_langchain(log))
            return list(state.full[2])

    async def aget_full_messages(self) -> list[BaseMessage]:
        """:attr:`full_messages` in a worker thread."""
        return await asyncio.to_thread(lambda: self.full_messages)

    @property
    def last_report(self) -> MigrationReport | None:
        """The report of the session's newest fit (decision, tokens, what was cut, fallbacks)."""
        last = self._state.last
        return last.report if last is not None else None

    @property
    def fitter(self) -> SessionFitter:
        """The session's fitter (its strategy, summarizer and output reserve)."""
        return self._state.fitter

    def _guard_settings(self) -> dict[str, Any]:
        """What :class:`FitToModel` takes from this history."""
        fitter, model = self._state.fitter, self.model
        return {
            "strategy": fitter.strategy,
            "summarizer": fitter.summarizer,
            "reserve_output": fitter.reserve_output,
            "embeddings": fitter.embeddings,
            "registry": {model.name: model} if model is not None else {},
        }

    @property
    def store(self) -> Any:
        """The session store (its ``migrations(session_id)`` lists every model change)."""
        return self._state.fitter.store

    def _read(self, asked: CallInput | None = None) -> list[BaseMessage]:
        window = self.model
        state = self._state
        if window is None:
            messages = self.full_messages
            log = state.fitter.refresh()
            key = (len(log), log[-1].id if log else None)
            if self.watcher is not None and state.tracked != key:
                self.watcher.track(self.session_id, log, messages)
                state.tracked = key
            return messages
        log = state.fitter.refresh()
        if not log:
            # nothing to fit; and SessionFitter.fit would try to log a migration for a session
            # the store does not have yet (it raises SessionNotFoundError)
            return []
        asked = self._question(log, asked)
        question = asked.question if asked is not None else None
        result = state.fitter.fit(
            window,
            query=question if uses_query(state.fitter.strategy) else None,
            extra_reserved=self.reserved_tokens(window, asked),
            pending_tool_calls="keep" if asked is not None and asked.answers else "drop",
        )
        with state.lock:
            state.last = result
            if state.view is None or state.view[0] is not result:
                converted = state.to_langchain(result.messages)
                if window.provider == "anthropic":
                    converted = with_cache_breakpoint(converted, result.report.stable_through)
                state.view = (result, converted)
                state.logged_target = window.name
                state.logged_loaded = True
                state.tracked = None
                if self.watcher is not None:
                    self.watcher.track(self.session_id, result.messages, state.view[1])
            return list(state.view[1])

    def _asked(self, caller: FrameType) -> CallInput | None:
        """The input of the ``RunnableWithMessageHistory`` call whose history-loading step is
        ``caller`` (or its caller): its question for recall, its size for the room beside the
        history, and the tool results that answer a trailing call of the log.
        """
        return input_being_loaded(caller)

    def _question(self, log: Sequence[Message], asked: CallInput | None) -> CallInput | None:
        """The input the read fits for: ``asked`` (the input of the call loading the history,
        not in the log yet), else the one the same log was last fitted for
        (``RunnableWithMessageHistory`` reads the history again after the model ran, and both
        reads must give the same messages), else ``None``: recall ranks against the latest
        user message in the log.
        """
        state = self._state
        key = (len(log), log[-1].id)
        with state.lock:
            if asked is not None:
                state.question = (key, asked)
            elif state.question is not None and state.question[0] == key:
                asked = state.question[1]
        return asked

    # -- writing -----------------------------------------------------------------------------

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages`` to the store (idempotent by id; a message without an id is stored
        under one of its own and reads back without one, as it was given)."""
        self._append(self._storable(messages))

    def _append(self, core: list[Message]) -> None:
        self._state.fitter.append(core)
        self._take_observation()

    @staticmethod
    def _storable(messages: Sequence[BaseMessage]) -> list[Message]:
        # a message without an id gets a store id, remembered as not the user's: it reads back
        # with id=None, equal to what was added (as LangChain's own histories give it back)
        return [storable(message_to_core(m)) for m in messages]

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """:meth:`add_messages` in a worker thread."""
        await asyncio.to_thread(self.add_messages, messages)

    def clear(self) -> None:
        """Delete the session (messages, summaries, counts, migration log) from the store."""
        state = self._state
        with state.lock:
            state.fitter.clear()
            state.reset()
            state.logged_target = None
            state.logged_loaded = False
        if self.watcher is not None:
            self.watcher.track(self.session_id, [])

    async def aclear(self) -> None:
        """:meth:`clear` in a worker thread."""
        await asyncio.to_thread(self.clear)

    def context_tools(self, *, placeholders: bool = True) -> list[BaseTool]:
        """The context tools, for the model of a chain reading this history: ``read_context``
        (an old tool output the fit shrank leaves a marker naming its id,
        ``read_context(id="...")``, and the tool reads a page of the original back from the
        store, an offloaded output too), then ``compress_context``, ``list_placeholders`` and
        ``restore_context`` (the model compresses a range of its own context into a summary
        placeholder and restores it; the fits honour them). ``placeholders=False``: only
        ``read_context``."""
        tools = [store_read_context_tool(self.store, self.session_id)]
        if placeholders:
            tools += store_placeholder_tools(self.store, self.session_id)
        return tools

    def close(self) -> None:
        """Close the store if this history opened it from a URL (a given store is left open)."""
        if self._owns_store and self._state.fitter.store_is_open:
            self.store.close()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FittedChatMessageHistory):
            return NotImplemented
        return self is other or self.full_messages == other.full_messages

    __hash__ = None  # type: ignore[assignment]  # (equal by content, as pydantic models are)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        model = self.model
        return (
            f"FittedChatMessageHistory({self.session_id!r}, "
            f"model={model.name if model else None!r}, store={self.store!r})"
        )
