"""Hybrid recall through the LlamaIndex adapter, with LlamaIndex's own ``MockEmbedding``: both
memories and the LLM guard take ``embeddings=``; without it they use ``Settings.embed_model``
only where the user set one (reading it would build OpenAI's default), and ``False`` turns it
off."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import Settings
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import ChatMessage, MessageRole

from llamaindex_session_migrator import FittedMemory, FitToModelLLM, SessionMigratorMemory

KEY = "MockEmbedding:unknown:8"


class CountingMock(MockEmbedding):
    """``MockEmbedding`` counting the texts it embeds."""

    texts: int = 0

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self.texts += len(texts)
        return super()._get_text_embeddings(texts)


@pytest.fixture
def no_global_embed_model() -> Iterator[None]:
    held = Settings._embed_model
    Settings._embed_model = None
    yield
    Settings._embed_model = held


def _history(n: int = 14) -> list[ChatMessage]:
    out = []
    for i in range(n):
        out += [
            ChatMessage(role=MessageRole.USER, content=f"Question {i}: " + "detail " * 60),
            ChatMessage(role=MessageRole.ASSISTANT, content=f"Answer {i}: " + "context " * 60),
        ]
    return out


def test_the_memory_recalls_with_a_mock_embedding_and_stores_its_vectors(
    make_memory: Callable[..., SessionMigratorMemory], make_llm: Any, no_global_embed_model: None
) -> None:
    counting = CountingMock(embed_dim=8)
    memory = make_memory(llm=make_llm(context_window=1200), embeddings=counting)
    memory.set(_history())
    fitted = memory.get("What was the answer to question 3?")
    assert len(fitted) < 28
    report = memory.last_report
    assert report is not None
    assert report.fallbacks == []
    assert any("CountingMock" in n and "embeddings" in n for n in report.notes)
    first = counting.texts
    assert first > 0
    memory.put(ChatMessage(role=MessageRole.ASSISTANT, content="Noted."))
    memory.get("And question 4?")
    assert counting.texts - first < first  # only what was newly cut
    ids = [m.id for m in memory.store.load(memory.chat_store_key)]
    assert memory.store.get_vectors(memory.chat_store_key, "CountingMock:unknown:8", ids)


def test_settings_embed_model_is_the_default_only_when_set(
    make_memory: Callable[..., SessionMigratorMemory], make_llm: Any, no_global_embed_model: None
) -> None:
    plain = make_memory("a", llm=make_llm(context_window=1200))
    assert plain._options.embeddings is None  # nothing set: bm25 alone, no OpenAI default built
    assert Settings._embed_model is None
    Settings.embed_model = MockEmbedding(embed_dim=8)
    memory = make_memory("b", llm=make_llm(context_window=1200))
    assert memory._options.embeddings is not None
    assert memory._options.embeddings.key == KEY
    memory.set(_history())
    memory.get("What was the answer to question 3?")
    assert memory.last_report is not None
    assert any(f"{KEY} embeddings" in n for n in memory.last_report.notes)
    off = make_memory("c", llm=make_llm(context_window=1200), embeddings=False)
    assert off._options.embeddings is None


async def test_fitted_memory_and_the_llm_guard_take_embeddings(
    make_llm: Any, no_global_embed_model: None
) -> None:
    memory = FittedMemory.from_defaults(
        session_id="f", llm=make_llm(context_window=1200), embeddings=MockEmbedding(embed_dim=8)
    )
    await memory.aput_messages(_history())
    await memory.aget("What was the answer to question 3?")
    assert memory.last_report is not None
    assert any(f"{KEY} embeddings" in n for n in memory.last_report.notes)
    guard = FitToModelLLM(make_llm(context_window=1200), embeddings=MockEmbedding(embed_dim=8))
    guard.chat([*_history(), ChatMessage(role=MessageRole.USER, content="And question 5?")])
    report = guard.last_report
    assert report is not None
    assert report.decision == "compressed"
    assert any(f"{KEY} embeddings" in n for n in report.notes)


def test_a_memory_with_its_own_embedding_model_is_not_portable(
    tmp_path: Path, make_llm: Any, no_global_embed_model: None
) -> None:
    url = f"sqlite:///{tmp_path / 'li.db'}"
    llm = make_llm(context_window=1200)
    own = SessionMigratorMemory.from_defaults(
        chat_store_key="p", llm=llm, store=url, embeddings=MockEmbedding(embed_dim=8)
    )
    assert own.to_dict()["not_portable"] == f"its embedding model is an object ({KEY})"
    Settings.embed_model = MockEmbedding(embed_dim=8)
    shared = SessionMigratorMemory.from_defaults(chat_store_key="q", llm=llm, store=url)
    assert shared.to_dict()["not_portable"] is None
    own.store.close()
    shared.store.close()
