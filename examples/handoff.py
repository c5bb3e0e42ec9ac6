"""One conversation, two frameworks, one store (offline, fake models).

1. A LangChain assistant (``FittedChatMessageHistory``) on a large model runs a few turns, some
   with a tool call and its result.
2. A LlamaIndex ``FunctionAgent`` picks the same session id up from the same store on a much
   smaller model: ``SessionMigratorMemory`` hands it the conversation fitted to that window,
   tool calls still paired; the agent adds turns (with a tool call of its own).
3. LangChain reads the session back: its own messages are exactly as it wrote them (ids, tool
   calls, tool results), followed by the LlamaIndex turns.

Run it with ``python examples/handoff.py``.
"""

from __future__ import annotations

import asyncio
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, LLMMetadata, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from pydantic import Field

from langchain_session_migrator import FittedChatMessageHistory, messages_to_core
from llamaindex_session_migrator import SessionMigratorMemory, from_chat_messages
from session_migrator import TiktokenCounter, chat_rule_violations

SESSION = "trip-planning"
COUNTER = TiktokenCounter("o200k_base")
DETAIL = "We compared the train, the ferry and the flight on price, time and comfort. "


def langchain_replies() -> Iterator[AIMessage]:
    n = 0
    while True:
        if n % 3 == 0:
            yield AIMessage(
                content="",
                tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": f"lc-call-{n}"}],
                id=f"lc-ai-{n}",
            )
        else:
            yield AIMessage(content=f"(gpt-4o) Option {n}: " + DETAIL * 2, id=f"lc-ai-{n}")
        n += 1


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"Snow and -3 degrees in {city}."


class LlamaIndexLLM(MockFunctionCallingLLM):
    """A fake LlamaIndex function-calling model with a small window."""

    model_name: str = "gpt-4o-mini"
    context_window: int = 1_500
    num_output: int = 200
    sent: list[list[ChatMessage]] = Field(default_factory=list, exclude=True)

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
        self.sent.append(list(messages))
        last = messages[-1]
        if (
            last.role == MessageRole.USER
            and "weather" in (last.content or "")
            and kwargs.get("tools")
        ):
            call = ToolCallBlock(
                tool_call_id="li-call-1", tool_name="get_weather", tool_kwargs={"city": "Bergen"}
            )
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
        return ChatMessage(role=MessageRole.ASSISTANT, content="(gpt-4o-mini) " + DETAIL)


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Rain and 12 degrees in {city}."


def langchain_side(url: str) -> list[BaseMessage]:
    model = GenericFakeChatModel(messages=langchain_replies())
    history = FittedChatMessageHistory(SESSION, model="gpt-4o", store=url)
    written: list[BaseMessage] = [SystemMessage(content="You plan trips.", id="lc-system")]
    history.add_messages(written)
    for turn in range(10):
        asks = "What is the weather in Oslo?" if turn % 2 == 0 else "Compare the options."
        human = HumanMessage(content=f"Turn {turn}. {DETAIL * 4} {asks}", id=f"lc-human-{turn}")
        history.add_messages([human])
        written.append(human)
        reply = model.invoke(history.messages)
        history.add_messages([reply])
        written.append(reply)
        for call in reply.tool_calls:
            result = ToolMessage(
                content=weather.invoke(call["args"]),
                tool_call_id=call["id"],
                id=f"lc-tool-{call['id']}",
            )
            answer = model.invoke([*history.messages, result])
            history.add_messages([result, answer])
            written += [result, answer]
    tokens = COUNTER.count_messages(messages_to_core(history.full_messages))
    print(
        f"1. LangChain on gpt-4o wrote {len(written)} messages ({tokens:,} tokens), "
        f"{sum(isinstance(m, ToolMessage) for m in written)} tool results"
    )
    history.close()
    return written


async def llamaindex_side(url: str) -> None:
    llm = LlamaIndexLLM()
    memory = SessionMigratorMemory.from_defaults(
        chat_store_key=SESSION, store=url, llm=llm, reserve_input=250
    )
    fitted = memory.get()
    report = memory.last_report
    assert report is not None
    print(
        f"2. LlamaIndex on gpt-4o-mini (window {llm.context_window:,}) sees "
        f"{len(fitted)} of {len(memory.get_all())} messages: {report.decision}, "
        f"{report.tokens_before:,} -> {report.tokens_after:,} tokens (budget {report.budget:,}); "
        f"valid chat with tool pairs: {not chat_rule_violations(from_chat_messages(fitted))}"
    )
    agent = FunctionAgent(tools=[get_weather], llm=llm, system_prompt="You plan trips.")
    for ask in ["And the weather in Bergen?", "Which option do you recommend?"]:
        await agent.run(user_msg=ask, memory=memory)
    biggest = max(COUNTER.count_messages(from_chat_messages(s)) for s in llm.sent)
    print(
        f"   the agent ran {len(llm.sent)} model calls; the largest sent {biggest:,} tokens "
        f"(window {llm.context_window:,}, {llm.num_output} reserved for the answer)"
    )
    memory.close()


def langchain_reads_back(url: str, written: list[BaseMessage]) -> None:
    history = FittedChatMessageHistory(SESSION, model="gpt-4o", store=url)
    full = history.full_messages
    intact = full[: len(written)] == written
    added = full[len(written) :]
    calls = [c for m in added if isinstance(m, AIMessage) for c in m.tool_calls]
    results = [m for m in added if isinstance(m, ToolMessage)]
    print(
        f"3. LangChain reads {len(full)} messages back: its own {len(written)} intact "
        f"(ids, tool calls, results): {intact}; LlamaIndex added {len(added)}, with tool call "
        f"{calls[0]['name']}({calls[0]['args']}) -> {results[0].content!r}"
    )
    history.close()


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="sm-handoff-"))
    url = f"sqlite:///{folder / 'sessions.db'}"
    written = langchain_side(url)
    asyncio.run(llamaindex_side(url))
    langchain_reads_back(url, written)


if __name__ == "__main__":
    # llama-index workflows read pydantic's deprecated attributes while inspecting agents
    warnings.filterwarnings("ignore", module="inspect", message=".*deprecated.*")
    main()
