"""Cross-framework handoff fixtures: one store, one session id, a LangChain side and a LlamaIndex
side, each with a fake model.

Stores: a SQLite file, and the real Redis and PostgreSQL servers (``SESSION_MIGRATOR_TEST_*``
URLs, defaults on 127.0.0.1) under a key prefix / schema of the test's own, removed after.
Without a server the test is skipped with the reason; under ``CI=true`` it fails.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from pydantic import Field

from llamaindex_session_migrator import from_chat_messages
from session_migrator import TiktokenCounter
from tests.adapters.llamaindex._recording import FakeFunctionLLM

COUNTER = TiktokenCounter("o200k_base")
FILLER = "The migration plan covers the schema, the data backfill and the rollback in detail. "


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("redis", id="redis", marks=pytest.mark.redis),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ]
)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty store both frameworks open."""
    kind = request.param
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'handoff.db'}"
    return str(request.getfixturevalue(f"{kind}_url"))


# -- LangChain side ------------------------------------------------------------------------------


class LangChainModel(GenericFakeChatModel):
    """A fake LangChain chat model with a name, a profile (its window) and a record of inputs."""

    model_name: str = "gpt-4o"
    received: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.received.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def langchain_model(name: str, max_input: int, replies: Sequence[AIMessage]) -> LangChainModel:
    return LangChainModel(
        messages=iter(replies),
        model_name=name,
        profile={"max_input_tokens": max_input, "max_output_tokens": 256},
    )


# -- LlamaIndex side -----------------------------------------------------------------------------


class LlamaIndexModel(FakeFunctionLLM):
    """A fake LlamaIndex function-calling model: answers, or calls ``get_weather`` when asked
    about the weather and tools are offered; records every message list it is sent."""

    context_window: int = 1_500
    num_output: int = 100
    received: list[list[ChatMessage]] = Field(default_factory=list, exclude=True)

    def _respond(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.received.append(list(messages))
        self._calls += 1
        last = messages[-1]
        if (
            last.role == MessageRole.USER
            and "weather" in (last.content or "")
            and kwargs.get("tools")
        ):
            return ChatMessage(
                role=MessageRole.ASSISTANT,
                blocks=[
                    ToolCallBlock(
                        tool_call_id=f"li-call-{self._calls}",
                        tool_name="get_weather",
                        tool_kwargs={"city": "Bergen"},
                    )
                ],
            )
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"li reply {self._calls}. {FILLER}")

    def sent_tokens(self, index: int = -1) -> int:
        return COUNTER.count_messages(from_chat_messages(self.received[index]))

    @property
    def input_budget(self) -> int:
        return self.context_window - self.num_output


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Rain and 12 degrees in {city}."


def answers(tag: str) -> Iterator[AIMessage]:
    for n in itertools.count():
        yield AIMessage(content=f"{tag} answer {n}. " + FILLER * 2)


@pytest.fixture(autouse=True)
def _closed_event_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    """Sync LlamaIndex paths call ``asyncio.get_event_loop()``; close the loop they get."""
    if request.node.get_closest_marker("asyncio") is not None:
        yield
        return
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        asyncio.set_event_loop(None)
        loop.close()


@pytest.fixture
def kit() -> Any:
    """The fakes and helpers above, for the tests (conftest modules are not importable)."""
    from types import SimpleNamespace

    return SimpleNamespace(
        langchain_model=langchain_model,
        LlamaIndexModel=LlamaIndexModel,
        get_weather=get_weather,
        answers=answers,
        counter=COUNTER,
        filler=FILLER,
    )
