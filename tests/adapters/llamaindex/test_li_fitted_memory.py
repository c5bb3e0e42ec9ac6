"""FittedMemory: LlamaIndex's Memory API on a session store, its output fitted to the model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.memory import (
    FactExtractionMemoryBlock,
    InsertMethod,
    Memory,
    StaticMemoryBlock,
    VectorMemoryBlock,
)
from llama_index.core.schema import BaseNode
from llama_index.core.storage.chat_store.sql import MessageStatus
from llama_index.core.vector_stores import SimpleVectorStore, VectorStoreQuery
from llama_index.core.vector_stores.types import VectorStoreQueryResult
from pydantic import Field

from llamaindex_session_migrator import FittedMemory, SessionMigratorMemory, from_chat_messages
from session_migrator import TiktokenCounter, open_store
from session_migrator.store import BaseSessionStore

COUNTER = TiktokenCounter("o200k_base")


@pytest.fixture
def store() -> Any:
    opened = open_store("memory://")
    yield opened
    opened.close()


def _big_turns() -> list[ChatMessage]:
    return [
        ChatMessage(role="user", content="x " * 500),
        ChatMessage(role="assistant", content="y " * 500),
        ChatMessage(role="user", content="z " * 500),
    ]


def test_it_is_a_memory_with_memorys_arguments(store: BaseSessionStore) -> None:
    memory = FittedMemory(token_limit=1000, token_flush_size=700, session_id="u", store=store)
    assert isinstance(memory, Memory)
    assert (memory.token_limit, memory.token_flush_size, memory.session_id) == (1000, 700, "u")
    made = [FittedMemory(token_limit=1000, store=store) for _ in range(2)]
    assert made[0].session_id != made[1].session_id  # a private session each
    with pytest.raises(TypeError, match="chat_store_key"):
        FittedMemory(store=store, chat_store_key="u")
    with pytest.raises(ValueError, match="not both"):  # store= or a LlamaIndex chat store
        FittedMemory.from_defaults(async_database_uri="sqlite+aiosqlite:///:memory:", store=store)


async def test_the_flushed_queue_is_archived_and_the_session_stays_whole(
    store: BaseSessionStore,
) -> None:
    memory = FittedMemory.from_defaults(
        session_id="q", store=store, token_limit=1000, token_flush_size=700,
        chat_history_token_ratio=0.9,
    )  # fmt: skip
    await memory.aput_messages(_big_turns())
    got = await memory.aget()
    assert [m.content[:2] for m in got if m.content] == ["z "]  # as upstream's queue flushes
    assert len(await memory.aget_all(status=MessageStatus.ACTIVE)) == 1
    assert len(await memory.aget_all(status=MessageStatus.ARCHIVED)) == 2
    assert len(await memory.aget_all()) == 3
    assert len(store.load("q")) == 3  # nothing deleted: every reader sees the whole log
    other = SessionMigratorMemory(chat_store_key="q", store=store)
    assert len(other.get_all()) == 3
    await memory.areset(status=MessageStatus.ACTIVE)
    assert await memory.aget() == []
    assert len(await memory.aget_all(status=MessageStatus.ARCHIVED)) == 2
    await memory.areset()
    assert store.load("q") == []


def test_static_blocks_go_where_insert_method_says(store: BaseSessionStore) -> None:
    block = StaticMemoryBlock(name="core", static_content="The user's name is Ada.")
    for method, role_at in ((InsertMethod.SYSTEM, 0), (InsertMethod.USER, -1)):
        memory = FittedMemory.from_defaults(
            store=store, memory_blocks=[block], insert_method=method
        )
        memory.put_messages(
            [ChatMessage(role="user", content="hi"), ChatMessage(role="assistant", content="hey")]
        )
        memory.put(ChatMessage(role="user", content="who am I?"))
        got = memory.get()
        target = got[role_at]
        assert "Ada" in "".join(getattr(b, "text", "") for b in target.blocks)
        assert target.role == (MessageRole.SYSTEM if method == InsertMethod.SYSTEM else "user")


class _FactLLM(MockLLM):
    """Answers every chat with one fact (what FactExtractionMemoryBlock parses)."""

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return ChatResponse(
            message=ChatMessage(role="assistant", content="<fact>Ada likes tea</fact>")
        )


class _TextVectorStore(SimpleVectorStore):
    """SimpleVectorStore that hands back its nodes' text (as a real vector database does)."""

    stores_text: bool = True
    nodes: dict[str, BaseNode] = Field(default_factory=dict)

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        self.nodes.update({n.node_id: n for n in nodes})
        return super().add(nodes, **kwargs)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        found = super().query(query, **kwargs)
        found.nodes = [self.nodes[i] for i in found.ids or []]
        return found


async def test_fact_and_vector_blocks_get_what_the_queue_flushes(store: BaseSessionStore) -> None:
    facts = FactExtractionMemoryBlock(name="facts", llm=_FactLLM(), priority=1)
    vectors = VectorMemoryBlock(
        name="recall",
        vector_store=_TextVectorStore(),
        embed_model=MockEmbedding(embed_dim=8),
        priority=2,
    )
    memory = FittedMemory.from_defaults(
        session_id="b", store=store, token_limit=4000, token_flush_size=700,
        chat_history_token_ratio=0.2, memory_blocks=[facts, vectors], model="gpt-4o",
    )  # fmt: skip
    await memory.aput_messages(_big_turns())
    assert facts.facts == ["Ada likes tea"]
    got = await memory.aget(input="what does Ada like?")
    text = " ".join(getattr(b, "text", "") for b in got[0].blocks)
    assert "Ada likes tea" in text
    assert "<recall>" in text  # the flushed turns came back from the vector block
    assert len(store.load("b")) == 3


def test_get_fits_the_model_and_says_so(
    store: BaseSessionStore, make_llm: Callable[..., Any]
) -> None:
    llm = make_llm(context_window=1_000, num_output=100)
    memory = FittedMemory.from_defaults(session_id="f", store=store, llm=llm, strategy="trim")
    for i in range(40):  # within Memory's own 30,000-token limit, over the model's window
        memory.put(ChatMessage(role="user", content=f"question {i}: " + "blah " * 30))
        memory.put(ChatMessage(role="assistant", content=f"answer {i}: " + "word " * 30))
    got = memory.get()
    assert COUNTER.count_messages(from_chat_messages(got)) <= 900
    assert memory.last_report is not None
    assert memory.last_report.decision == "compressed"
    assert got[-1].content == memory.get_all()[-1].content
    assert len(memory.get_all()) == 80
    roomy = FittedMemory.from_defaults(session_id="f", store=store, model="gpt-4o")
    assert len(roomy.get()) == 80  # a larger model gets everything back, untouched


def test_chat_engines_use_it(store: BaseSessionStore, make_llm: Callable[..., Any]) -> None:
    llm = make_llm(context_window=1_500, num_output=100)
    memory = FittedMemory.from_defaults(session_id="e", store=store, llm=llm)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    for turn in range(12):
        engine.chat(f"turn {turn}: " + "tell me more " * 20)
    assert len(store.load("e")) == 24
    for sent in range(len(llm.received)):
        assert llm.sent_tokens(sent) <= llm.input_budget
