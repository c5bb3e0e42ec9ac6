"""Fixtures for the LangChain adapter: recording fake chat models, stores, and budget checks.

The fake models are LangChain's own ``GenericFakeChatModel`` with a name (so
``metadata["ls_model_name"]`` is set as for a real provider), a ``profile``, ``bind_tools``
(so ``create_agent`` can bind tools), and a ``received`` list of every message list they were
sent, in whatever way they were called (invoke, ainvoke, stream, astream).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from langchain_session_migrator import (
    FittedChatMessageHistory,
    FittedHistoryFactory,
    messages_to_core,
    window_for,
)
from session_migrator import Budget, Message, TiktokenCounter
from session_migrator.migration._migrate import default_counter

FILLER = "The quarterly report covers revenue, churn, hiring and the roadmap in detail. "


class RecordingChatModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that has a name and a profile and records what it is sent."""

    model_name: str = "fake-model"
    received: list[list[BaseMessage]] = Field(default_factory=list)
    #: the keyword arguments of each call (what is bound: tools, response_format, ...)
    received_kwargs: list[dict[str, Any]] = Field(default_factory=list)
    usage_from: Any = None  # a counter: report its count of the request as usage input_tokens

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.received.append(list(messages))
        self.received_kwargs.append(dict(kwargs))
        result = super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
        if self.usage_from is not None:
            tokens = self.usage_from.count_messages(messages_to_core(messages))
            message = result.generations[0].message
            assert isinstance(message, AIMessage)
            message.usage_metadata = {
                "input_tokens": tokens,
                "output_tokens": 10,
                "total_tokens": tokens + 10,
            }
        return result

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[LanguageModelInput, Any]:
        kwargs.pop("tool_choice", None)
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


def chatter(tag: str) -> Iterator[str]:
    """Endless, fairly long answers: ``<tag> answer <n>: ...``."""
    for n in itertools.count():
        yield f"{tag} answer {n}: " + FILLER * 3


def make_model(
    name: str,
    max_input: int,
    max_output: int = 256,
    *,
    replies: Iterator[Any] | None = None,
    **kwargs: Any,
) -> RecordingChatModel:
    return RecordingChatModel(
        messages=replies if replies is not None else chatter(name),
        model_name=name,
        profile={"max_input_tokens": max_input, "max_output_tokens": max_output},
        **kwargs,
    )


@pytest.fixture
def big() -> RecordingChatModel:
    """A large-window model (exact o200k counts: its name is a known gpt-4o)."""
    return make_model("gpt-4o", 100_000, 4_000)


@pytest.fixture
def small() -> RecordingChatModel:
    """A small-window model (exact o200k counts: its name is a known gpt-4o-mini)."""
    return make_model("gpt-4o-mini", 1_500, 200)


def budget_of(model: Any) -> tuple[int, Any]:
    """The input budget of ``model`` and the core counter it is measured with."""
    window = window_for(model)
    counter = default_counter(window)
    return Budget.for_window(window, exact=counter.exact).tokens, counter


def tokens_sent(messages: Sequence[BaseMessage], counter: Any) -> int:
    """What ``messages`` cost by the core counter (with the reply priming)."""
    return int(counter.count_messages(messages_to_core(messages)))


def _o200k() -> Any:
    from session_migrator.counting._encodings import get_encoding  # the bundled file, read offline

    encoding = get_encoding("o200k_base")
    assert encoding is not None
    return encoding


def schema_tokens(kwargs: dict[str, Any]) -> int:
    """What the schemas a call was sent with cost by tiktoken (o200k): each tool, function or
    response-format schema's JSON, plus 8 tokens of framing each."""
    encoding = _o200k()
    schemas: list[Any] = [*kwargs.get("tools", ()), *kwargs.get("functions", ())]
    if kwargs.get("response_format") is not None:
        schemas.append(kwargs["response_format"])
    return sum(
        len(encoding.encode(json.dumps(s, ensure_ascii=False, default=str))) + 8 for s in schemas
    )


def openai_tokens(messages: Sequence[BaseMessage]) -> int:
    """An independent tiktoken (o200k) count of ``messages`` in OpenAI's chat format: per
    message 3 tokens, its role, its text, its tool calls' names and arguments; 3 for the reply."""
    from langchain_core.messages import convert_to_openai_messages

    encoding = _o200k()
    total = 3
    for message in convert_to_openai_messages(list(messages)):
        total += 3 + len(encoding.encode(message["role"]))
        content = message.get("content") or ""
        if not isinstance(content, str):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        total += len(encoding.encode(content))
        for call in message.get("tool_calls") or ():
            function = call["function"]
            total += 3 + len(encoding.encode(function["name"] + function["arguments"]))
        if message.get("tool_call_id"):
            total += len(encoding.encode(message["tool_call_id"]))
        if message.get("name"):
            total += 1 + len(encoding.encode(message["name"]))
    return total


def assert_paired(messages: Sequence[BaseMessage]) -> None:
    """Every tool message answers a call made before it; every call is answered."""
    open_calls: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        if isinstance(message, AIMessage):
            open_calls.update(c["id"] for c in message.tool_calls if c["id"])
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in open_calls, f"orphan tool message {message.tool_call_id}"
            answered.add(message.tool_call_id)
    assert open_calls == answered, f"unanswered tool calls {open_calls - answered}"


def conversation(turns: int, *, words: int = 40) -> list[Message]:
    """A plain user/assistant conversation of ``turns`` turns (core messages)."""
    out: list[Message] = []
    for n in range(turns):
        out.append(Message("user", f"Question {n}: " + " ".join(["detail"] * words)))
        out.append(Message("assistant", f"Answer {n}: " + FILLER * 2))
    return out


@pytest.fixture
def exact_counter() -> TiktokenCounter:
    return TiktokenCounter("o200k_base")


# -- stores --------------------------------------------------------------------------------------


@pytest.fixture(params=["memory", "sqlite"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """``memory://`` and a fresh SQLite file."""
    if request.param == "memory":
        return "memory://"
    return f"sqlite:///{tmp_path / 'lc' / 'sessions.db'}"


@pytest.fixture
def make_history() -> Iterator[Callable[..., FittedChatMessageHistory]]:
    """``FittedChatMessageHistory(...)``, closed after the test."""
    made: list[FittedChatMessageHistory] = []

    def make(*args: Any, **kwargs: Any) -> FittedChatMessageHistory:
        history = FittedChatMessageHistory(*args, **kwargs)
        made.append(history)
        return history

    yield make
    for history in made:
        history.close()


@pytest.fixture
def make_factory() -> Iterator[Callable[..., FittedHistoryFactory]]:
    """``FittedHistoryFactory(...)``, closed after the test."""
    made: list[FittedHistoryFactory] = []

    def make(**kwargs: Any) -> FittedHistoryFactory:
        factory = FittedHistoryFactory(**kwargs)
        made.append(factory)
        return factory

    yield make
    for factory in made:
        factory.close()


# -- RunnableWithMessageHistory -----------------------------------------------------------------


@pytest.fixture
def with_history() -> Callable[..., Any]:
    """``RunnableWithMessageHistory(...)``, whose constructor warns (upstream deprecation).

    Exactly that named warning is expected here and nowhere else: the adapter's own classes
    must not warn (pytest runs with warnings as errors).
    """
    from langchain_core._api import LangChainDeprecationWarning
    from langchain_core.runnables.history import RunnableWithMessageHistory

    def build(*args: Any, **kwargs: Any) -> Any:
        with pytest.warns(LangChainDeprecationWarning, match="RunnableWithMessageHistory"):
            return RunnableWithMessageHistory(*args, **kwargs)

    return build


@pytest.fixture
def kit() -> SimpleNamespace:
    """The helpers above, for the test modules (conftest is not importable by name)."""
    return SimpleNamespace(
        RecordingChatModel=RecordingChatModel,
        make_model=make_model,
        chatter=chatter,
        budget_of=budget_of,
        tokens_sent=tokens_sent,
        assert_paired=assert_paired,
        schema_tokens=schema_tokens,
        openai_tokens=openai_tokens,
        conversation=conversation,
        FILLER=FILLER,
    )
