"""Sub-agents in LlamaIndex: a parent ``FunctionAgent`` hands a task to a sub-agent through
``subagent_tool``, on the OpenAI emulator with llama-index-llms-openai's ``OpenAI``.

The parent runs gpt-4 with a ``SessionMigratorMemory`` holding a long thread; the sub-agent runs
gpt-3.5-turbo-0613 (4,096 tokens) with a tool of its own. The sub-agent is sent a note of the
parent's work within 15% of its window, then the task; the parent gets the sub-agent's answer
and a line on its work, not its transcript.
"""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.llms.openai import OpenAI

from llamaindex_session_migrator import FitToModelLLM, subagent_tool
from session_migrator import TiktokenCounter, lookup_model
from tests.conformance._http import Calls, Text
from tests.conformance._li import fitted_memory
from tests.conformance._openai_api import OpenAIEmulator
from tests.conformance._threads import thread

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20:inspect"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211:inspect"),
]

CHILD_MODEL = "gpt-3.5-turbo-0613"
TRANSCRIPT_MARK = "ledger rows for INV-7: 2 charges on 2026-11-30"
ANSWER = "INV-7 was charged twice by the retry job; refund one charge."


def ledger(invoice: str) -> str:
    """The ledger rows of an invoice."""
    return f"{TRANSCRIPT_MARK} " + "row " * 300


def test_a_subagent_gets_the_parents_summary_and_returns_a_short_result(
    openai_api: OpenAIEmulator,
) -> None:
    child = FunctionAgent(
        tools=[ledger],
        llm=FitToModelLLM(OpenAI(model=CHILD_MODEL, api_base=openai_api.base_url, api_key="test")),
    )
    parent_llm = FitToModelLLM(OpenAI(model="gpt-4", api_base=openai_api.base_url, api_key="test"))
    research = subagent_tool(
        child, name="research", description="Hand a research task to the billing sub-agent."
    )
    parent = FunctionAgent(tools=[research], llm=parent_llm)
    openai_api.script(
        Calls.one("research", task="Find why INV-7 was billed twice."),  # the parent
        Calls.one("ledger", invoice="INV-7"),  # the sub-agent
        Text(ANSWER),  # the sub-agent
        Text("Refunding one charge of INV-7."),  # the parent
    )
    memory = fitted_memory(parent_llm, thread(120, 600))

    async def main() -> str:
        return str(await parent.run(user_msg="Why was INV-7 billed twice?", memory=memory))

    answer = asyncio.run(main())
    assert "Refunding one charge of INV-7." in answer
    assert not openai_api.refusals, openai_api.report()
    assert len(openai_api.requests) == 4
    child_first = openai_api.requests[1]
    assert child_first.body["model"] == CHILD_MODEL
    text = str(child_first.body["messages"][-1]["content"])
    assert text.startswith("[session-migrator: you are a sub-agent; what it has done so far]")
    assert text.endswith("Your task: Find why INV-7 was billed twice.")
    note = text.split("\n\nYour task:")[0]
    window = lookup_model(CHILD_MODEL)
    assert TiktokenCounter("cl100k_base").count_text(note) <= 0.15 * window.context_window
    assert "[turn " in note  # (made of the parent's thread)
    # the parent's last request carries the short result, not the sub-agent's transcript
    last = str(openai_api.requests[3].body["messages"])
    assert ANSWER in last
    assert "[sub-agent: 4 messages, 1 tool call(s)" in last
    assert TRANSCRIPT_MARK not in last
