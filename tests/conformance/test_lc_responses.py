"""OpenAI's Responses API through the LangChain guards: ``ChatOpenAI(use_responses_api=True)``
(and a reasoning model with ``reasoning_effort`` and ``max_tokens``, sent as
``max_output_tokens``) behind ``FitToModel`` and in a ``create_agent`` loop with
``FitToModelMiddleware``, on a loopback emulator of the Responses API that counts and refuses
as the service does (``input + max_output_tokens`` within the window; every
``function_call_output`` answering a ``function_call``). Unguarded, each request is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from langchain.agents import create_agent
from langchain_openai import ChatOpenAI

from langchain_session_migrator import FitToModel, FitToModelMiddleware
from tests.conformance._http import Calls, Text
from tests.conformance._lc import TOOLS, lc_messages
from tests.conformance._responses_api import ResponsesEmulator
from tests.conformance.conftest import assert_conforms, assert_refused_without_guard

LOOKUP = Calls.one("ledger_lookup_0", customer_id="cus_42", invoice_number="INV-2291")


@pytest.fixture
def responses_api() -> Iterator[ResponsesEmulator]:
    emulator = ResponsesEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()


def _llm(url: str, model: str = "gpt-4", **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(  # type: ignore[call-arg]
        model=model, base_url=url, api_key="test", use_responses_api=True, **kwargs
    )


def _paths(api: ResponsesEmulator) -> set[str]:
    return {r.path for r in api.requests}


@pytest.mark.parametrize("call", ["invoke", "stream"])
def test_the_guard_fits_a_responses_request(
    responses_api: ResponsesEmulator, long_thread: Any, call: str
) -> None:
    messages = lc_messages(long_thread)
    responses_api.script(Text("Paid."))
    with pytest.raises(openai.BadRequestError, match="context window"):
        _llm(responses_api.base_url).invoke(messages)
    assert_refused_without_guard(responses_api)
    responses_api.clear()

    guard = FitToModel(_llm(responses_api.base_url, max_tokens=1_000))
    responses_api.script(Text("INV-2291 is paid."))
    if call == "invoke":
        answer = guard.invoke(messages)
    else:
        answer = None
        for chunk in guard.stream(messages):
            answer = chunk if answer is None else answer + chunk
    assert_conforms(responses_api)
    assert _paths(responses_api) == {"/v1/responses"}
    assert answer is not None
    assert "paid" in answer.text


def test_an_agent_on_the_responses_api(responses_api: ResponsesEmulator, long_thread: Any) -> None:
    messages = lc_messages(long_thread)
    agent = create_agent(
        _llm(responses_api.base_url), TOOLS[:4], middleware=[FitToModelMiddleware()]
    )
    responses_api.script(LOOKUP, Text("The invoice is paid."))
    try:
        state = agent.invoke({"messages": messages})
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__}: {exc}\n{responses_api.report()}") from exc
    assert_conforms(responses_api, at_least=2)
    # the second request carries the call and its output, paired (the emulator checks it)
    second = responses_api.accepted[-1].body["input"]
    assert any(i.get("type") == "function_call_output" for i in second)
    assert "paid" in str(state["messages"][-1].content)


def test_a_reasoning_model_keeps_its_output_reserve(
    responses_api: ResponsesEmulator, claude_thread: Any
) -> None:
    messages = lc_messages(claude_thread)
    kwargs = {"reasoning_effort": "high", "max_tokens": 100_000}
    responses_api.script(Text("Paid."))
    with pytest.raises(openai.BadRequestError, match="context window"):
        _llm(responses_api.base_url, "o4-mini", **kwargs).invoke(messages)
    assert_refused_without_guard(responses_api)
    responses_api.clear()

    guard = FitToModel(_llm(responses_api.base_url, "o4-mini", **kwargs))
    responses_api.script(Text("INV-2291 is paid."))
    guard.invoke(messages)
    assert_conforms(responses_api)
    sent = responses_api.accepted[-1]
    assert sent.body["max_output_tokens"] == 100_000
    assert sent.body["reasoning"]["effort"] == "high"
    assert sent.prompt_tokens + 100_000 <= sent.window


def test_the_llamaindex_guard_fits_a_responses_request(
    responses_api: ResponsesEmulator, long_thread: Any
) -> None:
    from llama_index.core.llms import ChatMessage
    from llama_index.llms.openai import OpenAIResponses

    from llamaindex_session_migrator import FitToModelLLM

    messages = [ChatMessage(role="system", content="You are a billing assistant.")]
    messages += [ChatMessage(role=r, content=t) for r, t in long_thread]
    messages.append(ChatMessage(role="user", content="Is INV-2291 paid?"))

    def llm() -> OpenAIResponses:
        return OpenAIResponses(
            model="gpt-4", api_base=responses_api.base_url, api_key="test", max_output_tokens=1_000
        )

    responses_api.script(Text("Paid."))
    with pytest.raises(openai.BadRequestError, match="context window"):
        llm().chat(messages)
    assert_refused_without_guard(responses_api)
    responses_api.clear()

    responses_api.script(Text("INV-2291 is paid."))
    answer = FitToModelLLM(llm()).chat(messages)
    assert not responses_api.refusals, responses_api.report()
    assert "paid" in str(answer.message.content)
    assert responses_api.accepted[-1].body["max_output_tokens"] == 1_000


def test_the_history_fits_a_responses_model(
    responses_api: ResponsesEmulator, long_thread: Any
) -> None:
    """``FittedChatMessageHistory(model=ChatOpenAI(use_responses_api=True))`` in a chain."""
    from langchain_session_migrator import FittedChatMessageHistory
    from tests.conformance._lc import answer_text, ask_through_history

    model = _llm(responses_api.base_url)
    history = FittedChatMessageHistory("responses", model=model, store="memory://")
    history.add_messages(lc_messages(long_thread)[1:-1])
    assert answer_text(ask_through_history(model, history))
    assert _paths(responses_api) == {"/v1/responses"}
    assert not responses_api.refusals, responses_api.report()


def test_a_llamaindex_memory_on_a_responses_model(
    responses_api: ResponsesEmulator, long_thread: Any
) -> None:
    """``SessionMigratorMemory`` built on ``OpenAIResponses(max_output_tokens=...)`` under a
    chat engine: the memory leaves the output's room, and the request is accepted."""
    from llama_index.core.chat_engine import SimpleChatEngine
    from llama_index.llms.openai import OpenAIResponses

    from tests.conformance._li import fitted_memory

    llm = OpenAIResponses(
        model="gpt-4", api_base=responses_api.base_url, api_key="test", max_output_tokens=1_000
    )
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=fitted_memory(llm, long_thread))
    assert engine.chat("Is INV-2291 paid?").response
    assert _paths(responses_api) == {"/v1/responses"}
    assert not responses_api.refusals, responses_api.report()
