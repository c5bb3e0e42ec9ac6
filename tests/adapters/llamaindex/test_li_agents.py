"""FunctionAgent and AgentWorkflow with tools, the memory and a fake function-calling model:
every model call fits, tool-call scratchpads persist with their pairing, a model change refits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock

from llamaindex_session_migrator import SessionMigratorMemory, from_chat_messages
from session_migrator.messages._rules import is_valid_chat

MemoryFactory = Callable[..., SessionMigratorMemory]
LLMFactory = Callable[..., Any]

# llama-index workflows inspect agents with inspect.getmembers, which reads pydantic's deprecated
# instance attributes: exactly those warnings, raised in ``inspect``, are ignored here.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20:inspect"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211:inspect"),
]

FILLER = "Please explain it at length, with every detail you have, step by step. " * 2


def _question(turn: int) -> str:
    if turn % 3 == 0:
        return f"Question {turn}: {FILLER} What is the weather in City{turn}?"
    return f"Question {turn}: {FILLER}"


def _check_fits(llm: Any, since: int = 0) -> None:
    for i in range(since, len(llm.received)):
        assert llm.sent_tokens(i) <= llm.input_budget, f"call {i} overflowed the window"


def _check_pairs(messages: list[ChatMessage]) -> None:
    """Every tool call in the log is answered by the next messages, and every answer has a call."""
    core = from_chat_messages(messages)
    assert is_valid_chat(core)
    calls = [b.tool_call_id for m in messages for b in m.blocks if isinstance(b, ToolCallBlock)]
    answers = [m.additional_kwargs.get("tool_call_id") for m in messages if m.role.value == "tool"]
    assert calls
    assert calls == answers


async def _run(agent: Any, memory: SessionMigratorMemory, turns: range) -> None:
    for turn in turns:
        result = await agent.run(user_msg=_question(turn), memory=memory)
        assert str(result).startswith("reply")


async def test_function_agent_long_conversation(
    make_memory: MemoryFactory, make_llm: LLMFactory, weather_tool: Callable[[str], str]
) -> None:
    llm = make_llm(model_name="gpt-4o", context_window=2500, num_output=150)
    memory = make_memory(llm=llm, reserve_input=300)
    agent = FunctionAgent(tools=[weather_tool], llm=llm, system_prompt="You are a weather agent.")
    await _run(agent, memory, range(24))
    _check_fits(llm)
    assert memory.last_report is not None
    assert memory.last_report.decision == "compressed"
    full = memory.get_all()
    _check_pairs(full)
    assert len(full) == 24 * 2 + 8 * 2  # question, answer, and a call + result every third turn
    assert any("Sunny" in (m.content or "") for m in full if m.role.value == "tool")

    large = len(llm.received[-1])
    llm.model_name, llm.context_window = "gpt-4o-mini", 1200
    mark = len(llm.received)
    await _run(agent, memory, range(24, 26))
    _check_fits(llm, mark)
    assert len(llm.received[-1]) < large
    llm.model_name, llm.context_window = "gpt-4o", 2500
    mark = len(llm.received)
    await _run(agent, memory, range(26, 28))
    _check_fits(llm, mark)
    assert llm.sent_tokens(-1) > llm.sent_tokens(mark - 1)
    _check_pairs(memory.get_all())
    moves = [(r.from_model, r.to_model) for r in memory.store.migrations("s1")]
    assert ("gpt-4o", "gpt-4o-mini") in moves
    assert moves[-1] == ("gpt-4o-mini", "gpt-4o")


async def test_agent_workflow_with_tools(
    make_memory: MemoryFactory, make_llm: LLMFactory, weather_tool: Callable[[str], str]
) -> None:
    llm = make_llm(model_name="gpt-4o", context_window=2000, num_output=150)
    memory = make_memory("wf", llm=llm, reserve_input=300)
    agent = FunctionAgent(
        name="weather", description="Answers weather questions.", tools=[weather_tool], llm=llm
    )
    workflow = AgentWorkflow(agents=[agent], root_agent="weather")
    await _run(workflow, memory, range(18))
    _check_fits(llm)
    _check_pairs(memory.get_all())
    assert memory.last_report is not None
    assert memory.last_report.decision == "compressed"


def test_function_agent_from_sync_code(
    make_memory: MemoryFactory, make_llm: LLMFactory, weather_tool: Callable[[str], str]
) -> None:
    llm = make_llm(context_window=1500)
    memory = make_memory(llm=llm, reserve_input=300)
    agent = FunctionAgent(tools=[weather_tool], llm=llm)

    async def main() -> None:
        await _run(agent, memory, range(9))

    asyncio.run(main())
    _check_fits(llm)
    _check_pairs(memory.get_all())


async def test_agent_without_a_memory_llm_follows_the_model_that_ran(
    make_memory: MemoryFactory, make_llm: LLMFactory, weather_tool: Callable[[str], str]
) -> None:
    llm = make_llm(model_name="gpt-4o-mini", context_window=1500)
    memory = make_memory()  # neither llm nor Settings.llm: the first call is observed
    agent = FunctionAgent(tools=[weather_tool], llm=llm)
    await _run(agent, memory, range(12))
    assert memory.model_source == "observed"
    assert memory.model_window is not None
    assert memory.model_window.context_window == 1500
    _check_fits(llm, 2)


STATE_HEADER = "Current state:"


@pytest.mark.parametrize("kind", ["function_agent", "agent_workflow"])
async def test_the_state_an_agent_writes_into_the_history_stays_in_one_call(
    kind: str, make_memory: MemoryFactory, make_llm: LLMFactory, weather_tool: Callable[[str], str]
) -> None:
    """An agent with a state rewrites, in place, the text of the last message the memory gave
    it (``setup_agent``), once per run: only that run's first model call carries it, never a
    later call, a later turn or the log."""
    llm = make_llm(model_name="gpt-4o", context_window=2500, num_output=150)
    memory = make_memory(llm=llm, reserve_input=400)
    state = {"units": "metric"}
    agent: Any
    if kind == "function_agent":
        agent = FunctionAgent(tools=[weather_tool], llm=llm, initial_state=state)
    else:
        weather = FunctionAgent(
            name="weather", description="Answers weather questions.", tools=[weather_tool], llm=llm
        )
        agent = AgentWorkflow(agents=[weather], root_agent="weather", initial_state=state)
    turns = 24
    await _run(agent, memory, range(turns))
    _check_fits(llm)
    assert memory.last_report is not None
    assert memory.last_report.decision == "compressed"
    with_state = [
        [i for i, m in enumerate(call) if STATE_HEADER in (m.content or "")]
        for call in llm.received
    ]
    for call, marks in zip(llm.received, with_state, strict=True):
        assert marks in ([], [len(call) - 1])  # only ever the newest message of a call ...
    assert sum(1 for marks in with_state if marks) == turns  # ... of each run's first call
    assert len(llm.received) > turns  # the weather turns made a second call after the tool
    full = memory.get_all()
    assert not any(STATE_HEADER in (m.content or "") for m in full)
    assert not any(STATE_HEADER in (m.content or "") for m in memory.get())
    assert not any(STATE_HEADER in m.text for m in memory.store.load(memory.session_id))
    _check_pairs(full)
