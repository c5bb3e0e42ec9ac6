"""Anthropic extended thinking through the guards: ``ChatAnthropic(thinking={"type": "enabled",
"budget_tokens": N}, max_tokens=M)`` in a ``create_agent`` loop with ``FitToModelMiddleware``,
and behind ``FitToModel``, on the emulator of the Messages API, which checks the service's rules:
``N`` below ``M``, the final assistant message of a tool loop opening with its signed thinking
block, and ``input + M`` within the window (thinking of earlier turns is not counted).

Over a 200,000-token thread, unguarded, the request is refused; guarded, every request of the
tool loop is accepted, with the loop's thinking block kept first and unchanged.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessage, HumanMessage

from langchain_session_migrator import FitToModel, FitToModelMiddleware
from tests.conformance._anthropic_api import AnthropicEmulator, signature_of
from tests.conformance._http import Calls, Text
from tests.conformance._lc import TOOLS, lc_messages
from tests.conformance.conftest import assert_conforms, assert_refused_without_guard

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

MODEL = "claude-sonnet-4-20250514"
THINKING = {"type": "enabled", "budget_tokens": 2_000}
LOOKUP = Calls.one("ledger_lookup_0", customer_id="cus_42", invoice_number="INV-2291")
AGAIN = Calls.one("ledger_lookup_1", customer_id="cus_42", invoice_number="INV-2292")


def _llm(url: str, **kwargs: Any) -> ChatAnthropic:
    return ChatAnthropic(  # type: ignore[call-arg]
        model=MODEL, base_url=url, api_key="test", max_tokens=6_000, thinking=THINKING, **kwargs
    )


def _loop_opens_with_its_thinking(body: dict[str, Any]) -> bool:
    messages = body["messages"]
    last = messages[-1]
    if not (isinstance(last["content"], list) and last["content"][0].get("type") == "tool_result"):
        return True  # (a new turn: no tool loop to open)
    assistant = messages[-2]
    first = assistant["content"][0]
    return first["type"] == "thinking" and first["signature"] == signature_of(first["thinking"])


def test_the_emulator_holds_the_thinking_rules(anthropic_api: AnthropicEmulator) -> None:
    # (the cell can fail: each rule refuses a request that breaks it)
    client = anthropic.Anthropic(base_url=anthropic_api.url, api_key="test")
    with pytest.raises(anthropic.BadRequestError, match=r"greater than `thinking\.budget_tokens`"):
        client.messages.create(
            model=MODEL, max_tokens=1_500, thinking={"type": "enabled", "budget_tokens": 2_000},
            messages=[{"role": "user", "content": "Hi"}],
        )  # fmt: skip
    call = {"type": "tool_use", "id": "toolu_1", "name": "ledger_lookup_0", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "paid"}
    loop: list[Any] = [
        {"role": "user", "content": "Is INV-2291 paid?"},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
    ]
    with pytest.raises(anthropic.BadRequestError, match="must start with a thinking block"):
        client.messages.create(model=MODEL, max_tokens=4_000, thinking=THINKING, messages=loop)
    forged = {"type": "thinking", "thinking": "edited", "signature": signature_of("original")}
    loop[1] = {"role": "assistant", "content": [forged, call]}
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature`"):
        client.messages.create(model=MODEL, max_tokens=4_000, thinking=THINKING, messages=loop)


@pytest.mark.parametrize("call", ["invoke", "stream"])
def test_an_agent_with_thinking_fits_and_keeps_its_loops_thinking(
    anthropic_api: AnthropicEmulator, claude_thread: Any, call: str
) -> None:
    messages = lc_messages(claude_thread)
    plain = create_agent(_llm(anthropic_api.url), TOOLS[:4])
    anthropic_api.script(LOOKUP)
    with pytest.raises(anthropic.BadRequestError):
        plain.invoke({"messages": messages})
    assert_refused_without_guard(anthropic_api)
    anthropic_api.clear()

    agent = create_agent(
        _llm(anthropic_api.url, streaming=call == "stream"),
        TOOLS[:4],
        middleware=[FitToModelMiddleware()],
    )
    anthropic_api.script(LOOKUP, AGAIN, Text("INV-2291 and INV-2292 are paid."))
    try:
        state = agent.invoke({"messages": messages})
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__}: {exc}\n{anthropic_api.report()}") from exc
    assert_conforms(anthropic_api, at_least=3)
    assert all(_loop_opens_with_its_thinking(r.body) for r in anthropic_api.accepted)
    assert "are paid" in str(state["messages"][-1].content)


def test_the_guard_with_thinking_fits_a_thread(
    anthropic_api: AnthropicEmulator, claude_thread: Any
) -> None:
    guard = FitToModel(_llm(anthropic_api.url))
    anthropic_api.script(Text("It is paid."))
    answer = guard.invoke(lc_messages(claude_thread))
    assert_conforms(anthropic_api)
    assert isinstance(answer, AIMessage)
    # the reply's thinking block comes back with its signature, for the next request
    assert any(isinstance(b, dict) and b.get("type") == "thinking" for b in answer.content)
    follow = [*lc_messages(claude_thread), answer, HumanMessage("And INV-2292?")]
    anthropic_api.script(Text("Also paid."))
    guard.invoke(follow)
    assert_conforms(anthropic_api, at_least=2)


def test_the_history_fits_a_thinking_model(
    anthropic_api: AnthropicEmulator, claude_thread: Any
) -> None:
    """``FittedChatMessageHistory`` over ``ChatAnthropic(thinking=...)``: its view leaves the
    room of the model's ``max_tokens`` (thinking included), so the chain's request fits."""
    from langchain_session_migrator import FittedChatMessageHistory
    from tests.conformance._lc import answer_text, ask_through_history

    model = _llm(anthropic_api.url)
    history = FittedChatMessageHistory("thinking", model=model, store="memory://")
    history.add_messages(lc_messages(claude_thread)[1:-1])
    assert answer_text(ask_through_history(model, history))
    assert anthropic_api.requests[-1].max_tokens == 6_000
    assert not anthropic_api.refusals, anthropic_api.report()
