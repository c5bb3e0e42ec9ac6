"""``SessionMigratorMemory``: a ``ChatMemoryBuffer`` backed by a session store that fits the
history to whichever model is about to read it.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr, model_validator
from llama_index.core.llms import LLM
from llama_index.core.memory import ChatMemoryBuffer

from llamaindex_session_migrator._guard import FitToModelLLM
from llamaindex_session_migrator._handout import HandOut
from llamaindex_session_migrator._instrumentation import listen
from llamaindex_session_migrator._memory_hooks import (
    MemoryListener,
    PromptTokenizer,
    unset_tokenizer,
)
from llamaindex_session_migrator._memory_model import _MemoryModel
from llamaindex_session_migrator._memory_options import (
    FIT_OPTIONS,
    FitOptions,
    check_llm,
    new_session_id,
    open_memory_store,
    refuse_unknown,
)
from llamaindex_session_migrator._memory_reference import is_reference, reference, restore
from llamaindex_session_migrator._memory_writes import _MemoryWrites
from llamaindex_session_migrator._models import ModelLike
from llamaindex_session_migrator._token_limit import fit_within
from llamaindex_session_migrator._tracking import ModelSource, ModelTracker
from session_migrator import (
    DEFAULT_SLACK,
    Compactor,
    Compressor,
    MigrationResult,
    ModelWindow,
    SessionFitter,
    Summarizer,
    migrate,
    uses_query,
)
from session_migrator.store import BaseSessionStore

__all__ = ["ModelSource", "SessionMigratorMemory"]

_NO_CHAT_STORE = (
    "SessionMigratorMemory keeps the conversation in a session store: pass "
    "store='sqlite:///path.db' (or 'memory://', 'redis://...', 'postgresql://...') instead of "
    "chat_store"
)
_NOT_COPYABLE = (
    "a SessionMigratorMemory holds a live session store and cannot be deep-copied: a copy "
    "would share its session; make another memory with its own chat_store_key, or serialize "
    "it (to_dict, pickle) to refer to the same session"
)

#: ``token_limit`` when none is given: the model's budget alone decides.
_NO_CAP = 2**31 - 1

#: The pydantic fields the constructor takes (``chat_store`` only to refuse it clearly).
_FIELDS = ("chat_store", "chat_store_key", "token_limit", "tokenizer_fn")


class SessionMigratorMemory(_MemoryModel, _MemoryWrites, ChatMemoryBuffer):
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
    chat_store_key: str = Field(default_factory=new_session_id)

    _store_spec: BaseSessionStore | str | None = PrivateAttr(default=None)
    _store: BaseSessionStore | None = PrivateAttr(default=None)
    _owns_store: bool = PrivateAttr(default=False)
    _fitter: SessionFitter | None = PrivateAttr(default=None)
    _options: FitOptions = PrivateAttr(default_factory=FitOptions)
    _lock: Any = PrivateAttr(default_factory=threading.RLock)
    _tracker: ModelTracker = PrivateAttr(default_factory=ModelTracker)
    _handout: HandOut = PrivateAttr(default_factory=HandOut)
    _window: ModelWindow | None = PrivateAttr(default=None)
    _source: ModelSource | None = PrivateAttr(default=None)
    _listener: MemoryListener[SessionMigratorMemory] | None = PrivateAttr(default=None)
    _compactor: Compactor | bool | None = PrivateAttr(default=None)

    def __init__(
        self,
        *,
        store: BaseSessionStore | str | None = None,
        strategy: str | Compressor = "auto",
        summarizer: Summarizer | LLM | None = None,
        llm: LLM | None = None,
        model: ModelLike | None = None,
        reserve_output: int | None = None,
        reserve_input: int | float | None = None,
        workspace: str = "default",
        slack: float = DEFAULT_SLACK,
        chat_history: list[ChatMessage] | None = None,
        **data: Any,
    ) -> None:
        """See :meth:`from_defaults`: every argument it takes is taken here too."""
        refuse_unknown(
            type(self).__name__, data, (*_FIELDS, *FIT_OPTIONS, "chat_history", "compactor")
        )
        compactor = data.pop("compactor", None)
        if compactor is not None and not isinstance(compactor, bool | Compactor):
            raise TypeError(
                "compactor must be a Compactor, True (the process's shared one) or None, got "
                f"{type(compactor).__name__}"
            )
        options = FitOptions.checked(
            strategy=strategy,
            summarizer=summarizer,
            reserve_output=reserve_output,
            reserve_input=reserve_input,
            workspace=workspace,
            slack=slack,
            embeddings=data.pop("embeddings", None),
            gap_note=data.pop("gap_note", True),
            recall_scope=data.pop("recall_scope", "session"),
            user_facts=data.pop("user_facts", False),
            metadata=data.pop("metadata", None),
            fact_extractor=data.pop("fact_extractor", None),
        )
        if model is None:
            check_llm(llm)
        super().__init__(**data)
        self._options = options
        self._compactor = compactor
        self._store_spec = store
        self._store, self._owns_store = open_memory_store(store)
        self._tracker.llm = llm
        if model is not None:
            self.set_model(model)
        if chat_history:
            self.set(chat_history)

    @classmethod
    def class_name(cls) -> str:
        return "SessionMigratorMemory"

    # -- copies and serialization: a reference to the store and session -----------------------

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> SessionMigratorMemory:
        raise TypeError(_NOT_COPYABLE)

    def __reduce__(self) -> tuple[Any, ...]:
        return (restore, (type(self), reference(self)))

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """A reference to the store and session (see :mod:`._memory_reference`): what a
        workflow ``Context`` holding the memory serializes; :meth:`from_dict` reopens it."""
        return reference(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> SessionMigratorMemory:
        """The memory a :meth:`to_dict` reference names (a ``ChatMemoryBuffer`` dump with its
        chat store is refused: its messages would be lost)."""
        if is_reference(data):
            return restore(cls, data)
        if "chat_store" in data or "chat_history" in data:
            raise ValueError(_NO_CHAT_STORE)
        return cls(**{k: v for k, v in data.items() if k != "class_name"})

    def to_string(self) -> str:
        """:meth:`to_dict` as JSON."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_string(cls, json_str: str) -> SessionMigratorMemory:
        """:meth:`from_dict` of a :meth:`to_string`."""
        return cls.from_dict(json.loads(json_str))

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
                values["tokenizer_fn"] = unset_tokenizer
        return values

    @classmethod
    def from_defaults(
        cls,
        chat_history: list[ChatMessage] | None = None,
        llm: LLM | None = None,
        chat_store: Any = None,
        chat_store_key: str | None = None,
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
        """A memory for session ``chat_store_key`` in ``store`` (the constructor takes the same
        keywords; an unknown one is a ``TypeError`` naming those it takes).

        ``chat_store_key`` names the conversation: memories given the same key on the same
        store share it (one user, across processes and restarts); without one, the memory gets
        a new session of its own, as each ``ChatMemoryBuffer`` has its own chat store.
        ``store`` is a store URL (``"memory://"``, ``"sqlite:///path.db"`` in a folder that
        exists, ``"redis://..."``, ``"postgresql://..."``) or a store object, opened here (a bad
        URL fails now); ``None`` opens the embedded SQLite default
        (``SESSION_MIGRATOR_STORE`` or ``$SESSION_MIGRATOR_HOME/sessions.db``). ``llm`` is kept
        and read on every ``get`` (one reporting no positive ``context_window`` is refused
        unless ``model`` is given); ``model`` pins a model (as :meth:`set_model`).
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
        (default 35%) is the share of the room a cut leaves free so that the next turns fit
        without cutting again: the head of the history (system messages, summary) stays the same
        from call to call, which keeps a provider's prompt cache warm; ``0`` cuts afresh at every
        ``get``. ``compactor`` (a :class:`~session_migrator.Compactor`, or ``True`` for the
        process's shared one) writes the summaries of the cut part in the background, so that no
        ``get`` waits for the summarizer (docs/cost.md; a memory restored from its reference has
        none). A non-empty
        ``chat_history`` is written with :meth:`set`. ``chat_store`` (a LlamaIndex chat store)
        is not supported: the session store replaces it.
        """
        if chat_store is not None:
            raise ValueError(_NO_CHAT_STORE)
        fields: dict[str, Any] = {"tokenizer_fn": tokenizer_fn}
        if chat_store_key is not None:
            fields["chat_store_key"] = chat_store_key
        if token_limit is not None:
            fields["token_limit"] = token_limit
        return cls(
            chat_history=chat_history,
            llm=llm,
            store=store,
            strategy=strategy,
            summarizer=summarizer,
            model=model,
            reserve_output=reserve_output,
            reserve_input=reserve_input,
            workspace=workspace,
            slack=slack,
            **fields,
            **kwargs,
        )

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        if self.tokenizer_fn is unset_tokenizer:
            self.tokenizer_fn = PromptTokenizer(self)
        self._listener = MemoryListener(self)
        listen(self._listener)

    # -- the fitted view -------------------------------------------------------------------

    def _get_fitter(self) -> SessionFitter:
        with self._lock:
            fitter = self._fitter
            if fitter is not None and fitter.session_id == self.chat_store_key:
                return fitter
            if self._store is None:  # closed, or made by model_validate
                self._store, self._owns_store = open_memory_store(self._store_spec)
            settings = self._options.fitter_settings()
            fitter = SessionFitter(
                self.chat_store_key, store=self._store, compactor=self._compactor, **settings
            )
            self._fitter = fitter
            self._handout.forget()
            return fitter

    def _fit(self, input: object, initial_token_count: int) -> MigrationResult:
        with self._lock:
            window, source = self._tracker.resolve()
            # token_limit caps the history as ChatMemoryBuffer's does: at most token_limit less
            # initial_token_count (the model's own budget, with its reserves, may be smaller)
            cap: int | None = None
            if self.token_limit != _NO_CAP:
                if initial_token_count > self.token_limit:
                    raise ValueError("Initial token count exceeds token limit")
                cap = self.token_limit - max(0, initial_token_count)
            options = self._options
            query = (
                input if isinstance(input, str) and input and uses_query(options.strategy) else None
            )
            extra = max(0, initial_token_count) + options.input_reserve(window)
            fitter = self._get_fitter()
            if not fitter.refresh():
                # nothing stored yet: there is no session to log a migration against
                result = migrate(
                    [],
                    window,
                    strategy=options.strategy,
                    reserve_output=options.reserve_output,
                    extra_reserved=extra,
                )
            else:
                own = self.tokenizer_fn
                result = fit_within(
                    fitter,
                    window,
                    query=query,
                    extra=extra,
                    cap=cap,
                    tokenizer_fn=own if not isinstance(own, PromptTokenizer) else None,
                    guarded=isinstance(self._tracker.llm, FitToModelLLM),
                )
            self._window, self._source = window, source
            return result

    def get(
        self,
        input: str | None = None,
        initial_token_count: int = 0,
        **kwargs: Any,
    ) -> list[ChatMessage]:
        """The conversation fitted to the current model (see the class docstring)."""
        return self._handout.hand_out(self._fit(input, initial_token_count), self._listener)

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
            return [self._handout.fresh(m) for m in self._get_fitter().messages]

    async def aget_all(self) -> list[ChatMessage]:
        """:meth:`get_all` in a worker thread."""
        return await asyncio.to_thread(self.get_all)
