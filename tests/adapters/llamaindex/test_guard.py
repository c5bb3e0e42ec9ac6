"""FitToModelLLM: each LLM gets requests that fit its own window, tools and output included."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.tools import FunctionTool

from llamaindex_session_migrator import FitToModelLLM, SessionMigratorMemory
from session_migrator import ModelWindow
from tests.adapters.llamaindex._recording import RecordingLLM

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20:inspect"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211:inspect"),
]

MemoryFactory = Callable[..., SessionMigratorMemory]
FILLER = "Please explain it at length, with every detail you have, step by step. " * 6


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny and 21 degrees in {city}. " * 20


def _long_history(turns: int) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    for turn in range(turns):
        out.append(ChatMessage(role="user", content=f"Question {turn}: {FILLER}"))
        out.append(ChatMessage(role="assistant", content=f"Answer {turn}: {FILLER}"))
    return out


def test_a_request_that_fits_goes_out_untouched() -> None:
    inner = RecordingLLM()
    llm = FitToModelLLM(inner)
    messages = [
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(role="user", content="Hi"),
    ]
    llm.chat(messages)
    assert inner.requests[0].messages == messages
    assert llm.last_report is not None
    assert llm.last_report.decision == "fits"


def test_metadata_and_tool_calls_are_the_wrapped_llms() -> None:
    inner = RecordingLLM(context_window=8192, num_output=512, model_name="gpt-4o")
    llm = FitToModelLLM(inner)
    assert llm.metadata == inner.metadata
    assert llm.llm is inner
    tool = FunctionTool.from_defaults(fn=get_weather)
    response = llm.chat_with_tools([tool], user_msg="What is the weather in Oslo?")
    calls = llm.get_tool_calls_from_response(response)
    assert [(c.tool_name, c.tool_kwargs) for c in calls] == [("get_weather", {"city": "Oslo"})]


def test_a_long_history_is_fitted_with_tools_and_the_whole_num_output() -> None:
    inner = RecordingLLM(context_window=4096, num_output=2048)
    llm = FitToModelLLM(inner)
    tool = FunctionTool.from_defaults(fn=get_weather)
    history = _long_history(30)
    llm.chat_with_tools([tool], user_msg="What is the weather in Oslo?", chat_history=history)
    assert inner.problems() == []
    sent = inner.requests[-1]
    assert sent.messages[-1].content == "What is the weather in Oslo?"
    assert sent.count() + 2048 > 3000  # the room was used, not left empty
    assert llm.last_report is not None
    assert llm.last_report.decision == "compressed"


def test_a_completion_prompt_over_the_window_is_cut_inside() -> None:
    inner = RecordingLLM(context_window=4096, num_output=256)
    llm = FitToModelLLM(inner)
    llm.complete("start " + FILLER * 100 + " end")
    assert inner.problems() == []
    prompt = inner.requests[-1].prompt
    assert prompt is not None
    assert prompt.startswith("start")
    assert prompt.rstrip().endswith("end")


def test_a_memory_built_with_a_big_model_fits_a_small_one_on_its_first_call(
    make_memory: MemoryFactory,
) -> None:
    big = RecordingLLM(model_name="gpt-4o", context_window=128_000, num_output=1024)
    small = RecordingLLM(context_window=4096, num_output=256)
    memory = make_memory(llm=big)
    memory.set(_long_history(40))
    engine = SimpleChatEngine.from_defaults(llm=FitToModelLLM(small), memory=memory)
    engine.chat("And now, in one line?")
    assert len(small.requests) == 1
    assert small.problems() == []
    # the memory's stored messages were recognised: the cut ones are named by their stored ids
    stored = {m.id for m in memory.store.load(memory.session_id)}
    report = engine._llm.last_report  # type: ignore[attr-defined]
    cut = set(report.dropped_ids) | set(report.summarized_ids)
    assert cut
    assert cut <= stored


def test_a_larger_model_gets_back_what_the_memory_cut_for_a_smaller_one(
    make_memory: MemoryFactory,
) -> None:
    big = RecordingLLM(model_name="gpt-4o", context_window=128_000, num_output=1024)
    memory = make_memory(model=ModelWindow("tiny", "test", 2000, 2000, 100, "o200k_base", "x"))
    history = _long_history(20)
    memory.set(history)
    assert len(memory.get()) < len(history)  # the memory fits its own (small) model
    engine = SimpleChatEngine.from_defaults(llm=FitToModelLLM(big), memory=memory)
    engine.chat("Everything, please.")
    sent = big.requests[-1].messages
    assert [m.content for m in sent[:-1]] == [m.content for m in history]
    assert sent[-1].content == "Everything, please."
    assert big.problems() == []


async def test_planner_and_clerk_on_different_windows_each_fit_their_own(
    make_memory: MemoryFactory,
) -> None:
    planner_llm = RecordingLLM(
        model_name="gpt-4o", context_window=128_000, num_output=4096, handoff_to="clerk"
    )
    clerk_llm = RecordingLLM(context_window=4096, num_output=256)
    planner = FunctionAgent(
        name="planner",
        description="Plans the work.",
        system_prompt="You plan. Hand paperwork to the clerk.",
        llm=FitToModelLLM(planner_llm),
        tools=[get_weather],
        can_handoff_to=["clerk"],
    )
    clerk = FunctionAgent(
        name="clerk",
        description="Does the paperwork.",
        system_prompt="You are a clerk.",
        llm=FitToModelLLM(clerk_llm),
        tools=[get_weather],
    )
    workflow = AgentWorkflow(agents=[planner, clerk], root_agent="planner")
    memory = make_memory(llm=planner_llm)
    memory.set(_long_history(40))
    for turn in range(3):
        await workflow.run(user_msg=f"Turn {turn}: {FILLER} Ask the clerk.", memory=memory)
    assert clerk_llm.requests, "the clerk was never called"
    assert planner_llm.problems() == []
    assert clerk_llm.problems() == []
    # the planner, on its big window, saw the whole conversation
    assert any(
        r.messages and r.messages[1].content == f"Question 0: {FILLER}"
        for r in planner_llm.requests
    )


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="wraps a LlamaIndex LLM"):
        FitToModelLLM("gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown strategy"):
        FitToModelLLM(RecordingLLM(), strategy="shrink")
    with pytest.raises(ValueError, match="must not be negative"):
        FitToModelLLM(RecordingLLM(), reserve_tokens=-1)
