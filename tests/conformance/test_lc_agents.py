"""LangChain agents and graphs on the OpenAI emulator: ``create_agent`` with
``FitToModelMiddleware`` (put last, as docs/langchain.md says), and a LangGraph ``StateGraph``
with an ``InMemorySaver`` checkpointer whose model node calls a ``FitToModel`` guard.

The agent loops: the emulator answers the first request with a tool call, the second with text,
so the second request carries the call and its result (the emulator checks the pair). The graph
keeps the whole thread in its checkpoint and runs four turns on it. Every request of a cell must
be accepted; the same agent or graph without the guard is refused.
"""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from langchain.agents import create_agent
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.messages import HumanMessage
from langchain_core.runnables import Runnable
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph

from langchain_session_migrator import FitToModel, FitToModelMiddleware
from tests.conformance._http import Calls, Json, Text
from tests.conformance._lc import REPORT, TOOLS, Report, lc_messages
from tests.conformance._openai_api import OpenAIEmulator
from tests.conformance.conftest import assert_conforms, assert_refused_without_guard

AGENT_TOOLS = TOOLS[:4]
LOOKUP = Calls.one("ledger_lookup_0", customer_id="cus_42", invoice_number="INV-2291")


def _llm(url: str, model: str = "gpt-4", **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(model=model, base_url=url, api_key="test", **kwargs)  # type: ignore[arg-type]


def _agent_run(agent: Any, call: str, messages: list[Any]) -> dict[str, Any]:
    state = {"messages": messages}
    if call == "invoke":
        return dict(agent.invoke(state))
    if call == "ainvoke":
        return dict(asyncio.run(agent.ainvoke(state)))
    last: dict[str, Any] = {}
    for values in agent.stream(state, stream_mode="values"):
        last = values
    return last


AGENT_CELLS: dict[str, tuple[dict[str, Any], str]] = {
    "unset invoke": ({}, "invoke"),
    "unset ainvoke": ({}, "ainvoke"),
    "unset stream": ({}, "stream"),
    "max_tokens=3000 invoke": ({"max_tokens": 3000}, "invoke"),
    "max_tokens=3000 stream": ({"max_tokens": 3000}, "stream"),
}


@pytest.mark.parametrize("cell", list(AGENT_CELLS))
def test_agent_with_middleware(openai_api: OpenAIEmulator, long_thread: Any, cell: str) -> None:
    kwargs, call = AGENT_CELLS[cell]
    messages = lc_messages(long_thread)
    url = openai_api.base_url

    plain = create_agent(_llm(url, **kwargs), AGENT_TOOLS)
    openai_api.script(LOOKUP)
    with pytest.raises(openai.BadRequestError):
        _agent_run(plain, "invoke", messages)
    assert_refused_without_guard(openai_api)
    openai_api.clear()

    agent = create_agent(_llm(url, **kwargs), AGENT_TOOLS, middleware=[FitToModelMiddleware()])
    openai_api.script(LOOKUP, Text("The invoice is paid."))
    try:
        state = _agent_run(agent, call, messages)
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__}: {exc}\n{openai_api.report()}") from exc
    assert_conforms(openai_api, at_least=2)
    assert state["messages"][-1].content == "The invoice is paid.", openai_api.report()
    second = openai_api.requests[1].body["messages"]
    assert any(m["role"] == "tool" for m in second), "the tool result was not sent back"


@pytest.mark.parametrize("strategy", ["ToolStrategy", "ProviderStrategy"])
def test_agent_structured_response(
    openai_api: OpenAIEmulator, long_thread: Any, claude_thread: Any, strategy: str
) -> None:
    # ProviderStrategy sends a json_schema response_format: on gpt-4o-mini (128,000 tokens),
    # with a thread over its window
    if strategy == "ToolStrategy":
        fmt: Any = ToolStrategy(Report)
        model, turns, reply = "gpt-4", long_thread, Calls.one("Report", **REPORT)
    else:
        fmt = ProviderStrategy(Report)
        model, turns, reply = "gpt-4o-mini", claude_thread, Json(REPORT)
    messages = lc_messages(turns)
    url = openai_api.base_url

    plain = create_agent(_llm(url, model), AGENT_TOOLS, response_format=fmt)
    with pytest.raises(openai.BadRequestError):
        plain.invoke({"messages": messages})
    assert_refused_without_guard(openai_api)
    openai_api.clear()

    agent = create_agent(
        _llm(url, model), AGENT_TOOLS, response_format=fmt, middleware=[FitToModelMiddleware()]
    )
    openai_api.script(reply)
    try:
        state = agent.invoke({"messages": messages})
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__}: {exc}\n{openai_api.report()}") from exc
    assert_conforms(openai_api)
    assert state["structured_response"] == Report(**REPORT), openai_api.report()


def _graph(model: Runnable[Any, Any]) -> Any:
    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_edge(START, "model")
    return builder.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize("max_tokens", [None, 3000])
def test_langgraph_with_checkpointer(
    openai_api: OpenAIEmulator, long_thread: Any, max_tokens: int | None
) -> None:
    kwargs = {} if max_tokens is None else {"max_tokens": max_tokens}
    url = openai_api.base_url
    messages = lc_messages(long_thread)

    plain = _graph(_llm(url, **kwargs))
    with pytest.raises(openai.BadRequestError):
        plain.invoke({"messages": messages}, {"configurable": {"thread_id": "plain"}})
    assert_refused_without_guard(openai_api)
    openai_api.clear()

    graph = _graph(FitToModel(_llm(url, **kwargs)))
    config = {"configurable": {"thread_id": "t1"}}
    answers = []
    try:
        state = graph.invoke({"messages": messages}, config)
        answers.append(state["messages"][-1].content)
        for n in range(3):
            turn = HumanMessage(f"Follow-up {n}: and the tests for that fix?")
            state = graph.invoke({"messages": [turn]}, config)
            answers.append(state["messages"][-1].content)
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__}: {exc}\n{openai_api.report()}") from exc
    assert_conforms(openai_api, at_least=4)
    assert answers == ["Short answer."] * 4
    assert len(state["messages"]) == len(messages) + 7, "the checkpoint keeps the whole thread"
