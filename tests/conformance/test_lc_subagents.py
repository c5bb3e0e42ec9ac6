"""Sub-agents in LangChain: a parent ``create_agent`` hands a task to a sub-agent through
``subagent_tool``, on the OpenAI emulator with real ``ChatOpenAI`` models.

The parent runs gpt-4 (8,192 tokens) over a long thread; the sub-agent runs gpt-3.5-turbo-0613
(4,096 tokens) with a tool of its own. The sub-agent is sent a note of the parent's work within
15% of its window, then the task; the parent gets the sub-agent's answer and a line on its work,
not its transcript. A LangGraph ``StateGraph`` that calls the sub-agent graph from a node of its
own (a sub-graph) is driven the same way.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from langchain_session_migrator import FitToModelMiddleware, subagent_tool
from session_migrator import TiktokenCounter, lookup_model
from tests.conformance._http import Calls, Text
from tests.conformance._lc import lc_messages
from tests.conformance._openai_api import OpenAIEmulator
from tests.conformance._threads import thread

CHILD_MODEL = "gpt-3.5-turbo-0613"
TRANSCRIPT_MARK = "ledger rows for INV-7: 2 charges on 2026-11-30"
ANSWER = "INV-7 was charged twice by the retry job; refund one charge."


@tool
def ledger(invoice: str) -> str:
    """The ledger rows of an invoice."""
    return f"{TRANSCRIPT_MARK} " + "row " * 300


def _agents(openai_api: OpenAIEmulator) -> Any:
    child = create_agent(
        ChatOpenAI(model=CHILD_MODEL, base_url=openai_api.base_url, api_key="test"),  # type: ignore[arg-type]
        [ledger],
        middleware=[FitToModelMiddleware()],
    )
    research = subagent_tool(
        child,
        name="research",
        description="Hand a research task to the billing sub-agent.",
        model=CHILD_MODEL,
    )
    parent = create_agent(
        ChatOpenAI(model="gpt-4", base_url=openai_api.base_url, api_key="test"),  # type: ignore[arg-type]
        [research],
        middleware=[FitToModelMiddleware()],
    )
    return parent


def _script(openai_api: OpenAIEmulator) -> None:
    openai_api.script(
        Calls.one("research", task="Find why INV-7 was billed twice."),  # the parent
        Calls.one("ledger", invoice="INV-7"),  # the sub-agent
        Text(ANSWER),  # the sub-agent
        Text("Refunding one charge of INV-7."),  # the parent
    )


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_subagent_gets_the_parents_summary_and_returns_a_short_result(
    openai_api: OpenAIEmulator, mode: str
) -> None:
    parent = _agents(openai_api)
    _script(openai_api)
    value = {"messages": lc_messages(thread(120, 600))[1:]}
    state = asyncio.run(parent.ainvoke(value)) if mode == "ainvoke" else parent.invoke(value)
    assert state["messages"][-1].content == "Refunding one charge of INV-7."
    assert not openai_api.refusals, openai_api.report()
    assert len(openai_api.requests) == 4
    # the sub-agent's first request: the note of the parent's work, then the task
    child_first = openai_api.requests[1]
    assert child_first.body["model"] == CHILD_MODEL
    text = str(child_first.body["messages"][-1]["content"])
    assert text.startswith("[session-migrator: you are a sub-agent; what it has done so far]")
    assert text.endswith("Your task: Find why INV-7 was billed twice.")
    window = lookup_model(CHILD_MODEL)
    note = text.split("\n\nYour task:")[0]
    assert TiktokenCounter("cl100k_base").count_text(note) <= 0.15 * window.context_window
    assert "[turn " in note  # (made of the parent's thread)
    # the parent is given the answer and a line on the work, not the transcript
    result = [m for m in state["messages"] if isinstance(m, ToolMessage)][-1]
    assert ANSWER in str(result.content)
    assert "[sub-agent: 4 messages, 1 tool call(s)" in str(result.content)
    assert TRANSCRIPT_MARK not in str(result.content)
    assert TRANSCRIPT_MARK not in str(openai_api.requests[3].body)


def test_a_langgraph_subgraph_node_gets_the_parents_summary(openai_api: OpenAIEmulator) -> None:
    """A ``StateGraph`` whose node calls the parent agent graph (a sub-graph) that hands the task
    on: the state flows through, and the sub-agent still sees the parent's note."""
    from langgraph.graph import START, MessagesState, StateGraph

    parent = _agents(openai_api)
    graph = StateGraph(MessagesState)
    graph.add_node("team", parent)
    graph.add_edge(START, "team")
    app = graph.compile()
    _script(openai_api)
    state = app.invoke({"messages": [HumanMessage("Why was INV-7 billed twice? Fix it.")]})
    assert state["messages"][-1].content == "Refunding one charge of INV-7."
    child_first = str(openai_api.requests[1].body["messages"][-1]["content"])
    assert "Why was INV-7 billed twice?" in child_first  # (the parent's note)
    assert not openai_api.refusals, openai_api.report()
