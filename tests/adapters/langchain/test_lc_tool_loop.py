"""A tool loop through ``RunnableWithMessageHistory`` (issue 21, point 1): the history ends with
the model's tool call, and the call's input is its results. The call goes with them, whether the
history fits or is compressed, so no request carries a tool result without its call."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from langchain_session_migrator import FittedHistoryFactory, FitToModel

PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "You look up orders for the support team."),
        MessagesPlaceholder("history"),
        MessagesPlaceholder("input"),
    ]
)


def replies(kit: Any) -> Iterator[AIMessage]:
    for n in range(1_000):
        yield AIMessage(
            "", tool_calls=[{"name": "lookup_order", "args": {"order_id": n}, "id": f"call-{n}"}]
        )
        yield AIMessage(f"Order {n} is on its way. " + kit.FILLER)


@pytest.mark.parametrize("guarded", [False, True])
async def test_the_pending_call_goes_with_its_results(
    guarded: bool,
    kit: Any,
    with_history: Callable[..., Any],
    make_factory: Callable[..., FittedHistoryFactory],
) -> None:
    model = kit.make_model("gpt-4o-mini", 1_500, 200, replies=replies(kit))
    budget, _ = kit.budget_of(model)
    history = make_factory(store="memory://", models={"gpt-4o-mini": model}, model_key=None)
    llm = FitToModel(model, history=history) if guarded else model
    chain = with_history(
        PROMPT | llm,
        history,
        input_messages_key="input",
        history_messages_key="history",
        history_factory_config=history.config_specs,
    ).with_config(callbacks=[history.watcher])
    config = {"configurable": {"session_id": f"loop-{guarded}"}}
    for n in range(15):
        call = await chain.ainvoke({"input": [HumanMessage(f"Where is order {n}?")]}, config)
        assert call.tool_calls
        result = ToolMessage(f"Order {n}: " + kit.FILLER * 4, tool_call_id=call.tool_calls[0]["id"])
        chain.invoke({"input": [result]}, config)
    assert len(model.received) == 30
    for k, sent in enumerate(model.received):
        kit.assert_paired(sent)
        if k % 2:  # the tool results are this call's input: their call came with them
            assert isinstance(sent[-1], ToolMessage)
            assert isinstance(sent[-2], AIMessage)
            assert sent[-2].tool_calls[0]["id"] == sent[-1].tool_call_id
        if guarded:
            assert kit.openai_tokens(sent) <= budget, k
    view = history(f"loop-{guarded}")
    assert view.last_report is not None
    assert view.last_report.decision == "compressed"
    assert len(view.full_messages) == 60
