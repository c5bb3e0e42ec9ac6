"""``FittedMemory``: LlamaIndex's ``Memory`` (the API that llama-index-core 0.14 recommends) on a
session store, with its output fitted to the model about to read it.

Everything ``Memory`` does is upstream's own code: the FIFO queue with ``token_limit``,
``token_flush_size`` and ``chat_history_token_ratio``; memory blocks (static, fact extraction,
vector, your own) fed with what the queue flushes and inserted with ``insert_method``;
``aget_all(status=...)``/``areset(status=...)``. What changes:

- with ``store=`` the queue lives in a session store (:class:`SessionChatStore`): flushed
  messages are archived in place, never deleted, so the session stays whole for every other
  reader. A LlamaIndex chat store given (``sql_store=``, ``chat_store=``, the SQL arguments) is
  used as upstream uses it; without any, the memory is private (see ``_memory_store``);
- ``get``/``aget`` fit upstream's result (history plus blocks) to the current model's input
  budget, as :class:`SessionMigratorMemory` does: a result that fits is returned untouched;
  else the system message (with the blocks), a note or summary of what was cut, and the newest
  turns, tool calls paired. ``last_report`` says what was done;
- the placeholders the agent puts with ``placeholder_tools(memory)`` are applied by every read
  (a compressed range sent as one line naming its placeholder, a restored one whole again):
  kept in the session store, or in the memory itself on a LlamaIndex chat store (see
  ``_fitted_placeholders``). The fit's markers name ids ``read_context_tool(memory)`` reads.
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.async_utils import asyncio_run
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms import LLM
from llama_index.core.memory import Memory
from llama_index.core.memory.memory import (
    DEFAULT_FLUSH_SIZE,
    DEFAULT_MEMORY_BLOCKS_TEMPLATE,
    DEFAULT_TOKEN_LIMIT,
    BaseMemoryBlock,
    InsertMethod,
)
from llama_index.core.prompts import RichPromptTemplate
from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus

from llamaindex_session_migrator._chat_store import SessionChatStore
from llamaindex_session_migrator._convert import from_chat_message, to_chat_messages
from llamaindex_session_migrator._fitted_placeholders import (
    NAMING,
    HeldPlaceholders,
    IdPublisher,
    Naming,
    name_history,
    positional_id,
)
from llamaindex_session_migrator._guard import FitToModelLLM
from llamaindex_session_migrator._instrumentation import unlisten
from llamaindex_session_migrator._memory_options import (
    FIT_OPTIONS,
    FitOptions,
    check_llm,
    new_session_id,
    refuse_unknown,
)
from llamaindex_session_migrator._memory_reference import (
    MemoryNotRestorableError,
    live_memory,
    live_token,
)
from llamaindex_session_migrator._memory_store import (
    chat_store_for,
    private_chat_store,
    session_store_of,
    sql_chat_store,
)
from llamaindex_session_migrator._models import ModelLike
from llamaindex_session_migrator._tracking import ModelSource, ModelTracker
from session_migrator import (
    DEFAULT_SLACK,
    Compressor,
    Message,
    MigrationReport,
    ModelWindow,
    Summarizer,
    migrate,
    uses_query,
)
from session_migrator.context_tools import placeholders_in_force
from session_migrator.store import BaseSessionStore

__all__ = ["FittedMemory"]

_FORMAT = "session-migrator/fitted-memory-reference/1"


def _refuse_across_sessions(data: dict[str, Any]) -> None:
    """``recall_scope``, ``user_facts`` and ``metadata`` need a session store's fitter."""
    scope = data.pop("recall_scope", "session")
    facts = data.pop("user_facts", False) or data.pop("fact_extractor", None) is not None
    metadata = data.pop("metadata", None)
    if scope != "session" or facts or metadata:
        raise ValueError(
            "FittedMemory fits through LlamaIndex's Memory, one session at a time: recall across "
            "sessions (recall_scope), the user's facts (user_facts) and session metadata need "
            "SessionMigratorMemory.from_defaults(..., metadata={'user_id': ...}, "
            "recall_scope='user', user_facts=True)"
        )


class FittedMemory(Memory):
    """A drop-in ``Memory`` whose ``get`` fits the model (see the module docstring). Takes
    ``Memory``'s arguments (a ``sql_store`` given is used as is) and, besides, ``store``,
    ``llm``, ``model``, ``strategy``, ``summarizer``, ``reserve_output``, ``reserve_input``,
    ``workspace`` and ``slack`` as :class:`SessionMigratorMemory` does. Without ``session_id``
    it gets a new session of its own; without a store, a private in-memory one.

    >>> from llama_index.core.llms import ChatMessage, MockLLM
    >>> memory = FittedMemory.from_defaults(session_id="doc", llm=MockLLM(), store="memory://")
    >>> memory.put(ChatMessage(role="user", content="Hello"))
    >>> [m.content for m in memory.get()]
    ['Hello']
    """

    session_id: str = Field(default_factory=new_session_id)
    sql_store: AsyncDBChatStore = Field(default_factory=private_chat_store, exclude=True)

    _options: FitOptions = PrivateAttr(default_factory=FitOptions)
    _tracker: ModelTracker = PrivateAttr(default_factory=ModelTracker)
    _report: MigrationReport | None = PrivateAttr(default=None)
    _window: ModelWindow | None = PrivateAttr(default=None)
    _source: ModelSource | None = PrivateAttr(default=None)
    _owns_store: bool = PrivateAttr(default=False)
    _held: HeldPlaceholders = PrivateAttr(default_factory=HeldPlaceholders)
    _made: dict[tuple[str, str], Message] = PrivateAttr(default_factory=dict)
    _ids: IdPublisher = PrivateAttr(default_factory=IdPublisher)

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
        **data: Any,
    ) -> None:
        refuse_unknown(type(self).__name__, data, (*Memory.model_fields, *FIT_OPTIONS))
        options = FitOptions.checked(
            strategy=strategy,
            summarizer=summarizer,
            reserve_output=reserve_output,
            reserve_input=reserve_input,
            workspace=workspace,
            slack=slack,
            embeddings=data.pop("embeddings", None),
            gap_note=data.pop("gap_note", True),
        )
        _refuse_across_sessions(data)
        if model is None:
            check_llm(llm)
        data["sql_store"], owns = chat_store_for(
            store=store, sql_store=data.get("sql_store"), workspace=options.workspace
        )
        super().__init__(**data)
        self._options = options
        self._owns_store = owns
        self._tracker.llm = llm
        if model is not None:
            self._tracker.set_explicit(model)

    @classmethod
    def class_name(cls) -> str:
        return "FittedMemory"

    @classmethod
    def from_defaults(
        cls,
        session_id: str | None = None,
        chat_history: list[ChatMessage] | None = None,
        token_limit: int = DEFAULT_TOKEN_LIMIT,
        memory_blocks: list[BaseMemoryBlock[Any]] | None = None,
        tokenizer_fn: Any = None,
        chat_history_token_ratio: float = 0.7,
        token_flush_size: int = DEFAULT_FLUSH_SIZE,
        memory_blocks_template: RichPromptTemplate = DEFAULT_MEMORY_BLOCKS_TEMPLATE,
        insert_method: InsertMethod = InsertMethod.SYSTEM,
        image_token_size_estimate: int = 256,
        audio_token_size_estimate: int = 256,
        video_token_size_estimate: int = 256,
        chat_store: AsyncDBChatStore | None = None,
        table_name: str | None = None,
        async_database_uri: str | None = None,
        async_engine: Any = None,
        db_schema: str | None = None,
        **kwargs: Any,
    ) -> FittedMemory:
        """``Memory.from_defaults``'s arguments, plus this library's (see the class).

        As upstream: ``chat_store`` (any ``AsyncDBChatStore``) is used as is, the SQL arguments
        then ignored; else the SQL arguments build upstream's ``SQLAlchemyChatStore``. Either
        with ``store=`` is a ``ValueError``. With none of them, as :class:`FittedMemory`.
        """
        sql = chat_store
        if sql is None:
            sql = sql_chat_store(table_name, async_database_uri, async_engine, db_schema)
        if sql is not None:
            kwargs["sql_store"] = sql  # (with store= too: the ValueError of the constructor)
        if token_flush_size > token_limit:
            token_flush_size = int(token_limit * 0.7)
        fields: dict[str, Any] = {"tokenizer_fn": tokenizer_fn} if tokenizer_fn else {}
        memory = cls(
            session_id=session_id or new_session_id(),
            token_limit=token_limit,
            memory_blocks=memory_blocks or [],
            chat_history_token_ratio=chat_history_token_ratio,
            token_flush_size=token_flush_size,
            memory_blocks_template=memory_blocks_template,
            insert_method=insert_method,
            image_token_size_estimate=image_token_size_estimate,
            audio_token_size_estimate=audio_token_size_estimate,
            video_token_size_estimate=video_token_size_estimate,
            **fields,
            **kwargs,
        )
        if chat_history is not None:
            memory.set(chat_history)
        return memory

    # -- the model and what the last get did ---------------------------------------------------

    def set_model(self, model: ModelLike | None) -> None:
        """Pin the model (as :meth:`SessionMigratorMemory.set_model`)."""
        self._tracker.set_explicit(model)

    @property
    def model_window(self) -> ModelWindow | None:
        """The window the last ``get`` fitted to (``None`` before the first)."""
        return self._window

    @property
    def model_source(self) -> ModelSource | None:
        """Where that window came from: explicit, llm, settings or default."""
        return self._source

    @property
    def last_report(self) -> MigrationReport | None:
        """What the last ``get`` did: decision, tokens before and after, what was cut (``None``
        while the memory's ``llm`` is a ``FitToModelLLM``: the guard fits the request)."""
        return self._report

    @property
    def store(self) -> BaseSessionStore:
        """The session store (a ``StoreError`` for a memory on a LlamaIndex chat store given
        as ``sql_store``/``chat_store``: its messages are there)."""
        return session_store_of(self.sql_store)

    # -- the agent's placeholders ------------------------------------------------------------

    @property
    def held_placeholders(self) -> HeldPlaceholders | None:
        """The placeholders kept in this memory (on a LlamaIndex chat store, which keeps no
        ids); ``None`` on a session store, whose session keeps them."""
        return None if isinstance(self.sql_store, SessionChatStore) else self._held

    async def acontext_messages(self) -> list[Message]:
        """The whole conversation (archived messages too), oldest first, as core messages under
        the ids the fits and their markers name: the store's, else ``m<position>``."""
        chats = self.sql_store
        if isinstance(chats, SessionChatStore):
            return await asyncio.to_thread(chats.store.load, self.session_id, full=True)
        held = await chats.get_messages(self.session_id, status=None)
        return [from_chat_message(m, id=positional_id(k)) for k, m in enumerate(held)]

    async def _naming(self) -> Naming:
        chats = self.sql_store
        if isinstance(chats, SessionChatStore):

            def read() -> Naming:
                ids = [m.id for m in chats.active(self.session_id)]
                info = chats.store.get_session(self.session_id) if ids else None
                found = placeholders_in_force(info.metadata if info is not None else None)
                return Naming(ids, 0, found, self._made)

            return await asyncio.to_thread(read)
        found = self._held.in_force()
        offset = 0
        if found:  # (positions count from the conversation's start)
            offset = await chats.count_messages(self.session_id, status=MessageStatus.ARCHIVED)
        return Naming(None, offset, found, self._made)

    def _insert_memory_content(
        self,
        chat_history: list[ChatMessage],
        memory_content: list[Any],
        chat_message_data: list[ChatMessage],
    ) -> list[ChatMessage]:
        """Upstream's, on the active queue named and under the placeholders in force."""
        naming = NAMING.get()
        if naming is not None:
            chat_history = name_history(chat_history, naming)
        placed: list[ChatMessage] = super()._insert_memory_content(
            chat_history, memory_content, chat_message_data
        )
        return placed

    # -- reading -------------------------------------------------------------------------------

    async def aget(
        self, input: str | ChatMessage | None = None, **block_kwargs: Any
    ) -> list[ChatMessage]:
        """Upstream's history with its memory blocks, under the agent's placeholders, fitted
        to the current model."""
        naming = await self._naming()
        token = NAMING.set(naming)
        try:
            history = await super().aget(input=input, **block_kwargs)
        finally:
            NAMING.reset(token)
        window, source = self._tracker.resolve()
        if isinstance(self._tracker.llm, FitToModelLLM):
            # the guard fits the whole request (the agent's prompt, its steps, the tools, the
            # output asked for) just before it is sent: a fit here, blind to them, would pin a
            # summary the guard cannot shrink and squeeze the agent's current turn; it is told
            # the ids of the messages (its markers name them, read_context reads them)
            self._report, self._window, self._source = None, window, source
            self._ids.publish(history, naming)
            return history
        options = self._options
        text = input.content if isinstance(input, ChatMessage) else input
        query = text if isinstance(text, str) and text and uses_query(options.strategy) else None
        result = migrate(
            [from_chat_message(m, id=naming.id_of(m)) for m in history],
            window,
            strategy=options.strategy,
            query=query,
            summarizer=options.summarizer,
            reserve_output=options.reserve_output,
            extra_reserved=options.input_reserve(window),
            embeddings=options.embeddings,
            gap_note=options.gap_note,
        )
        self._report, self._window, self._source = result.report, window, source
        if result.report.decision == "fits":
            return history
        return to_chat_messages(result.messages)

    def get(self, input: str | ChatMessage | None = None, **block_kwargs: Any) -> list[ChatMessage]:
        """:meth:`aget`, run to completion."""
        fitted: list[ChatMessage] = asyncio_run(self.aget(input=input, **block_kwargs))
        return fitted

    # -- serialization: a reference to the store and session -------------------------------

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """A reference to the store and session, as :meth:`SessionMigratorMemory.to_dict`
        gives (what a workflow ``Context`` holding the memory serializes)."""
        options = self._options
        on_session = isinstance(self.sql_store, SessionChatStore)
        url = self.store.url if on_session else None
        reason = None
        if not on_session:
            reason = "its messages are in a LlamaIndex chat store object it was given"
        elif not url or url.lower().startswith("memory:"):
            reason = "its store lives only in the process that made it (memory://, or no URL)"
        elif self.memory_blocks:
            reason = "its memory blocks are objects (an LLM, a vector store)"
        elif not isinstance(options.strategy, str) or options.summarizer is not None:
            reason = "its strategy or summarizer is an object"
        return {
            "class_name": self.class_name(),
            "format": _FORMAT,
            "session_id": self.session_id,
            "store_url": url,
            "token_limit": self.token_limit,
            "token_flush_size": self.token_flush_size,
            "chat_history_token_ratio": self.chat_history_token_ratio,
            "insert_method": self.insert_method.value,
            "strategy": options.strategy if isinstance(options.strategy, str) else None,
            "reserve_output": options.reserve_output,
            "reserve_input": options.reserve_input,
            "workspace": options.workspace,
            "slack": options.slack,
            "process_token": live_token(self),
            "not_portable": reason,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> FittedMemory:
        """The memory a :meth:`to_dict` reference names: in this process that very memory,
        elsewhere a new one on the same store and session, else
        :class:`MemoryNotRestorableError`."""
        if data.get("format") != _FORMAT:
            made: FittedMemory = super().from_dict(data, **kwargs)
            return made
        session_id = str(data["session_id"])
        alive = live_memory(data.get("process_token"))
        if isinstance(alive, FittedMemory) and alive.session_id == session_id:
            return alive
        if data.get("not_portable"):
            raise MemoryNotRestorableError(session_id, str(data["not_portable"]))
        return cls(
            session_id=session_id,
            store=str(data["store_url"]),
            token_limit=data["token_limit"],
            token_flush_size=data["token_flush_size"],
            chat_history_token_ratio=data["chat_history_token_ratio"],
            insert_method=InsertMethod(data["insert_method"]),
            strategy=data["strategy"],
            reserve_output=data["reserve_output"],
            reserve_input=data["reserve_input"],
            workspace=data["workspace"],
            slack=data["slack"],
        )

    def close(self) -> None:
        """Close the store if this memory opened it (a store object given in is left open)."""
        unlisten(self._ids)
        if self._owns_store:
            self.store.close()
            self._owns_store = False
