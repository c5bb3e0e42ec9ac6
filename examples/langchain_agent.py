"""A LangChain v1 agent whose every model call fits the model it goes to (offline, fake models).

``create_agent`` runs a tool-calling loop. A small middleware plays the role of a cost policy:
after the first model call of each run it routes the call to a small, cheap model. The last
middleware, :class:`~langchain_session_migrator.FitToModelMiddleware`, fits each request to the
model that is about to run: the large model gets the whole conversation, the small one a fitted
copy (system prompt with a summary of the cut part, the newest turns, every tool call with its
result). The agent's state keeps everything.

Run it with ``python examples/langchain_agent.py``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from langchain_session_migrator import FitToModelMiddleware, messages_to_core, window_for
from session_migrator import Budget, counter_for

CALLS: list[tuple[str, list[BaseMessage]]] = []


class FakeChatModel(GenericFakeChatModel):
    """A fake chat model with a name that logs what it is sent and can bind tools."""

    model_name: str

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        CALLS.append((self.model_name, list(messages)))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        kwargs.pop("tool_choice", None)
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


@tool
def order_status(order_id: int) -> str:
    """The shipping status of an order."""
    return (
        f"Order {order_id}: shipped from the Rotterdam warehouse on 3 March, carrier DHL, "
        "tracking number updated twice, customs cleared, invoice attached, no open issues."
    )


def script() -> Iterator[AIMessage]:
    """What the model says on each call, whichever model it is."""
    for run in range(2):
        for n in range(3):
            order = 100 * (run + 1) + n
            call = {"name": "order_status", "args": {"order_id": order}, "id": f"call-{order}"}
            yield AIMessage("", tool_calls=[call])
        yield AIMessage(f"All three orders of batch {run + 1} are shipped and on time.")


class CheapAfterFirstCall(AgentMiddleware):
    """Routes every model call but the first of a run to the small model."""

    def __init__(self, small: Any) -> None:
        super().__init__()
        self.small = small

    def _route(self, request: ModelRequest) -> ModelRequest:
        first = not any(isinstance(m, ToolMessage) for m in request.messages[-1:])
        return request if first else request.override(model=self.small)

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(self._route(request))

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        return await handler(self._route(request))


def earlier_conversation() -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for n in range(12):
        out.append(HumanMessage(f"Week {n}: anything unusual in the returns queue?"))
        out.append(
            AIMessage(
                f"Week {n}: returns were normal; two damaged parcels were refunded and one "
                "address correction was sent to the carrier."
            )
        )
    return out


def main() -> None:
    replies = script()  # shared: the run goes on whichever model answers
    big = FakeChatModel(
        model_name="gpt-4o",
        messages=replies,
        profile={"max_input_tokens": 128_000, "max_output_tokens": 16_384},
    )
    small = FakeChatModel(  # a deliberately tiny window, so the fit is easy to see
        model_name="gpt-4o-mini",
        messages=replies,
        profile={"max_input_tokens": 700, "max_output_tokens": 200},
    )
    # --- the adoption: one middleware, last in the list -------------------------------------
    fit = FitToModelMiddleware(strategy="auto")
    agent = create_agent(
        big,
        [order_status],
        system_prompt="You are the logistics desk. Answer briefly.",
        middleware=[CheapAfterFirstCall(small), fit],
    )
    # -----------------------------------------------------------------------------------------

    messages = earlier_conversation()
    for batch in (1, 2):
        state: Any = {"messages": [*messages, HumanMessage(f"Check the orders of batch {batch}.")]}
        messages = list(agent.invoke(state)["messages"])
    schema = json.dumps(convert_to_openai_tool(order_status))

    print(f"{'call':>4}  {'model':<12} {'sent':>5} {'tokens':>7} {'budget':>7}  last message sent")
    for n, (name, sent) in enumerate(CALLS, 1):
        window = window_for(big if name == "gpt-4o" else small)
        counter = counter_for(window.tokenizer, model=window.name)
        tokens = counter.count_messages(messages_to_core(sent)) + counter.count_text(schema) + 8
        budget = Budget.for_window(window, exact=counter.exact).tokens
        paired = _paired(sent)
        last = f"{sent[-1].type}: {' '.join(sent[-1].text.split())[:40] or sent[-1].type}"
        print(
            f"{n:>4}  {name:<12} {len(sent):>5} {tokens:>7} {budget:>7}  {last}"
            + ("" if paired else "  <- ORPHAN TOOL MESSAGE")
        )
    print(f"\nthe agent's state holds all {len(messages)} messages; nothing was cut from it")
    fitted = next(sent for name, sent in CALLS if "session-migrator" in sent[0].text)
    print("a fitted call to gpt-4o-mini began with this system message:")
    print("  " + " ".join(fitted[0].text.split())[:200] + " ...")


def _paired(messages: list[BaseMessage]) -> bool:
    calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    results = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return calls == results


if __name__ == "__main__":
    main()
