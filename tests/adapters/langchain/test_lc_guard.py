"""``FitToModel``: every request the wrapped chat model gets fits it, bound schemas counted.

Measured on what LangChain's fake chat models record, with an independent tiktoken count of the
messages in OpenAI's format plus the JSON of the tools and schemas they were sent with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import ConfigurableField
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from langchain_session_migrator import FittedHistoryFactory, FitToModel

MODES = ("invoke", "stream", "ainvoke", "astream")


@tool
def lookup_order(order_id: int, warehouse: str, carrier: str, notes: str) -> str:
    """Look up an order by number in a warehouse, with its carrier and any delivery notes.

    Use it whenever the user asks where an order is, when it ships, who carries it, whether it
    was delayed, and what the warehouse wrote about it; never guess an order's status.
    """
    return f"Order {order_id}: shipped"


class Report(BaseModel):
    """A structured quarterly report for the finance team."""

    title: str = Field(description="The report's title, as the board will read it. " * 20)
    summary: str = Field(description="The summary of revenue, churn and hiring. " * 20)
    risks: list[str] = Field(description="Every risk named, most severe first. " * 20)


class Boom(RuntimeError):
    pass


async def run(runnable: Any, value: Any, mode: str, config: dict[str, Any] | None = None) -> None:
    if mode == "invoke":
        runnable.invoke(value, config)
    elif mode == "stream":
        for _ in runnable.stream(value, config):
            pass
    elif mode == "ainvoke":
        await runnable.ainvoke(value, config)
    else:
        async for _ in runnable.astream(value, config):
            pass


def long_conversation(kit: Any, turns: int = 20) -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage("You are the finance team's assistant.")]
    for n in range(turns):
        out.append(HumanMessage(f"Question {n}: " + kit.FILLER * 3))
        out.append(AIMessage(f"Answer {n}: " + kit.FILLER * 3))
    out.append(HumanMessage("And what is the outlook?"))
    return out


def request_tokens(kit: Any, model: Any, k: int = -1) -> int:
    """Call ``k`` of ``model``: its messages and its bound schemas, counted independently."""
    return int(kit.openai_tokens(model.received[k]) + kit.schema_tokens(model.received_kwargs[k]))


@pytest.mark.parametrize("mode", MODES)
async def test_bound_tools_are_counted(mode: str, kit: Any) -> None:
    small = kit.make_model("gpt-4o-mini", 1_500, 200)
    budget, _ = kit.budget_of(small)
    guarded = FitToModel(small).bind_tools([lookup_order, Report])
    await run(guarded, long_conversation(kit), mode)
    assert kit.schema_tokens(small.received_kwargs[-1]) > 400
    assert request_tokens(kit, small) <= budget
    assert guarded.last_report is not None
    assert guarded.last_report.decision == "compressed"
    kit.assert_paired(small.received[-1])

    # the same without counting the tools goes over: the count is what keeps it in
    unguarded = FitToModel(small.bind_tools([lookup_order, Report]), count_tools=False)
    await run(unguarded, long_conversation(kit), mode)
    assert request_tokens(kit, small) > budget


async def test_a_structured_output_schema_is_counted(kit: Any) -> None:
    small = kit.make_model("gpt-4o-mini", 1_500, 200)
    budget, _ = kit.budget_of(small)
    guarded = FitToModel(small).with_structured_output(Report)
    guarded.invoke(long_conversation(kit))  # (the fake model answers with no tool call)
    assert kit.schema_tokens(small.received_kwargs[-1]) > 300
    assert request_tokens(kit, small) <= budget


@pytest.mark.parametrize("mode", MODES)
async def test_a_fallback_is_fitted_on_its_first_call(mode: str, kit: Any) -> None:
    class Failing(kit.RecordingChatModel):  # type: ignore[misc, name-defined]
        def _generate(self, *args: Any, **kwargs: Any) -> Any:
            raise Boom("the provider is down")

        def _stream(self, *args: Any, **kwargs: Any) -> Any:
            raise Boom("the provider is down")

    primary = Failing(
        messages=iter([]),
        model_name="gpt-4o",
        profile={"max_input_tokens": 100_000, "max_output_tokens": 1_000},
    )
    small = kit.make_model("gpt-4o-mini", 1_500, 200)
    budget, _ = kit.budget_of(small)
    conversation = long_conversation(kit)
    assert kit.openai_tokens(conversation) > budget
    await run(FitToModel(primary.with_fallbacks([small])), conversation, mode)
    assert len(small.received) == 1
    assert request_tokens(kit, small) <= budget


async def test_configurable_alternatives_fit_the_model_the_config_selects(kit: Any) -> None:
    big = kit.make_model("gpt-4o", 100_000, 1_000)
    small = kit.make_model("gpt-4o-mini", 1_500, 200)
    budget, _ = kit.budget_of(small)
    llm = big.configurable_alternatives(
        ConfigurableField(id="model"), default_key="big", small=small
    )
    guarded = FitToModel(llm)
    conversation = long_conversation(kit)
    guarded.invoke(conversation)
    assert big.received[-1] == conversation  # it fits the big model: sent as is
    guarded.invoke(conversation, {"configurable": {"model": "small"}})
    assert request_tokens(kit, small) <= budget


def test_a_request_that_fits_goes_over_untouched(kit: Any) -> None:
    small = kit.make_model("gpt-4o-mini", 1_500, 200)
    conversation = long_conversation(kit, turns=1)
    FitToModel(small).invoke(conversation)
    assert all(a is b for a, b in zip(small.received[-1], conversation, strict=True))
    assert FitToModel(small).batch([conversation, "hi"])[1].content


def test_wrapping_a_chain_instead_of_the_model_says_what_to_do(kit: Any) -> None:
    small = kit.make_model("gpt-4o-mini", 1_500, 200)
    prompt = ChatPromptTemplate.from_messages([("human", "{input}")])
    with pytest.raises(TypeError, match=r"prompt \| FitToModel\(llm\)"):
        FitToModel(prompt | small)


@pytest.mark.parametrize("mode", MODES)
async def test_long_inputs_and_system_prompts_beside_the_history(
    mode: str,
    kit: Any,
    with_history: Callable[..., Any],
    make_factory: Callable[..., FittedHistoryFactory],
) -> None:
    """Issue 21, point 3: a 600-word input, a 500-word system prompt, a 2,000-token model."""
    model = kit.make_model("gpt-4o-mini", 2_000, 200)
    budget, _ = kit.budget_of(model)
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "You answer for the finance team. " + "Be precise and brief. " * 120),
            MessagesPlaceholder("history"),
            ("human", "{input}"),
        ]
    )
    history = make_factory(store="memory://", models={"gpt-4o-mini": model}, model_key=None)
    chain = with_history(
        prompt | FitToModel(model, history=history),
        history,
        input_messages_key="input",
        history_messages_key="history",
        history_factory_config=history.config_specs,
    ).with_config(callbacks=[history.watcher])
    config = {"configurable": {"session_id": f"long-{mode}"}}
    for n in range(6):
        words = 600 if n % 2 else 20
        await run(chain, {"input": f"Question {n}: " + "detail " * words}, mode, config)
    for k in range(len(model.received)):
        assert request_tokens(kit, model, k) <= budget, k
        kit.assert_paired(model.received[k])
    assert len(history("long-" + mode).full_messages) == 12  # the whole log is kept
