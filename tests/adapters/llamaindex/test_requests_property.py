"""Done-when of tracker issue 22: over random conversations and windows down to 4,096 tokens,
with default settings, every request real LlamaIndex engines and agents send through
``FitToModelLLM`` is within its own LLM's window and valid for OpenAI and Anthropic.

The fake LLMs record each request; ``_recording`` counts it with tiktoken itself (messages and
tool schemas) plus ``num_output``, and checks its shape: tool results right after their call,
every call answered, a user message first after the system messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.chat_engine import (
    CondensePlusContextChatEngine,
    ContextChatEngine,
    SimpleChatEngine,
)
from llama_index.core.embeddings import MockEmbedding

from llamaindex_session_migrator import FitToModelLLM, SessionMigratorMemory
from tests.adapters.llamaindex._recording import RecordingLLM

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20:inspect"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211:inspect"),
]

WINDOWS = (4096, 8192, 16_384, 128_000)
WORD = "detail "
ENGINES = ("simple", "context", "condense")

_index: VectorStoreIndex | None = None


def index() -> VectorStoreIndex:
    global _index
    if _index is None:
        docs = [
            Document(text=f"Document {i}: " + "facts about the city and its weather. " * 120)
            for i in range(6)
        ]
        _index = VectorStoreIndex.from_documents(docs, embed_model=MockEmbedding(embed_dim=8))
    return _index


@dataclass
class Conversation:
    """One drawn case: the window, the output asked for, a stored history and new turns."""

    window: int
    num_output: int
    history: list[int]  # words per earlier message (user and assistant alternate)
    turns: list[int]  # words per new question
    reply_words: int
    tool_words: int  # words a tool returns

    def llm(self, **options: Any) -> RecordingLLM:
        return RecordingLLM(
            context_window=self.window,
            num_output=self.num_output,
            reply_words=self.reply_words,
            **options,
        )

    def memory(self, llm: Any, name: str) -> SessionMigratorMemory:
        memory = SessionMigratorMemory.from_defaults(
            llm=llm, chat_store_key=name, store="memory://"
        )
        if self.history:
            memory.set(
                [
                    ChatMessage(
                        role="user" if i % 2 == 0 else "assistant",
                        content=f"Earlier {i}: " + WORD * words,
                    )
                    for i, words in enumerate(self.history)
                ]
            )
        return memory

    def question(self, turn: int, words: int, *, tool: bool = False, clerk: bool = False) -> str:
        text = f"Question {turn}: " + WORD * words
        if clerk:
            text += " Ask the clerk."
        if tool:
            text += " What is the weather in Oslo?"
        return text

    def weather(self) -> Any:
        words = self.tool_words

        def get_weather(city: str) -> str:
            """The weather in a city."""
            return f"Sunny in {city}. " + WORD * words

        return get_weather


@st.composite
def conversations(draw: st.DrawFn) -> Conversation:
    window = draw(st.sampled_from(WINDOWS))
    return Conversation(
        window=window,
        num_output=draw(st.sampled_from([256, 512, 1024, window // 4])),
        history=draw(st.lists(st.integers(1, 900), max_size=24)),
        turns=draw(st.lists(st.integers(1, 600), min_size=1, max_size=3)),
        reply_words=draw(st.integers(1, 200)),
        tool_words=draw(st.integers(1, 2500)),
    )


def _engine(kind: str, llm: Any, memory: SessionMigratorMemory) -> Any:
    if kind == "simple":
        return SimpleChatEngine.from_defaults(
            llm=llm, memory=memory, system_prompt="You are helpful. " * 20
        )
    engine_class = ContextChatEngine if kind == "context" else CondensePlusContextChatEngine
    return engine_class.from_defaults(
        retriever=index().as_retriever(similarity_top_k=2), llm=llm, memory=memory
    )


def _check(*llms: RecordingLLM) -> None:
    problems = [p for llm in llms for p in llm.problems()]
    assert problems == []
    assert any(llm.requests for llm in llms)


SETTINGS = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)


@SETTINGS
@given(case=conversations(), kind=st.sampled_from(ENGINES), streaming=st.booleans())
def test_engines_sync(case: Conversation, kind: str, streaming: bool) -> None:
    llm = case.llm()
    memory = case.memory(llm, "sync")
    engine = _engine(kind, FitToModelLLM(llm), memory)
    for turn, words in enumerate(case.turns):
        question = case.question(turn, words)
        if streaming:
            response = engine.stream_chat(question)
            for _ in response.response_gen:
                pass
        else:
            engine.chat(question)
    memory.close()
    _check(llm)


@SETTINGS
@given(case=conversations(), kind=st.sampled_from(ENGINES), streaming=st.booleans())
async def test_engines_async(case: Conversation, kind: str, streaming: bool) -> None:
    llm = case.llm()
    memory = case.memory(llm, "async")
    engine = _engine(kind, FitToModelLLM(llm), memory)
    for turn, words in enumerate(case.turns):
        question = case.question(turn, words)
        if streaming:
            response = await engine.astream_chat(question)
            async for _ in response.async_response_gen():
                pass
        else:
            await engine.achat(question)
    memory.close()
    _check(llm)


@SETTINGS
@given(case=conversations(), streaming=st.booleans())
async def test_function_agent(case: Conversation, streaming: bool) -> None:
    llm = case.llm()
    memory = case.memory(llm, "agent")
    agent = FunctionAgent(
        tools=[case.weather()],
        llm=FitToModelLLM(llm),
        system_prompt="You are a weather agent. " * 20,
        streaming=streaming,
    )
    for turn, words in enumerate(case.turns):
        await agent.run(user_msg=case.question(turn, words, tool=turn % 2 == 0), memory=memory)
    memory.close()
    _check(llm)


@SETTINGS
@given(case=conversations(), planner_window=st.sampled_from(WINDOWS), streaming=st.booleans())
async def test_workflow_handoffs_between_llms(
    case: Conversation,
    planner_window: int,
    streaming: bool,
) -> None:
    planner_llm = RecordingLLM(
        model_name="gpt-4o",
        context_window=planner_window,
        num_output=min(case.num_output, planner_window // 4),
        handoff_to="clerk",
    )
    clerk_llm = case.llm()
    planner = FunctionAgent(
        name="planner",
        description="Plans the work.",
        system_prompt="You plan. Hand paperwork to the clerk.",
        llm=FitToModelLLM(planner_llm),
        tools=[case.weather()],
        can_handoff_to=["clerk"],
        streaming=streaming,
    )
    clerk = FunctionAgent(
        name="clerk",
        description="Does the paperwork.",
        system_prompt="You are a clerk. " * 10,
        llm=FitToModelLLM(clerk_llm),
        tools=[case.weather()],
        streaming=streaming,
    )
    workflow = AgentWorkflow(agents=[planner, clerk], root_agent="planner")
    memory = case.memory(planner_llm, "workflow")
    for turn, words in enumerate(case.turns):
        question = case.question(turn, words, tool=turn % 2 == 1, clerk=True)
        await workflow.run(user_msg=question, memory=memory)
    memory.close()
    _check(planner_llm, clerk_llm)
    assert clerk_llm.requests, "the clerk was never handed the work"
