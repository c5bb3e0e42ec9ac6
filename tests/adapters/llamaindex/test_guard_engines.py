"""Default settings on a 4,096-token window: the context chat engines never fail ("Chunk size
-351 is not positive") and every request fits, with the memory alone or behind the guard."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.chat_engine import CondensePlusContextChatEngine, ContextChatEngine
from llama_index.core.embeddings import MockEmbedding

from llamaindex_session_migrator import FitToModelLLM, SessionMigratorMemory
from tests.adapters.llamaindex._recording import RecordingLLM

MemoryFactory = Callable[..., SessionMigratorMemory]
QUESTION = "Please explain it at length, with every detail you have, step by step. " * 8


@pytest.fixture
def store_url() -> str:
    return "memory://"  # (the stores are not what is tested here)


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    docs = [
        Document(text=f"Document {i}: " + "facts about the city and its weather. " * 150)
        for i in range(6)
    ]
    return VectorStoreIndex.from_documents(docs, embed_model=MockEmbedding(embed_dim=8))


@pytest.mark.parametrize("engine_class", [ContextChatEngine, CondensePlusContextChatEngine])
@pytest.mark.parametrize("guarded", [False, True], ids=["memory", "guard"])
def test_context_engines_keep_working_on_a_small_window(
    engine_class: type[ContextChatEngine] | type[CondensePlusContextChatEngine],
    guarded: bool,
    index: VectorStoreIndex,
    make_memory: MemoryFactory,
) -> None:
    llm = RecordingLLM(context_window=4096, num_output=256, reply_words=120)
    memory = make_memory(llm=llm)
    engine = engine_class.from_defaults(
        retriever=index.as_retriever(similarity_top_k=2),
        llm=FitToModelLLM(llm) if guarded else llm,
        memory=memory,
    )
    for turn in range(12):
        engine.chat(f"Turn {turn}: {QUESTION}")
    assert llm.problems() == []
    assert memory.last_report is not None
    assert memory.last_report.decision == "compressed"
    assert len(memory.get_all()) == 24
