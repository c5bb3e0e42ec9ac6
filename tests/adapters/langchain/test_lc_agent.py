"""``FitToModelMiddleware`` in a real ``create_agent`` graph with tools and fake chat models.

Another middleware switches to a small model mid-run (as a router or a cost policy would), or a
fallback takes over; every model call must get a request that fits the model it goes to, with
no orphan tool message, while the agent's own state keeps the whole conversation.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelFallbackMiddleware,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from langchain_session_migrator import FitToModelMiddleware, messages_from_core

FILLER = "Shipped from the Rotterdam warehouse, tracking updated, invoice attached. "
MODES = ("invoke", "stream", "ainvoke", "astream")


@tool
def lookup_order(order_id: int) -> str:
    """Look up the status of an order by its number."""
    return f"Order {order_id}: " + FILLER * 6


def script(rounds: int) -> Iterator[AIMessage]:
    """What the model says, whichever model it is: ``rounds`` tool calls, then an answer."""
    for r in range(rounds):
        yield AIMessage(
            "", tool_calls=[{"name": "lookup_order", "args": {"order_id": r}, "id": f"call-{r}"}]
        )
    yield AIMessage("All orders are on their way.")


class SwitchToSmall(AgentMiddleware):  # type: ignore[type-arg]
    """Routes every model call after the first ``after`` to ``small``."""

    def __init__(self, small: Any, after: int) -> None:
        super().__init__()
        self.small = small
        self.after = after
        self.calls = 0

    def _route(self, request: ModelRequest) -> ModelRequest:  # type: ignore[type-arg]
        self.calls += 1
        return request.override(model=self.small) if self.calls > self.after else request

    def wrap_model_call(
        self,
        request: ModelRequest,  # type: ignore[type-arg]
        handler: Callable[[ModelRequest], ModelResponse],  # type: ignore[type-arg]
    ) -> Any:
        return handler(self._route(request))

    async def awrap_model_call(
        self,
        request: ModelRequest,  # type: ignore[type-arg]
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],  # type: ignore[type-arg]
    ) -> Any:
        return await handler(self._route(request))


def seed(kit: Any, turns: int = 20) -> list[BaseMessage]:
    """An earlier conversation with plain turns and tool rounds."""
    messages: list[BaseMessage] = list(messages_from_core(kit.conversation(turns)))
    for n in range(4):
        messages += [
            HumanMessage(f"And order {100 + n}?"),
            AIMessage(
                "",
                tool_calls=[
                    {"name": "lookup_order", "args": {"order_id": 100 + n}, "id": f"old-{n}"}
                ],
            ),
            ToolMessage(f"Order {100 + n}: " + FILLER * 6, tool_call_id=f"old-{n}"),
            AIMessage(f"Order {100 + n} is on its way."),
        ]
    return messages


def tool_tokens(counter: Any) -> int:
    """The tool schemas' cost, counted as the middleware documents (schema JSON + 8)."""
    schema = json.dumps(convert_to_openai_tool(lookup_order), ensure_ascii=False)
    return int(counter.count_text(schema)) + 8


async def run(agent: Any, value: dict[str, Any], mode: str) -> list[BaseMessage]:
    """One agent run in ``mode``; the final state's messages."""
    if mode == "invoke":
        return list(agent.invoke(value)["messages"])
    if mode == "ainvoke":
        return list((await agent.ainvoke(value))["messages"])
    last: dict[str, Any] = {}
    if mode == "stream":
        for last in agent.stream(value, stream_mode="values"):  # noqa: B007
            pass
    else:
        async for last in agent.astream(value, stream_mode="values"):  # noqa: B007
            pass
    return list(last["messages"])


@pytest.mark.parametrize("mode", MODES)
async def test_a_mid_run_switch_never_exceeds_the_budget_or_orphans_a_tool(
    mode: str, kit: Any
) -> None:
    rounds = 4
    replies = script(rounds)
    big = kit.make_model("gpt-4o", 100_000, 4_000, replies=replies)
    small = kit.make_model("gpt-4o-mini", 1_500, 200, replies=replies)
    fit = FitToModelMiddleware(strategy="auto")
    agent = create_agent(
        big,
        [lookup_order],
        system_prompt="You are an order assistant. Be brief.",
        middleware=[SwitchToSmall(small, after=1), fit],
    )
    history = seed(kit)
    question = HumanMessage("Check orders 0 to 3 for me.")
    final = await run(agent, {"messages": [*history, question]}, mode)

    assert len(big.received) == 1
    assert len(big.received[0]) == 1 + len(history) + 1  # fits: sent whole, as is
    assert len(small.received) == rounds
    budget, counter = kit.budget_of(small)
    limit = budget - tool_tokens(counter)
    for sent in small.received:
        kit.assert_paired(sent)
        assert kit.tokens_sent(sent, counter) <= limit
        assert isinstance(sent[0], SystemMessage)
        assert sent[0].text.startswith("You are an order assistant.")
        assert sum(isinstance(m, SystemMessage) for m in sent) == 1  # summary folded in
        assert question.content in [m.content for m in sent]  # the current turn is kept
    assert fit.last_report is not None
    assert fit.last_report.decision == "compressed"
    # the agent's state was never cut: the whole conversation and the new turn are there
    assert len(final) == len(history) + 1 + 2 * rounds + 1
    assert [m.content for m in final[: len(history)]] == [m.content for m in history]


def test_a_request_that_fits_goes_through_untouched(kit: Any) -> None:
    big = kit.make_model("gpt-4o", 100_000, 4_000, replies=script(1))
    fit = FitToModelMiddleware()
    agent = create_agent(big, [lookup_order], middleware=[fit])
    history = seed(kit, 3)
    agent.invoke({"messages": [*history, HumanMessage("Check order 7.")]})
    assert [m.id for m in big.received[0][: len(history)]] == [m.id for m in history]
    assert all(a is not None for a in (m.id for m in big.received[0]))
    assert fit.last_report is not None
    assert fit.last_report.decision == "fits"


async def test_fallback_models_are_fitted_exactly(kit: Any) -> None:
    class Down(kit.RecordingChatModel):  # type: ignore[name-defined,misc]
        def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            self.received.append(list(messages))
            raise ConnectionError("overloaded")

    primary = Down(messages=iter([]), model_name="gpt-4o",
                   profile={"max_input_tokens": 100_000, "max_output_tokens": 4_000})  # fmt: skip
    backup = kit.make_model("gpt-4o-mini", 1_500, 200, replies=script(2))
    agent = create_agent(
        primary,
        [lookup_order],
        middleware=[ModelFallbackMiddleware(backup), FitToModelMiddleware(strategy="trim")],
    )
    history = seed(kit)
    await agent.ainvoke({"messages": [*history, HumanMessage("Check orders 0 and 1.")]})
    budget, counter = kit.budget_of(backup)
    assert len(primary.received[0]) == len(history) + 1  # the big model was offered everything
    assert len(backup.received) == 3
    for sent in backup.received:
        kit.assert_paired(sent)
        assert kit.tokens_sent(sent, counter) <= budget - tool_tokens(counter)


def test_summaries_roll_over_model_calls_with_a_langchain_summarizer(kit: Any) -> None:
    summarizer = kit.make_model(
        "acme-summarizer", 16_000, replies=iter(["Earlier: 24 questions."] * 20)
    )
    small = kit.make_model("gpt-4o-mini", 1_500, 200, replies=script(3))
    fit = FitToModelMiddleware(strategy="summarize", summarizer=summarizer)
    agent = create_agent(small, [lookup_order], middleware=[fit])
    agent.invoke({"messages": [*seed(kit, 24), HumanMessage("Check orders 0 to 2.")]})
    assert all("Earlier: 24 questions." in sent[0].text for sent in small.received)
    # each later call only folds the newly cut messages into the summary it already has
    assert len(summarizer.received) <= len(small.received)
    assert fit.last_report is not None
    assert fit.last_report.summary is not None


def test_unknown_models_fail_with_the_fix(kit: Any) -> None:
    mystery = kit.RecordingChatModel(messages=script(0), model_name="acme-mystery")
    agent = create_agent(mystery, [lookup_order], middleware=[FitToModelMiddleware()])
    from session_migrator import UnknownModelError

    with pytest.raises(UnknownModelError, match="register_model"):
        agent.invoke({"messages": [HumanMessage("hi")]})
    known = FitToModelMiddleware(models={"acme-mystery": "gpt-4o-mini"})
    assert known.window(mystery).max_input_tokens > 0


def test_a_model_without_a_name_is_fitted_by_its_class_name(kit: Any) -> None:
    from session_migrator import ModelWindow, UnknownModelError

    nameless = kit.RecordingChatModel(messages=script(0), model_name="")
    agent = create_agent(nameless, [lookup_order], middleware=[FitToModelMiddleware()])
    with pytest.raises(UnknownModelError, match="RecordingChatModel reports no model name"):
        agent.invoke({"messages": [HumanMessage("hi")]})
    # the fix the error names: the class name as a key of models=
    window = ModelWindow("small", "test", 2_000, 2_000, 200, "o200k_base", "explicit")
    fit = FitToModelMiddleware(models={"RecordingChatModel": window})
    nameless = kit.RecordingChatModel(messages=script(0), model_name="")
    agent = create_agent(nameless, [lookup_order], middleware=[fit])
    agent.invoke({"messages": [*seed(kit, 24), HumanMessage("Check order 7.")]})
    assert fit.last_report is not None
    assert fit.last_report.decision == "compressed"
    assert fit.last_report.budget < 2_000


def test_a_request_that_fits_is_sent_without_a_broken_tool_pair(kit: Any) -> None:
    # e.g. another middleware trimmed the state and left a tool result without its call
    big = kit.make_model("gpt-4o-mini", 100_000, 200)
    fit = FitToModelMiddleware()
    messages: list[Any] = [
        HumanMessage("Where is order 7?", id="u0"),
        ToolMessage("Order 7: shipped", tool_call_id="call-gone", id="orphan"),
        AIMessage("It shipped.", id="a0"),
        HumanMessage("And order 8?", id="u1"),
    ]
    request = ModelRequest(model=big, messages=messages, system_message=SystemMessage("Be brief."))
    sent = fit.fit_request(request)
    assert fit.last_report is not None
    assert fit.last_report.decision == "fits"
    assert fit.last_report.dropped_ids == ["orphan"]
    assert [m.id for m in sent.messages] == ["u0", "a0", "u1"]
    assert sent.messages[0] is messages[0]  # the caller's own objects
    whole = [m for m in messages if m.id != "orphan"]
    untouched = ModelRequest(model=big, messages=whole, system_message=SystemMessage("Be brief."))
    assert fit.fit_request(untouched) is untouched


@pytest.mark.parametrize("mode", ["stream", "astream"])
async def test_the_summary_is_not_streamed_to_the_user(kit: Any, mode: str) -> None:
    summarizer = kit.make_model("acme-summarizer", 16_000, replies=iter(["EARLIER-SUMMARY"] * 9))
    small = kit.make_model("gpt-4o-mini", 1_500, 200, replies=iter(["The final answer."]))
    fit = FitToModelMiddleware(strategy="summarize", summarizer=summarizer)
    agent = create_agent(small, [], middleware=[fit])
    value = {"messages": [*seed(kit, 24), HumanMessage("What now?")]}
    if mode == "stream":
        chunks = [c for c, _ in agent.stream(value, stream_mode="messages")]
    else:
        chunks = [c async for c, _ in agent.astream(value, stream_mode="messages")]
    assert summarizer.received  # the summary was written...
    assert "EARLIER-SUMMARY" in small.received[-1][0].text  # ...and sent to the model
    streamed = "".join(str(c.content) for c in chunks)
    assert "EARLIER-SUMMARY" not in streamed  # ...but not to the user
    assert "The final answer." in streamed


def test_converted_messages_are_reused_across_calls_but_not_when_changed(kit: Any) -> None:
    from langchain.agents.middleware import ModelRequest

    small = kit.make_model("gpt-4o-mini", 1_500, 200)
    fit = FitToModelMiddleware(strategy="trim")
    history = seed(kit)
    for n, message in enumerate(history):  # as in an agent's state, every message has an id
        message.id = message.id or f"m{n}"
    request = ModelRequest(model=small, messages=history, system_message=SystemMessage("Be brief."))
    first = [m.content for m in fit.fit_request(request).messages]
    assert len(fit._fitter._converted) == len(history)
    assert [m.content for m in fit.fit_request(request).messages] == first  # stable
    history[-1].content = "Order 103 was returned: " + FILLER * 40  # changed in place
    changed = fit.fit_request(request)
    assert "Order 103 was returned" in changed.messages[-1].text
    assert changed.messages[-1].text != first[-1]
    budget, counter = kit.budget_of(small)
    assert kit.tokens_sent([changed.system_message, *changed.messages], counter) <= budget
