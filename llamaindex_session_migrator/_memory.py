"""``SessionMigratorMemory``: a ``ChatMemoryBuffer`` backed by a session store that fits the
history to whichever model is about to read it.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Sequence
from typing import Any, NamedTuple, cast

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import PrivateAttr, model_validator
from llama_index.core.llms import LLM
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.memory.types import DEFAULT_CHAT_STORE_KEY

from llamaindex_session_migrator._convert import from_chat_message, to_chat_message
from llamaindex_session_migrator._instrumentation import listen, publish, unlisten
from llamaindex_session_migrator._models import DEFAULT_WINDOW, ModelLike
from llamaindex_session_migrator._reconcile import plan_set
from llamaindex_session_migrator._summarizer import LlamaIndexSummarizer
from llamaindex_session_migrator._tracking import ModelSource, ModelTracker
from session_migrator import Message, ModelWindow
from session_migrator._fit import check_slack
from session_migrator._fitter import DEFAULT_SLACK, SessionFitter
from session_migrator._migrate import MigrationReport, MigrationResult, default_counter, migrate
from session_migrator._strategies import Compressor, check_strategy, uses_query
from session_migrator._summarizers import Summarizer
from session_migrator._tokens import TOKENS_PER_MESSAGE
from session_migrator.store import BaseSessionStore, open_store

__all__ = ["ModelSource", "SessionMigratorMemory"]

#: Unless ``reserve_input`` is given, this share of the window (at most
#: :data:`DEFAULT_RESERVE_CAP` tokens) is kept free for what the engine sends besides the history.
DEFAULT_RESERVE_SHARE = 0.25
DEFAULT_RESERVE_CAP = 4096

_NO_CHAT_STORE = (
    "SessionMigratorMemory keeps the conversation in a session store: pass "
    "store='sqlite:///path.db' (or 'memory://', 'redis://...', 'postgresql://...') instead of "
    "chat_store"
)
_NOT_PORTABLE = (
    "a SessionMigratorMemory holds a live session store and cannot be pickled, copied or "
    "serialized: the conversation is in the store already; in another process open it with "
    "SessionMigratorMemory.from_defaults(chat_store_key=..., store=<the same URL>)"
)

#: ``token_limit`` when none is given: the model's budget alone decides.
_NO_CAP = 2**31 - 1


_set = object.__setattr__


def _private(model: Any) -> dict[str, Any]:
    """A pydantic model's private attributes, for the read path: ``self._x`` goes through
    pydantic's ``__getattr__`` (microseconds per read), which a warm ``get`` would pay a dozen
    times, more than the rest of the read. Writing here is what pydantic's setter does.
    """
    return cast(dict[str, Any], model.__pydantic_private__)


def _shallow(model: Any) -> Any:
    """``model.model_copy()`` without its per-call overhead (pydantic v2's ``__copy__``: a new
    instance with copies of ``__dict__``, the fields set, the extra and the private values).
    """
    cls = model.__class__
    new = cls.__new__(cls)
    _set(new, "__dict__", model.__dict__.copy())
    _set(new, "__pydantic_fields_set__", model.__pydantic_fields_set__.copy())
    extra = model.__pydantic_extra__
    _set(new, "__pydantic_extra__", None if extra is None else extra.copy())
    private = model.__pydantic_private__
    _set(new, "__pydantic_private__", None if private is None else private.copy())
    return new


def _copy(message: ChatMessage) -> ChatMessage:
    """A copy callers may edit the way LlamaIndex does: a new message with its own ``blocks``
    list, new block objects and its own ``additional_kwargs`` (their values are shared).
    """
    new: ChatMessage = _shallow(message)
    fields = new.__dict__
    fields["blocks"] = [_shallow(b) for b in message.blocks]
    fields["additional_kwargs"] = dict(message.additional_kwargs)
    return new


def _edited_positions(messages: Sequence[ChatMessage]) -> tuple[int, ...]:
    """Where in a history LlamaIndex edits messages in place: the last message (agents with a
    state rewrite its text: ``BaseWorkflowAgent.setup_agent``, ``AgentWorkflow.setup_agent``;
    output parsers when the first is not a system message), the first when it is a system
    message (output parsers; ``Memory`` prepends its blocks) and the latest user message
    (``Memory`` prepends its blocks).
    """
    if not messages:
        return ()
    last = len(messages) - 1
    at = {last}
    if messages[0].role == MessageRole.SYSTEM:
        at.add(0)
    for i in range(last, -1, -1):
        if messages[i].role == MessageRole.USER:
            at.add(i)
            break
    return tuple(sorted(at))


class _View(NamedTuple):
    """One fit as it is handed out, built once per fit and reused by every read of it."""

    result: MigrationResult
    #: one ``ChatMessage`` per kept message, shared by every read (the conversion cache's)
    templates: list[ChatMessage]
    #: the positions handed out as fresh copies on every read (see :func:`_edited_positions`)
    fresh: tuple[int, ...]
    #: ``id()`` of every object the last read handed out (the templates not at ``fresh``
    #: positions and that read's fresh copies): the instrumentation listener's test for "our
    #: history". Updated in place by each read of this view (under the memory's lock).
    ids: set[int]


class _PromptTokenizer:
    """``tokenizer_fn`` for engines that measure their prefix messages (``SimpleChatEngine``):
    counts with the current model's counter, plus one message's chat-format overhead, so the
    prefix and the fitted history together stay within the budget.
    """

    def __init__(self, memory: SessionMigratorMemory) -> None:
        self._memory = weakref.ref(memory)

    def __call__(self, text: str) -> list[int]:
        memory = self._memory()
        window = memory._tracker.resolve()[0] if memory is not None else DEFAULT_WINDOW
        counter = default_counter(window)
        return [0] * (counter.count_text(text) + TOKENS_PER_MESSAGE + 1) if text else []


def _unset_tokenizer(text: str) -> list[int]:
    """The placeholder ``tokenizer_fn`` between validation and ``model_post_init``."""
    raise RuntimeError("SessionMigratorMemory is not initialised yet")


class _Listener:
    """Tells one memory (held weakly) about the chat calls that carried its history."""

    def __init__(self, memory: SessionMigratorMemory) -> None:
        self._memory = weakref.ref(memory)

    @property
    def memory(self) -> SessionMigratorMemory | None:
        """The memory (``None`` once it is gone): the guard reads its store and session id."""
        return self._memory()

    def on_chat_start(self, messages: list[Any], model_dict: dict[str, Any], exact: bool) -> bool:
        memory = self._memory()
        return memory._observe(messages, model_dict, exact) if memory is not None else False


class SessionMigratorMemory(ChatMemoryBuffer):
    """A drop-in ``ChatMemoryBuffer`` whose log lives in a session store and whose ``get``
    returns the conversation fitted to the current model.

    Contract:

    - ``chat_store_key`` is the session id; ``put``/``put_messages``/``set``/``reset`` (and their
      ``a``-forms) write the store at once; ``get_all()`` is the full log, never compressed;
    - ``get(input, initial_token_count)`` fits the log to the model's input budget (its window
      less the reserved output, less ``initial_token_count``) with ``strategy`` (``trim``,
      ``summarize``, ``recall``, ``auto``): a log that fits is returned whole; else the system
      messages, a summary or note of what was cut, (for recall) the older turns relevant to
      ``input`` or the latest user message, and the newest turns. Tool calls stay paired;
      ``token_limit``, when given, caps the history at ``token_limit - initial_token_count``
      tokens, as ``ChatMemoryBuffer`` does (or lower, where the model's budget is);
    - the model is, first hit wins: ``set_model(...)``; else the newest of (a) the LLM given to
      ``from_defaults(llm=...)``, or ``Settings.llm`` when none was given, whose ``metadata`` is
      re-read on every ``get``, and (b) the model the last chat call carrying this history
      really used (seen through LlamaIndex instrumentation); else LlamaIndex's default window;
    - a changed model re-fits on the next ``get`` (smaller: compress; larger: more, up to all)
      and the change is logged in the store's migration log;
    - a second ``get`` with nothing new costs no tokenization (counts are cached and persisted)
      and no per-message work: it returns a new list holding the fit's shared ``ChatMessage``
      objects, except for the messages LlamaIndex edits in place, which are new objects on
      every call (with their own ``blocks`` list, block objects and ``additional_kwargs``): the
      last message (agents with a state rewrite its text), the latest user message, and the
      first message when it is a system message (output parsers, ``Memory``). Treat the other
      messages as read-only: an edit to one never reaches the store, but shows in later reads
      from this memory object and is not seen as a change by ``set``; copy a message
      (``model_copy(deep=True)``) before editing it, or edit what ``get_all()`` returns (always
      new objects) and hand it to ``set``.

    >>> from llama_index.core.llms import ChatMessage, MockLLM
    >>> memory = SessionMigratorMemory.from_defaults(
    ...     llm=MockLLM(), chat_store_key="doc-demo", store="memory://", strategy="trim")
    >>> memory.put(ChatMessage(role="user", content="Hello"))
    >>> [m.content for m in memory.get()]
    ['Hello']
    >>> memory.model_source, memory.model_window.context_window
    ('llm', 3900)
    """

    token_limit: int = _NO_CAP

    _store_spec: BaseSessionStore | str | None = PrivateAttr(default=None)
    _store: BaseSessionStore | None = PrivateAttr(default=None)
    _owns_store: bool = PrivateAttr(default=False)
    _fitter: SessionFitter | None = PrivateAttr(default=None)
    _strategy: str | Compressor = PrivateAttr(default="auto")
    _summarizer: Summarizer | None = PrivateAttr(default=None)
    _reserve_output: int | None = PrivateAttr(default=None)
    _reserve_input: int | float | None = PrivateAttr(default=None)
    _workspace: str = PrivateAttr(default="default")
    _slack: float = PrivateAttr(default=DEFAULT_SLACK)
    _lock: Any = PrivateAttr(default_factory=threading.RLock)
    _tracker: ModelTracker = PrivateAttr(default_factory=ModelTracker)
    _templates: dict[str, tuple[Message, ChatMessage]] = PrivateAttr(default_factory=dict)
    _view: _View | None = PrivateAttr(default=None)
    _handed: tuple[ChatMessage, ...] = PrivateAttr(default=())  # the last read's fresh copies
    _window: ModelWindow | None = PrivateAttr(default=None)
    _source: ModelSource | None = PrivateAttr(default=None)
    _listener: _Listener | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "SessionMigratorMemory"

    # -- copies and serialization: a live store cannot travel ----------------------------------

    def __getstate__(self) -> dict[Any, Any]:
        raise TypeError(_NOT_PORTABLE)

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> SessionMigratorMemory:
        raise TypeError(_NOT_PORTABLE)

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        raise TypeError(_NOT_PORTABLE)

    @model_validator(mode="before")
    @classmethod
    def validate_memory(cls, values: Any) -> Any:
        """Unlike the parent, ``token_limit`` is optional (the model's budget decides); a
        ``chat_store`` is refused (the session store replaces it: its messages would be lost).
        """
        if isinstance(values, dict):
            if values.get("chat_store") is not None:
                raise ValueError(_NO_CHAT_STORE)
            values.setdefault("token_limit", _NO_CAP)
            if values["token_limit"] < 1:
                raise ValueError("token_limit must be greater than 0")
            if values.get("tokenizer_fn") is None:
                # set to the prompt tokenizer once the memory exists (model_post_init): the
                # parent's default would load LlamaIndex's global tiktoken encoding for nothing
                values["tokenizer_fn"] = _unset_tokenizer
        return values

    @classmethod
    def from_defaults(
        cls,
        chat_history: list[ChatMessage] | None = None,
        llm: LLM | None = None,
        chat_store: Any = None,
        chat_store_key: str = DEFAULT_CHAT_STORE_KEY,
        token_limit: int | None = None,
        tokenizer_fn: Any = None,
        *,
        store: BaseSessionStore | str | None = None,
        strategy: str | Compressor = "auto",
        summarizer: Summarizer | LLM | None = None,
        model: ModelLike | None = None,
        reserve_output: int | None = None,
        reserve_input: int | float | None = None,
        workspace: str = "default",
        slack: float = DEFAULT_SLACK,
        **kwargs: Any,
    ) -> SessionMigratorMemory:
        """A memory for session ``chat_store_key`` in ``store``.

        ``store`` is a store URL (``"memory://"``, ``"sqlite:///path.db"``, ``"redis://..."``,
        ``"postgresql://..."``) or a store object; ``None`` opens the embedded SQLite default
        (``SESSION_MIGRATOR_STORE`` or ``$SESSION_MIGRATOR_HOME/sessions.db``). ``llm`` is kept
        and read on every ``get``; ``model`` pins a model (as :meth:`set_model`).
        ``summarizer`` is a core summarizer or a LlamaIndex LLM to write summaries with.
        ``reserve_output`` overrides the output reserved (default: ``num_output`` capped at a
        quarter of the window). ``reserve_input`` keeps input tokens free for what the engine
        sends besides the history (retrieved context, a system prompt, tool schemas, an
        agent's scratchpad): a number of tokens, or a share of the window below 1; by default
        a quarter of the window, at most 4,096 tokens (on a 4,096 window, 1,024: what the
        context chat engines need beside the history). ``ContextChatEngine`` and
        ``CondensePlusContextChatEngine`` need the retrieved context plus about 700 tokens (their
        response synthesizer keeps 500 tokens of padding besides its templates).
        ``token_limit`` caps the history as ``ChatMemoryBuffer``'s does: at most
        ``token_limit`` less ``initial_token_count`` tokens (the model's budget, less its
        reserves, may be lower still). ``slack``
        (default 5%) is the share of the room a cut leaves free so that the next turns fit
        without cutting again: the head of the history (system messages, summary) stays the same
        from call to call, which keeps a provider's prompt cache warm; ``0`` cuts afresh at every
        ``get``. A non-empty
        ``chat_history`` is written with :meth:`set`. ``chat_store`` (a LlamaIndex chat store)
        is not supported: the session store replaces it.
        """
        if kwargs:
            raise ValueError(f"Unexpected kwargs: {kwargs}")
        check_strategy(strategy)  # (now, not at the first get)
        if chat_store is not None:
            raise ValueError(_NO_CHAT_STORE)
        memory = cls(
            token_limit=token_limit if token_limit is not None else _NO_CAP,
            tokenizer_fn=tokenizer_fn,
            chat_store_key=chat_store_key,
        )
        memory._store_spec = store
        memory._strategy = strategy
        memory._summarizer = (
            LlamaIndexSummarizer(summarizer) if isinstance(summarizer, LLM) else summarizer
        )
        memory._reserve_output = reserve_output
        if reserve_input is not None and (
            reserve_input < 0 or (isinstance(reserve_input, float) and reserve_input >= 1)
        ):
            raise ValueError(
                "reserve_input is a number of tokens, or a share of the window below 1"
            )
        memory._reserve_input = reserve_input
        memory._workspace = workspace
        memory._slack = check_slack(slack)
        memory._tracker.llm = llm
        if model is not None:
            memory.set_model(model)
        if chat_history:
            memory.set(chat_history)
        return memory

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        if self.tokenizer_fn is _unset_tokenizer:
            self.tokenizer_fn = _PromptTokenizer(self)
        self._listener = _Listener(self)
        listen(self._listener)

    # -- the model -------------------------------------------------------------------------

    def set_model(self, model: ModelLike | None) -> None:
        """Pin the model (a name, a LlamaIndex LLM read on every ``get``, or a window); it wins
        over every other source. ``None`` unpins. An unknown name raises
        :class:`~session_migrator.UnknownModelError` here, not at the next ``get``.
        """
        self._tracker.set_explicit(model)

    @property
    def model_window(self) -> ModelWindow | None:
        """The window the last ``get`` fitted to (``None`` before the first)."""
        return self._window

    @property
    def model_source(self) -> ModelSource | None:
        """Where that window came from: explicit, observed, llm, settings or default."""
        return self._source

    @property
    def last_report(self) -> MigrationReport | None:
        """The report of the last ``get``: decision, tokens before and after, what was cut."""
        view = self._view
        return view.result.report if view is not None else None

    @property
    def session_id(self) -> str:
        return self.chat_store_key

    @property
    def store(self) -> BaseSessionStore:
        """The session store (opened on first use)."""
        return self._get_fitter().store

    def _observe(self, messages: list[Any], model_dict: dict[str, Any], exact: bool) -> bool:
        """Record the model of a chat call if it carried what this memory handed out: with
        ``exact``, one of the objects of the last read (the fit's shared messages, the read's
        fresh copies); else (engines that format the history into new objects) a message equal
        to the last one handed out.
        """
        private = _private(self)
        view: _View | None = private["_view"]
        handed: tuple[ChatMessage, ...] = private["_handed"]
        if view is None or not handed:
            return False
        if exact:
            ids = view.ids
            carried = any(id(m) in ids for m in messages)
        else:
            last = handed[-1]
            carried = any(isinstance(m, ChatMessage) and m == last for m in messages)
        if carried:
            tracker: ModelTracker = private["_tracker"]
            tracker.observe(model_dict)
        return carried

    # -- the fitted view -------------------------------------------------------------------

    def _get_fitter(self) -> SessionFitter:
        private = _private(self)
        with private["_lock"]:
            fitter: SessionFitter | None = private["_fitter"]
            if fitter is not None and fitter.session_id == self.chat_store_key:
                return fitter
            if self._store is None:
                spec = self._store_spec
                if isinstance(spec, BaseSessionStore):
                    self._store = spec
                else:
                    self._store = open_store(spec)
                    self._owns_store = True
            fitter = SessionFitter(
                self.chat_store_key,
                store=self._store,
                strategy=self._strategy,
                summarizer=self._summarizer,
                reserve_output=self._reserve_output,
                workspace=self._workspace,
                slack=self._slack,
            )
            self._fitter = fitter
            self._templates = {}
            self._view = None
            return fitter

    def _template(self, message: Message) -> ChatMessage:
        """The cached conversion of ``message`` (shared: handed out by ``get``)."""
        cache: dict[str, tuple[Message, ChatMessage]] = _private(self)["_templates"]
        hit = cache.get(message.id)
        if hit is not None and hit[0] is message:
            return hit[1]
        converted = to_chat_message(message)
        cache[message.id] = (message, converted)
        return converted

    def _fit(self, input: str | None, initial_token_count: int) -> MigrationResult:
        private = _private(self)
        with private["_lock"]:
            tracker: ModelTracker = private["_tracker"]
            window, source = tracker.resolve()
            # token_limit caps the history as ChatMemoryBuffer's does: at most token_limit less
            # initial_token_count (the model's own budget, with its reserves, may be smaller)
            cap = (
                self.token_limit - max(0, initial_token_count)
                if self.token_limit != _NO_CAP
                else None
            )
            strategy: str | Compressor = private["_strategy"]
            query = input if input and uses_query(strategy) else None
            reserve: int | float | None = private["_reserve_input"]
            if reserve is None:
                reserve = min(
                    int(window.context_window * DEFAULT_RESERVE_SHARE), DEFAULT_RESERVE_CAP
                )
            elif isinstance(reserve, float):
                reserve = int(window.context_window * reserve)
            extra = max(0, initial_token_count) + reserve
            fitter = self._get_fitter()
            if fitter.refresh():
                result = fitter.fit(window, query=query, extra_reserved=extra, budget_cap=cap)
            else:
                # nothing stored yet: there is no session to log a migration against
                result = migrate(
                    [],
                    window,
                    strategy=strategy,
                    reserve_output=self._reserve_output,
                    extra_reserved=extra,
                )
            private["_window"], private["_source"] = window, source
            return result

    def _hand_out(self, result: MigrationResult) -> list[ChatMessage]:
        """A new list of the fit's shared messages, with fresh copies where LlamaIndex edits
        in place: a warm read is a list copy and at most three message copies.
        """
        private = _private(self)
        with private["_lock"]:
            view: _View | None = private["_view"]
            stale: tuple[ChatMessage, ...] = ()  # the copies of the view's previous read
            if view is None or view.result is not result:
                templates = [self._template(m) for m in result.messages]
                fresh = _edited_positions(templates)
                shared = {id(t) for i, t in enumerate(templates) if i not in fresh}
                view = _View(result, templates, fresh, shared)
                private["_view"] = view
            else:
                stale = private["_handed"]
            out = view.templates.copy()
            for i in view.fresh:
                out[i] = _copy(out[i])
            handed = tuple(out[i] for i in view.fresh)
            # the new copies are added before the stale ones go (a listener always finds them);
            # both are alive here, so no id of one can be an id of the other
            view.ids.update(map(id, handed))
            view.ids.difference_update(map(id, stale))
            private["_handed"] = handed
            listener = private["_listener"]
            if listener is not None:  # (the guard and the model watcher find us through it)
                publish(listener, view.templates, view.result.messages, view.fresh, out)
            return out

    def get(
        self,
        input: str | None = None,
        initial_token_count: int = 0,
        **kwargs: Any,
    ) -> list[ChatMessage]:
        """The conversation fitted to the current model (see the class docstring)."""
        return self._hand_out(self._fit(input, initial_token_count))

    async def aget(
        self,
        input: str | None = None,
        initial_token_count: int = 0,
        **kwargs: Any,
    ) -> list[ChatMessage]:
        """:meth:`get` in a worker thread."""
        return await asyncio.to_thread(self.get, input, initial_token_count)

    def get_all(self) -> list[ChatMessage]:
        """The full log, oldest first, never compressed: new objects, free to edit."""
        with self._lock:
            return [_copy(self._template(m)) for m in self._get_fitter().messages]

    async def aget_all(self) -> list[ChatMessage]:
        """:meth:`get_all` in a worker thread."""
        return await asyncio.to_thread(self.get_all)

    # -- writing ---------------------------------------------------------------------------

    def put(self, message: ChatMessage) -> None:
        """Append one message to the session (written at once)."""
        self.put_messages([message])

    async def aput(self, message: ChatMessage) -> None:
        """:meth:`put` in a worker thread."""
        await asyncio.to_thread(self.put, message)

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Append messages in one atomic store write, in order."""
        converted = [from_chat_message(m) for m in messages]
        self._get_fitter().append(converted)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """:meth:`put_messages` in a worker thread."""
        await asyncio.to_thread(self.put_messages, messages)

    def set(self, messages: list[ChatMessage]) -> None:
        """Make the log ``messages``, keeping the stored record (id, other frameworks' fields)
        of every message that is unchanged.

        Giving back the log, or a fitted view of it (with this library's summary or note), with
        new messages at the end appends only those; a log that keeps some stored messages in
        order and adds new ones after them deletes the others; anything else rewrites the
        session.
        """
        with self._lock:
            fitter = self._get_fitter()
            markers = [t for (m, t) in self._templates.values() if m.marker is not None]
            plan = plan_set(fitter.messages, messages, self._template, markers)
            if plan.action == "append":
                fitter.append(plan.messages)
                return
            if plan.action == "delete_and_append":
                fitter.store.delete_messages(self.chat_store_key, plan.removed_ids)
            else:
                fitter.clear()
            self._fitter = None  # its cached log is stale
            self._get_fitter().append(plan.messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """:meth:`set` in a worker thread."""
        await asyncio.to_thread(self.set, messages)

    def reset(self) -> None:
        """Delete the session from the store (its log, summaries, counts and migration log)."""
        with self._lock:
            self._get_fitter().clear()
            self._fitter = None  # a new fitter: the old one remembers the deleted migration log
            self._view = None
            self._handed = ()
            if self._listener is not None:
                unlisten(self._listener)

    async def areset(self) -> None:
        """:meth:`reset` in a worker thread."""
        await asyncio.to_thread(self.reset)

    def close(self) -> None:
        """Close the store if this memory opened it (a store object given in is left open)."""
        with self._lock:
            if self._listener is not None:
                unlisten(self._listener)  # (no more calls are matched against this memory)
            if self._store is not None and self._owns_store:
                self._store.close()
                self._store = None
                self._fitter = None
                self._owns_store = False
