"""A LlamaIndex chat engine and agent whose memory fits whichever model reads it (offline).

``SessionMigratorMemory`` is a ``ChatMemoryBuffer`` kept whole in a session store (a SQLite
file here). It reads the model from the LLM it was given (its ``metadata``, re-read on every
turn), so:

- on the large model the whole conversation goes over, untouched;
- when the model becomes a small one, the next turn gets the history compressed to its window
  (system prompt, a summary of the cut part, relevant older turns, the newest turns);
- back on the large model everything comes back: the full log never left the store;
- a FunctionAgent's tool calls are stored with their results, and stay paired when fitted.

Run it with ``python examples/llamaindex_chat.py``. The model is a fake function-calling LLM
that reports a window like a real one, so nothing goes over the network.
"""

from __future__ import annotations

import asyncio
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, LLMMetadata, MessageRole, ToolCallBlock
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms.mock import MockFunctionCallingLLM
from pydantic import Field

from llamaindex_session_migrator import SessionMigratorMemory, from_chat_messages
from session_migrator import TiktokenCounter

COUNTER = TiktokenCounter("o200k_base")


class FakeLLM(MockFunctionCallingLLM):
    """A fake chat model with tools, a name and a window (both may change between turns)."""

    model_name: str = "gpt-4o"
    context_window: int = 128_000
    num_output: int = 1_000
    last_sent: list[ChatMessage] = Field(default_factory=list, exclude=True)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        self.response_generator = self._respond

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.num_output,
            model_name=self.model_name,
            is_chat_model=True,
            is_function_calling_model=True,
        )

    def _respond(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.last_sent = list(messages)
        last = messages[-1]
        if (
            last.role == MessageRole.USER
            and "weather" in (last.content or "")
            and kwargs.get("tools")
        ):
            call = ToolCallBlock(
                tool_call_id=f"call-{id(last)}",
                tool_name="get_weather",
                tool_kwargs={"city": "Lisbon"},
            )
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content=f"({self.model_name}) Revenue came in 3% over plan, churn was flat at 2.1%, "
            "and two hires slipped to next quarter, so the forecast moved up slightly overall.",
        )


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny and 24 degrees in {city}."


def show(label: str, llm: FakeLLM, memory: SessionMigratorMemory) -> None:
    report = memory.last_report
    assert report is not None
    sent = COUNTER.count_messages(from_chat_messages(llm.last_sent))
    print(
        f"{label:<28} model={llm.model_name:<12} window={llm.context_window:>7,}  "
        f"sent {len(llm.last_sent):>3} messages / {sent:>5,} tokens  ({report.decision}; "
        f"log holds {len(memory.get_all())})"
    )


async def agent_turns(llm: FakeLLM, memory: SessionMigratorMemory) -> None:
    agent = FunctionAgent(tools=[get_weather], llm=llm, system_prompt="You are a travel agent.")
    for ask in ["What is the weather in Lisbon?", "Thanks. Anything else to know?"]:
        await agent.run(user_msg=ask, memory=memory)
        show("agent turn (small model)", llm, memory)


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="sm-llamaindex-"))
    llm = FakeLLM()
    memory = SessionMigratorMemory.from_defaults(
        llm=llm, chat_store_key="quarterly-review", store=f"sqlite:///{folder / 'chat.db'}"
    )
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="Be concise.")

    for n in range(30):
        engine.chat(f"Question {n}: how did the quarter go for region {n}, in detail please?")
    show("30 turns on a large model", llm, memory)

    llm.model_name, llm.context_window, llm.num_output = "gpt-4o-mini", 1_200, 200
    engine.chat("Now on a small model: what was the churn?")
    show("switched to a small model", llm, memory)
    summary = next((m for m in llm.last_sent if "summary of" in (m.content or "")), None)
    if summary is not None:
        print("   the small model got:", (summary.content or "").splitlines()[0])

    llm.model_name, llm.context_window, llm.num_output = "gpt-4o", 128_000, 1_000
    engine.chat("Back on the large model: summarise everything.")
    show("back on the large model", llm, memory)
    print(f"   nothing was lost: the store holds all {len(memory.get_all())} messages")

    llm.model_name, llm.context_window, llm.num_output = "gpt-4o-mini", 1_500, 200
    asyncio.run(agent_turns(llm, memory))
    calls = [m for m in memory.get_all() if any(isinstance(b, ToolCallBlock) for b in m.blocks)]
    results = [m for m in memory.get_all() if m.role == MessageRole.TOOL]
    print(f"   tool calls stored: {len(calls)}, tool results stored: {len(results)}")

    moves = memory.store.migrations("quarterly-review")
    print("migrations logged:", ", ".join(f"{r.from_model} -> {r.to_model}" for r in moves))
    memory.close()


if __name__ == "__main__":
    # llama-index workflows read pydantic's deprecated attributes while inspecting agents
    warnings.filterwarnings("ignore", module="inspect", message=".*deprecated.*")
    main()
