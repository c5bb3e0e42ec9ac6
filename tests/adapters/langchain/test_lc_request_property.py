"""Property: every request a chat model receives through real LangChain runnables fits it and is
one OpenAI and Anthropic accept (issue 21, done when).

Random conversations and small windows drive ``RunnableWithMessageHistory`` chains (with and
without the watcher; plain, with tools, ``with_fallbacks``, ``configurable_alternatives``; the
chat model wrapped in ``FitToModel``) and ``create_agent`` graphs (``FitToModelMiddleware``, with
``ToolStrategy`` / ``ProviderStrategy``, parallel tool calls, ``ModelFallbackMiddleware``), sync,
async and streaming. The recording fake model keeps every request's messages and bound schemas;
each is counted independently with tiktoken (messages in OpenAI's format + schema JSON) and,
with the output reserve, must be within the model's window.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.agents.middleware import ModelFallbackMiddleware
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import ConfigurableField
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from langchain_session_migrator import (
    FittedHistoryFactory,
    FitToModel,
    FitToModelMiddleware,
    window_for,
)
from session_migrator import Budget

MODES = ("invoke", "stream", "ainvoke", "astream")
WORDS = "order shipped invoice warehouse delayed carrier customer refund tracking parcel".split()
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],  # a failure is shown as found, unshrunk
)


def text(n: int, seed: int) -> str:
    return " ".join(WORDS[(seed + k * 7) % len(WORDS)] for k in range(n))


@tool
def lookup_order(order_id: int) -> str:
    """Look up the status of an order by its number."""
    return "Order status: " + text(20 + order_id % 200, order_id)


class Report(BaseModel):
    """The answer, structured."""

    title: str = Field(description="A short title. " * 10)
    body: str = Field(description="The answer in full. " * 10)


ANSWER = {"title": "Orders", "body": "All on their way."}


def check(model: Any, kit: Any) -> None:
    """Every request ``model`` recorded: within its window, and valid for OpenAI and Anthropic."""
    window = window_for(model)
    reserve = Budget.for_window(window, exact=True).reserved_output
    for k, (sent, kwargs) in enumerate(zip(model.received, model.received_kwargs, strict=True)):
        tokens = kit.openai_tokens(sent) + kit.schema_tokens(kwargs)
        assert tokens <= window.max_input_tokens, (k, tokens, window.max_input_tokens)
        assert tokens + reserve <= window.context_window, (k, tokens, reserve)
        valid(sent)


def valid(sent: list[BaseMessage]) -> None:
    """System messages first, then a user message; every tool result right after its call (with
    the call's other results), every call answered before the next turn."""
    rest = list(itertools.dropwhile(lambda m: isinstance(m, SystemMessage), sent))
    assert rest, "no message after the system prompt"
    assert isinstance(rest[0], HumanMessage), f"first after system: {type(rest[0]).__name__}"
    assert not any(isinstance(m, SystemMessage) for m in rest), "a system message mid-way"
    waiting: set[str] = set()
    for message in rest:
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in waiting, f"orphan tool result {message.tool_call_id}"
            waiting.discard(message.tool_call_id)
            continue
        assert not waiting, f"calls {waiting} unanswered before the next message"
        if isinstance(message, AIMessage):
            waiting = {c["id"] for c in message.tool_calls if c["id"]}
    assert not waiting, f"calls {waiting} unanswered"


async def call(runnable: Any, value: Any, mode: str, config: Any = None, **kw: Any) -> Any:
    if mode == "invoke":
        return runnable.invoke(value, config, **kw)
    if mode == "ainvoke":
        return await runnable.ainvoke(value, config, **kw)
    last: Any = None
    if mode == "stream":
        for chunk in runnable.stream(value, config, **kw):
            last = chunk if last is None or not hasattr(last, "__add__") else last + chunk
        return last
    async for chunk in runnable.astream(value, config, **kw):
        last = chunk if last is None or not hasattr(last, "__add__") else last + chunk
    return last


def replies(plan: list[int], seed: int) -> Iterator[AIMessage]:
    """For each turn of ``plan``: ``n`` parallel tool calls then an answer (0: an answer)."""
    for turn, calls in enumerate(itertools.cycle(plan)):
        if calls:
            yield AIMessage(
                "",
                tool_calls=[
                    {"name": "lookup_order", "args": {"order_id": seed + turn * 3 + c},
                     "id": f"call-{turn}-{c}"}
                    for c in range(calls)
                ],
            )  # fmt: skip
        yield AIMessage(f"Answer {turn}: " + text(10 + (seed * turn) % 120, turn))


def recorder(kit: Any, name: str, window: int, output: int, replies: Iterator[AIMessage]) -> Any:
    """A recording fake model whose stream is its whole answer in one chunk, tool calls
    included (``GenericFakeChatModel`` streams the content only)."""

    class Recorder(kit.RecordingChatModel):  # type: ignore[misc, name-defined]
        def _stream(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            message = self._generate(messages, stop=stop, **kw).generations[0].message
            chunks = [
                {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": k}
                for k, c in enumerate(message.tool_calls)
            ]
            yield ChatGenerationChunk(
                message=AIMessageChunk(content=message.content, tool_call_chunks=chunks)
            )

    return Recorder(
        messages=replies,
        model_name=name,
        profile={"max_input_tokens": window, "max_output_tokens": output},
    )


class Down(RuntimeError):
    pass


def failing(kit: Any) -> Any:
    class Failing(kit.RecordingChatModel):  # type: ignore[misc, name-defined]
        def _generate(self, *args: Any, **kwargs: Any) -> Any:
            raise Down("the provider is down")

        def _stream(self, *args: Any, **kwargs: Any) -> Any:
            raise Down("the provider is down")

    return Failing(
        messages=iter([]),
        model_name="gpt-4o",
        profile={"max_input_tokens": 100_000, "max_output_tokens": 1_000},
    )


chains = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["plain", "tools", "fallbacks", "alternatives"]),
        "watcher": st.booleans(),
        "mode": st.sampled_from(MODES),
        "window": st.sampled_from([1_200, 1_600, 2_400]),
        "system": st.integers(0, 400),
        "turns": st.lists(
            st.tuples(st.integers(1, 500), st.integers(0, 3)), min_size=3, max_size=9
        ),
        "seed": st.integers(0, 1_000),
        "small_on": st.lists(st.booleans(), min_size=9, max_size=9),
    }
)


@SETTINGS
@given(case=chains)
def test_every_chain_request_fits_and_is_valid(case: dict[str, Any], kit: Any) -> None:
    asyncio.run(_chain(case, kit))


async def _chain(case: dict[str, Any], kit: Any) -> None:
    plan = [calls for _, calls in case["turns"]]
    small = recorder(kit, "gpt-4o-mini", case["window"], 200, replies(plan, case["seed"]))
    big = recorder(kit, "gpt-4o", 100_000, 1_000, replies(plan, case["seed"]))
    kind = case["kind"]
    llm: Any
    if kind == "plain":
        llm = small
    elif kind == "tools":
        llm = small.bind_tools([lookup_order])
    elif kind == "fallbacks":
        llm = (
            failing(kit)
            .bind_tools([lookup_order])
            .with_fallbacks([small.bind_tools([lookup_order])])
        )
    else:
        llm = big.configurable_alternatives(
            ConfigurableField(id="model"), default_key="big", small=small
        )
    factory = FittedHistoryFactory(
        store="memory://",
        llm=llm if kind == "alternatives" else None,
        models={"gpt-4o-mini": small, "gpt-4o": big},
        model_key="model" if kind == "alternatives" else None,
    )
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "You answer for the support team. " + text(case["system"], 1)),
            MessagesPlaceholder("history"),
            MessagesPlaceholder("input"),
        ]
    )
    chain = factory.with_message_history(
        prompt | FitToModel(llm, history=factory),
        input_messages_key="input",
        history_messages_key="history",
    )
    if not case["watcher"]:
        chain = chain.with_config(callbacks=[])
    mode = case["mode"]
    for turn, (words, _) in enumerate(case["turns"]):
        configurable: dict[str, Any] = {"session_id": "s"}
        if kind == "alternatives":
            configurable["model"] = "small" if case["small_on"][turn] else "big"
        config = {"configurable": configurable}
        reply = await call(chain, {"input": [HumanMessage(text(words, turn))]}, mode, config)
        if reply.tool_calls:
            results = [
                ToolMessage(lookup_order.invoke(c["args"]), tool_call_id=c["id"])
                for c in reply.tool_calls
            ]
            await call(chain, {"input": results}, mode, config)
    check(small, kit)
    if kind == "alternatives":
        check(big, kit)
    factory.close()


agents = st.fixed_dictionaries(
    {
        "format": st.sampled_from([None, "tool", "provider"]),
        "fallback": st.booleans(),
        "mode": st.sampled_from(MODES),
        "window": st.sampled_from([1_500, 2_400]),
        "history": st.integers(0, 30),
        "calls": st.lists(st.integers(1, 3), min_size=1, max_size=3),
        "seed": st.integers(0, 1_000),
    }
)


def agent_replies(case: dict[str, Any]) -> Iterator[AIMessage]:
    for r, calls in enumerate(case["calls"]):
        yield AIMessage(
            "",
            tool_calls=[
                {"name": "lookup_order", "args": {"order_id": case["seed"] + r * 3 + c},
                 "id": f"call-{r}-{c}"}
                for c in range(calls)
            ],
        )  # fmt: skip
    if case["format"] == "tool":
        yield AIMessage("", tool_calls=[{"name": "Report", "args": ANSWER, "id": "report"}])
    elif case["format"] == "provider":
        yield AIMessage(json.dumps(ANSWER))
    else:
        yield AIMessage("All orders are on their way.")


@SETTINGS
@given(case=agents)
def test_every_agent_request_fits_and_is_valid(case: dict[str, Any], kit: Any) -> None:
    asyncio.run(_agent(case, kit))


async def _agent(case: dict[str, Any], kit: Any) -> None:
    small = kit.make_model("gpt-4o-mini", case["window"], 200, replies=agent_replies(case))
    primary = failing(kit) if case["fallback"] else small
    middleware: list[Any] = [FitToModelMiddleware()]
    if case["fallback"]:
        middleware.insert(0, ModelFallbackMiddleware(small))
    response_format = {"tool": ToolStrategy(Report), "provider": ProviderStrategy(Report)}.get(
        case["format"]
    )
    agent = create_agent(
        primary,
        [lookup_order],
        system_prompt="You track orders. " + text(40, case["seed"]),
        response_format=response_format,
        middleware=middleware,
    )
    history: list[BaseMessage] = []
    for n in range(case["history"]):
        history += [
            HumanMessage(f"Question {n}: " + text(30 + n * 7 % 90, n)),
            AIMessage(f"Answer {n}: " + text(40 + n * 11 % 120, n + 1)),
        ]
    value = {"messages": [*history, HumanMessage("Check my orders.")]}
    mode = case["mode"]
    if mode in ("invoke", "ainvoke"):
        await call(agent, value, mode)
    else:
        await call(agent, value, mode, stream_mode="values")
    assert len(small.received) == len(case["calls"]) + 1
    check(small, kit)
