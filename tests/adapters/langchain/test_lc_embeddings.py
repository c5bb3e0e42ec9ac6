"""Hybrid recall through the LangChain adapter, with LangChain's own
``DeterministicFakeEmbedding``: the history, the factory, the guard and the middleware take
``embeddings=``; the vectors are kept in the store, one per message."""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from langchain_session_migrator import (
    FittedChatMessageHistory,
    FittedHistoryFactory,
    FitToModel,
    FitToModelMiddleware,
)

KEY = "DeterministicFakeEmbedding:32"


def _turns(n: int) -> list[Any]:
    out: list[Any] = []
    for i in range(n):
        out += [
            HumanMessage(f"Question {i} about the roadmap. " + "detail " * 60, id=f"h{i}"),
            AIMessage(f"Answer {i}. " + "context " * 60, id=f"a{i}"),
        ]
    return out


def _model() -> FakeListChatModel:
    return FakeListChatModel(
        responses=["Noted."] * 50, profile={"max_input_tokens": 1_500, "max_output_tokens": 100}
    )


class Counting(Embeddings):
    """LangChain's fake embedding, counting the texts it is asked for."""

    def __init__(self) -> None:
        self.inner = DeterministicFakeEmbedding(size=32)
        self.documents = 0
        self.queries = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return self.inner.embed_query(text)


def test_the_history_recalls_with_embeddings_and_keeps_the_vectors() -> None:
    history = FittedChatMessageHistory(
        "s", model=_model(), store="memory://", embeddings=DeterministicFakeEmbedding(size=32)
    )
    history.add_messages(_turns(12))
    history.add_messages([HumanMessage("What did we decide on the roadmap?", id="q")])
    assert len(history.messages) < 25
    report = history.last_report
    assert report is not None
    assert report.decision == "compressed"
    assert report.fallbacks == []
    assert any(f"{KEY} embeddings" in n for n in report.notes)
    kept = history.store.get_vectors("s", KEY, [f"h{i}" for i in range(12)])
    assert kept
    assert all(len(v) == 16 + 32 * 4 for v in kept.values())  # (the text digest, the vector)


def test_the_factory_and_the_guard_share_the_model() -> None:
    counting = Counting()
    llm = _model()
    factory = FittedHistoryFactory(
        store="memory://", models={"m": llm}, model_key=None, embeddings=counting
    )
    guard = FitToModel(llm, history=factory)
    history = factory("s1")
    history.add_messages(_turns(12))
    guard.invoke([*_turns(12), HumanMessage("What did we decide on the roadmap?")])
    report = guard.last_report
    assert report is not None
    assert any("Counting" in n and "embeddings" in n for n in report.notes)
    assert counting.documents > 0
    assert counting.queries == 1


async def test_the_middleware_takes_embeddings_and_fits_async() -> None:
    counting = Counting()
    middleware = FitToModelMiddleware(embeddings=counting)
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    model = GenericFakeChatModel(
        messages=iter([AIMessage("Done.")]),
        profile={"max_input_tokens": 1_500, "max_output_tokens": 100},
    )
    agent = create_agent(model, [], middleware=[middleware])
    out = await agent.ainvoke({"messages": [*_turns(12), HumanMessage("And the roadmap?")]})
    assert out["messages"][-1].content == "Done."
    report = middleware.last_report
    assert report is not None
    assert report.decision == "compressed"
    assert report.fallbacks == []
    assert counting.queries == 1


class AsyncOnly(Embeddings):
    """A LangChain model that implements only the async forms."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError

    def embed_query(self, text: str) -> list[float]:
        raise NotImplementedError

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return DeterministicFakeEmbedding(size=8).embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return DeterministicFakeEmbedding(size=8).embed_query(text)


def test_a_model_with_only_the_async_forms_is_used_through_them() -> None:
    history = FittedChatMessageHistory(
        "s", model=_model(), store="memory://", embeddings=AsyncOnly()
    )
    history.add_messages([*_turns(12), HumanMessage("What did we decide?", id="q")])
    history.messages  # noqa: B018 (the fit)
    report = history.last_report
    assert report is not None
    assert report.fallbacks == []
    assert any("AsyncOnly embeddings" in n for n in report.notes)
