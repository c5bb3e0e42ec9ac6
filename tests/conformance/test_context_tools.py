"""The ``read_context`` tool brings back a line the fit cut (a needle in a shrunk tool output).

A real ``ChatOpenAI`` on the OpenAI emulator runs ``create_agent`` with ``FitToModelMiddleware``
over an ``InMemorySaver`` thread (see :mod:`tests.conformance._needle` for the task and the
emulated model). With the middleware's ``read_context`` tool the model reads the cut line back
and answers with it, in two model calls; with ``context_tools=False`` the line never reaches
the model.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from langchain_session_migrator import FitToModelMiddleware
from session_migrator import ModelWindow
from tests.conformance._needle import (
    MODEL,
    NEEDLE,
    QUESTIONS,
    NeedleEmulator,
    build_log,
    status,
)
from tests.conformance.conftest import assert_conforms


@tool
def fetch_log(log: str) -> str:
    """Fetch a log by name."""
    return build_log()


@tool
def service_status(service: str) -> str:
    """The health of a service."""
    return status(service)


def run_agent(
    api: NeedleEmulator, middleware: FitToModelMiddleware, mode: str = "invoke"
) -> list[tuple[int, str]]:
    """Each turn of :data:`QUESTIONS` on one thread (``invoke`` or ``ainvoke``): (model calls,
    the answer)."""
    llm = ChatOpenAI(model=MODEL, base_url=api.base_url, api_key="test")  # type: ignore[arg-type]
    agent = create_agent(
        llm, [fetch_log, service_status], middleware=[middleware], checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "needle"}}
    turns = []
    for question in QUESTIONS:
        before = len(api.requests)
        value = {"messages": [HumanMessage(question)]}
        if mode == "ainvoke":
            state = asyncio.run(agent.ainvoke(value, config))
        else:
            state = agent.invoke(value, config)
        turns.append((len(api.requests) - before, str(state["messages"][-1].content)))
    return turns


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_with_read_context_the_agent_answers_with_the_cut_line(
    needle_api: NeedleEmulator, mode: str
) -> None:
    turns = run_agent(needle_api, FitToModelMiddleware(), mode)
    assert_conforms(needle_api, at_least=len(QUESTIONS) * 2)
    calls, answer = turns[-1]
    assert NEEDLE in answer, needle_api.report()
    assert calls == 2  # the model calls read_context, then answers
    # the line was cut from what the question's first request sent, and read back by the tool
    first_of_turn = needle_api.sent()[-2]
    assert NEEDLE not in first_of_turn
    assert 'read_context(id=\\"' in first_of_turn
    # the earlier turns took as many calls as without the tool
    assert [c for c, _ in turns[:-1]] == [2] * (len(QUESTIONS) - 1)


@pytest.mark.parametrize("window", [1536, 1024])
def test_at_small_windows_too(needle_api: NeedleEmulator, window: int) -> None:
    """The guard fitted to a 1,536- and a 1,024-token window: the line still comes back. A
    request that does not fit beside the tool's schema goes without it only when nothing in
    it names ``read_context`` (the model is never told of a tool it does not have)."""
    small = ModelWindow(MODEL, "openai", window, window, 512, "cl100k_base", "explicit")
    turns = run_agent(needle_api, FitToModelMiddleware(models={MODEL: small}))
    assert_conforms(needle_api, at_least=len(QUESTIONS) * 2)
    assert NEEDLE in turns[-1][1], needle_api.report()
    assert [c for c, _ in turns] == [2] * len(QUESTIONS)
    assert all(
        r.prompt_tokens is not None and r.prompt_tokens <= window for r in needle_api.requests
    )
    for body in needle_api.sent():
        if '"read_context"' not in body:
            assert "read_context(" not in body


def test_without_read_context_the_line_never_reaches_the_model(
    needle_api: NeedleEmulator,
) -> None:
    turns = run_agent(needle_api, FitToModelMiddleware(context_tools=False))
    assert_conforms(needle_api, at_least=len(QUESTIONS) * 2 - 1)
    calls, answer = turns[-1]
    assert NEEDLE not in answer
    assert calls == 1
    assert not any(NEEDLE in body for body in needle_api.sent())
    assert not any('"read_context"' in body for body in needle_api.sent())


# -- LlamaIndex: a FunctionAgent with a SessionMigratorMemory and read_context_tool(memory) -----


def run_function_agent(
    api: NeedleEmulator, with_tool: bool, memory_kind: str = "session"
) -> list[tuple[int, str]]:
    """Each turn of :data:`QUESTIONS` on one memory: (model calls, the answer). The LLM is
    guarded (a turn's own tool output is over the window); a ``SessionMigratorMemory`` fits
    each turn's start, a ``FittedMemory`` (``memory_kind="fitted"``) leaves the fit to the guard
    and tells it its messages' ids."""
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai import OpenAI

    from llamaindex_session_migrator import (
        FittedMemory,
        FitToModelLLM,
        SessionMigratorMemory,
        read_context_tool,
    )

    def fetch_log(log: str) -> str:
        """Fetch a log by name."""
        return build_log()

    def service_status(service: str) -> str:
        """The health of a service."""
        return status(service)

    llm = FitToModelLLM(OpenAI(model=MODEL, api_base=api.base_url, api_key="test"))
    if memory_kind == "fitted":  # (a queue that holds the log: upstream's default flushes it)
        memory: Any = FittedMemory.from_defaults(llm=llm, store="memory://", token_limit=100_000)
    else:
        memory = SessionMigratorMemory.from_defaults(llm=llm, store="memory://")
    tools = [FunctionTool.from_defaults(fetch_log), FunctionTool.from_defaults(service_status)]
    if with_tool:
        tools.append(read_context_tool(memory))
    agent = FunctionAgent(tools=tools, llm=llm)

    async def main() -> list[tuple[int, str]]:
        turns = []
        for question in QUESTIONS:
            before = len(api.requests)
            answer = await agent.run(user_msg=question, memory=memory)
            turns.append((len(api.requests) - before, str(answer)))
        return turns

    return asyncio.run(main())


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("memory_kind", ["session", "fitted"])
def test_function_agent_reads_the_cut_line_back(
    needle_api: NeedleEmulator, memory_kind: str
) -> None:
    turns = run_function_agent(needle_api, with_tool=True, memory_kind=memory_kind)
    assert_conforms(needle_api, at_least=len(QUESTIONS) * 2)
    calls, answer = turns[-1]
    assert NEEDLE in answer, needle_api.report()
    assert calls == 2  # the model calls read_context, then answers
    first_of_turn = needle_api.sent()[-2]
    assert NEEDLE not in first_of_turn
    assert 'read_context(id=\\"' in first_of_turn
    assert [c for c, _ in turns[:-1]] == [2] * (len(QUESTIONS) - 1)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("memory_kind", ["session", "fitted"])
def test_function_agent_without_the_tool_never_sees_the_line(
    needle_api: NeedleEmulator, memory_kind: str
) -> None:
    turns = run_function_agent(needle_api, with_tool=False, memory_kind=memory_kind)
    assert_conforms(needle_api, at_least=len(QUESTIONS) * 2 - 1)
    calls, answer = turns[-1]
    assert NEEDLE not in answer
    assert calls == 1
    assert not any(NEEDLE in body for body in needle_api.sent())


# -- LangGraph: a StateGraph tool loop whose model node calls a FitToModel guard ----------------


def run_graph(api: NeedleEmulator, with_tool: bool) -> list[tuple[int, str]]:
    """Each turn of :data:`QUESTIONS` on one checkpointed thread of a hand-built loop: a model
    node (``FitToModel`` with the tools bound) and a ``ToolNode`` (``read_context_tool()`` reads
    the graph's own state)."""
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    from langchain_session_migrator import FitToModel, read_context_tool

    tools = [fetch_log, service_status, *([read_context_tool()] if with_tool else [])]
    llm = ChatOpenAI(model=MODEL, base_url=api.base_url, api_key="test")  # type: ignore[arg-type]
    model = FitToModel(llm).bind_tools(tools)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "needle-graph"}}
    turns = []
    for question in QUESTIONS:
        before = len(api.requests)
        state = graph.invoke({"messages": [HumanMessage(question)]}, config)
        turns.append((len(api.requests) - before, str(state["messages"][-1].content)))
    return turns


def test_a_langgraph_loop_reads_the_cut_line_back(needle_api: NeedleEmulator) -> None:
    turns = run_graph(needle_api, with_tool=True)
    assert_conforms(needle_api, at_least=len(QUESTIONS) * 2)
    calls, answer = turns[-1]
    assert NEEDLE in answer, needle_api.report()
    assert calls == 2
    assert NEEDLE not in needle_api.sent()[-2]
    assert [c for c, _ in turns[:-1]] == [2] * (len(QUESTIONS) - 1)


def test_a_langgraph_loop_without_the_tool_never_sees_the_line(needle_api: NeedleEmulator) -> None:
    turns = run_graph(needle_api, with_tool=False)
    _, answer = turns[-1]
    assert NEEDLE not in answer
    assert not any(NEEDLE in body for body in needle_api.sent())
