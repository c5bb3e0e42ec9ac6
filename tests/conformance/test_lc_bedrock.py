"""Claude on Amazon Bedrock: langchain-aws's ``ChatBedrockConverse`` and
``init_chat_model("bedrock_converse:...")``, pointed at a loopback emulator of Bedrock's Converse
API (``endpoint_url``; boto3 signs every request with SigV4, as against the service).

Bedrock's model ids are not the model's name (``anthropic.claude-3-5-haiku-20241022-v1:0``, a
cross-region inference profile ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``): the guard reads
the window of the model they name, and fits a 120-turn thread of over 200,000 Claude tokens that
the service refuses unguarded. Every surface: the guard (invoke, ainvoke, stream, astream,
batch; with tools bound), the agent middleware, and the fitted history in a chain.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain.chat_models import init_chat_model
from langchain_aws import ChatBedrockConverse

from langchain_session_migrator import FitToModel
from tests.conformance._bedrock_api import BedrockEmulator
from tests.conformance._http import Calls, Text
from tests.conformance._lc import CALLS, TOOLS, answer_text, ask_through_history, lc_messages, run
from tests.conformance.conftest import assert_conforms, guard_note

HAIKU = "anthropic.claude-3-5-haiku-20241022-v1:0"  # Claude 3.5: the input alone is checked
SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"  # an inference profile; input + max_tokens
_KEYS = {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"}


@pytest.fixture
def bedrock_api() -> Iterator[BedrockEmulator]:
    emulator = BedrockEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()


def _bedrock(url: str, model: str = HAIKU, **kwargs: Any) -> ChatBedrockConverse:
    return ChatBedrockConverse(
        model=model, endpoint_url=url, region_name="us-east-1", **_KEYS, **kwargs
    )


@pytest.mark.parametrize("call", CALLS)
def test_the_guard_fits_claude_on_bedrock(
    bedrock_api: BedrockEmulator, claude_thread: Any, call: str
) -> None:
    guard = FitToModel(_bedrock(bedrock_api.url))
    window = guard.window(guard.model)
    assert (window.name, window.context_window) == ("claude-3-5-haiku-20241022", 200_000)
    out = run(guard, call, lc_messages(claude_thread))
    assert answer_text(out), guard_note(guard)
    assert guard.last_report is not None
    assert guard.last_report.decision == "compressed"
    assert_conforms(bedrock_api)


@pytest.mark.parametrize("max_tokens", [None, 32_000])
def test_an_inference_profile_through_init_chat_model(
    bedrock_api: BedrockEmulator, claude_thread: Any, max_tokens: int | None
) -> None:
    """Sonnet 4.5 checks input + max_tokens against the window: the guard reserves what the
    request asks for (or the service's default when it asks for nothing)."""
    extra = {} if max_tokens is None else {"max_tokens": max_tokens}
    model = init_chat_model(
        f"bedrock_converse:{SONNET}",
        endpoint_url=bedrock_api.url,
        region_name="us-east-1",
        **_KEYS,
        **extra,
    )
    guard = FitToModel(model)
    assert guard.window(guard.model).context_window == 200_000
    assert answer_text(guard.invoke(lc_messages(claude_thread))), guard_note(guard)
    assert_conforms(bedrock_api)
    assert bedrock_api.requests[-1].max_tokens == max_tokens


def test_unguarded_is_refused_with_bedrocks_message(
    bedrock_api: BedrockEmulator, claude_thread: Any
) -> None:
    with pytest.raises(Exception, match="prompt is too long"):
        _bedrock(bedrock_api.url).invoke(lc_messages(claude_thread))
    assert bedrock_api.refusals, bedrock_api.report()


def test_tools_bound_to_the_guard(bedrock_api: BedrockEmulator, claude_thread: Any) -> None:
    bedrock_api.script(Calls.one("lookup_0", customer_id="c1", invoice_number="i1"))
    guard = FitToModel(_bedrock(bedrock_api.url)).bind_tools(TOOLS)
    out = guard.invoke(lc_messages(claude_thread))
    assert out.tool_calls
    assert out.tool_calls[0]["name"] == "lookup_0"
    sent = bedrock_api.requests[-1].body
    assert len(sent["toolConfig"]["tools"]) == len(TOOLS)
    assert_conforms(bedrock_api)


def test_the_agent_middleware_on_bedrock(bedrock_api: BedrockEmulator, claude_thread: Any) -> None:
    """``create_agent`` with ``FitToModelMiddleware``: a tool call, its answer, the final reply,
    every request inside the window."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    from langchain_session_migrator import FitToModelMiddleware

    @tool
    def balance(customer_id: str) -> str:
        """The customer's balance."""
        return f"{customer_id}: 12.50 EUR"

    bedrock_api.script(Calls.one("balance", customer_id="c7"), Text("It is 12.50 EUR."))
    agent = create_agent(
        _bedrock(bedrock_api.url), tools=[balance], middleware=[FitToModelMiddleware()]
    )
    state = agent.invoke({"messages": lc_messages(claude_thread)[1:]})
    assert answer_text(state["messages"][-1]) == "It is 12.50 EUR."
    assert len(bedrock_api.requests) == 2
    assert_conforms(bedrock_api)


@pytest.mark.filterwarnings("ignore::langchain_core._api.deprecation.LangChainDeprecationWarning")
def test_the_history_fits_claude_on_bedrock(
    bedrock_api: BedrockEmulator, claude_thread: Any
) -> None:
    """``FittedChatMessageHistory(model=ChatBedrockConverse(...))`` in a
    ``RunnableWithMessageHistory`` chain: fitted to the window of the model the id names."""
    from langchain_session_migrator import FittedChatMessageHistory

    model = _bedrock(bedrock_api.url)
    history = FittedChatMessageHistory("bedrock", model=model, store="memory://")
    history.add_messages(lc_messages(claude_thread)[1:-1])
    out = ask_through_history(model, history)
    assert answer_text(out)
    assert history.last_report is not None
    assert history.last_report.decision == "compressed"
    assert not bedrock_api.refusals, bedrock_api.report()
