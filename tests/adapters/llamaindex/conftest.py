"""LlamaIndex adapter fixtures: a fake function-calling LLM that records what it receives.

``FakeLLM`` reports whatever window and model name the test gives it (both may be changed
between turns: its ``metadata`` is computed on every read), records every message list it is
sent, answers with a fixed-length reply, and calls the ``get_weather`` tool when the newest user
message asks about the weather and tools were offered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import Settings
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from pydantic import Field

from llamaindex_session_migrator import SessionMigratorMemory, from_chat_messages
from session_migrator import TiktokenCounter
from session_migrator.store import BaseSessionStore, open_store
from tests.adapters.llamaindex._recording import FakeFunctionLLM

#: Every fake model is counted with o200k: ``gpt-4o-mini`` names give an exact counter.
COUNTER = TiktokenCounter("o200k_base")


class FakeLLM(FakeFunctionLLM):
    """A fake chat model with tools (see the module docstring)."""

    context_window: int = 2_000
    num_output: int = 100
    reply_words: int = 40
    received: list[list[ChatMessage]] = Field(default_factory=list, exclude=True)

    def _respond(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.received.append(list(messages))
        self._calls += 1
        last = messages[-1]
        asks = last.role == MessageRole.USER and "weather" in (last.content or "")
        if asks and kwargs.get("tools"):
            city = (last.content or "").rsplit(" ", 1)[-1].strip("?") or "Paris"
            return ChatMessage(
                role=MessageRole.ASSISTANT,
                blocks=[
                    ToolCallBlock(
                        tool_call_id=f"call-{self.model_name}-{self._calls}",
                        tool_name="get_weather",
                        tool_kwargs={"city": city},
                    )
                ],
            )
        words = " ".join(["word"] * self.reply_words)
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"reply {self._calls}: {words}")

    def sent_tokens(self, index: int = -1) -> int:
        """Tokens of the ``index``-th message list received (o200k, chat format)."""
        return COUNTER.count_messages(from_chat_messages(self.received[index]))

    @property
    def input_budget(self) -> int:
        """What the model can take in: its window less the output it needs."""
        return self.context_window - self.num_output


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny and 21 degrees in {city}."


@pytest.fixture
def make_llm() -> Callable[..., FakeLLM]:
    return FakeLLM


@pytest.fixture(params=["memory", "sqlite"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty store: ``memory://`` or a SQLite file in the test's tmp dir."""
    if request.param == "memory":
        return "memory://"
    return f"sqlite:///{tmp_path / 'li' / 'sessions.db'}"


@pytest.fixture
def make_memory(store_url: str) -> Iterator[Callable[..., SessionMigratorMemory]]:
    """Memories on one store object (shared, closed after the test)."""
    store: BaseSessionStore = open_store(store_url)
    made: list[SessionMigratorMemory] = []

    def factory(session_id: str = "s1", **options: Any) -> SessionMigratorMemory:
        options.setdefault("store", store)
        memory = SessionMigratorMemory.from_defaults(chat_store_key=session_id, **options)
        made.append(memory)
        return memory

    yield factory
    for memory in made:
        memory.close()
    store.close()


@pytest.fixture(autouse=True)
def _closed_event_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    """Sync LlamaIndex code paths run coroutines with ``asyncio.get_event_loop()``, which makes
    a loop nobody closes (a ResourceWarning later): give sync tests one, and close it after.
    """
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


@pytest.fixture(autouse=True)
def _no_settings_llm() -> Iterator[None]:
    """Each test starts and ends with no ``Settings.llm``."""
    Settings._llm = None
    yield
    Settings._llm = None


@pytest.fixture
def weather_tool() -> Callable[[str], str]:
    return get_weather
