"""Anthropic's prompt cache over a whole conversation: ``FittedChatMessageHistory`` in a
``RunnableWithMessageHistory`` chain with the real ``ChatAnthropic``, against the emulator of
the Messages API, which reads and writes its prompt cache as the service does (breakpoints, a
20-block look-back, 1,024 tokens at least).

The history puts a ``cache_control`` breakpoint at the end of what the next request sends again
(``MigrationReport.stable_through``): the whole history while it fits, the end of the kept turns
past the budget. Without it nothing is read from the cache.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_session_migrator import FittedChatMessageHistory
from session_migrator import ModelWindow
from tests.conformance._anthropic_api import AnthropicEmulator
from tests.conformance._http import Text

pytestmark = pytest.mark.filterwarnings(
    "ignore:The model .* is deprecated:DeprecationWarning",
    "ignore:.*RunnableWithMessageHistory.*:DeprecationWarning",
    "ignore::langchain_core._api.deprecation.LangChainDeprecationWarning",
)

MODEL = "claude-3-7-sonnet-20250219"
# a small window, so that the conversation goes past it within the test
WINDOW = ModelWindow(MODEL, "anthropic", 6_000, 6_000, 1_000, "o200k_base", "explicit")
TURNS = 90


def _chain(url: str, history: FittedChatMessageHistory) -> RunnableWithMessageHistory:
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "You are a logistics assistant. Answer about orders and warehouses."),
            MessagesPlaceholder("history"),
            ("human", "{question}"),
        ]
    )
    model = ChatAnthropic(model=MODEL, base_url=url, api_key="test", max_tokens=1_000)  # type: ignore[call-arg]
    return RunnableWithMessageHistory(
        prompt | model,
        lambda session_id: history,
        input_messages_key="question",
        history_messages_key="history",
    )


def _converse(api: AnthropicEmulator, history: FittedChatMessageHistory) -> list[Any]:
    chain = _chain(api.url, history)
    for n in range(TURNS):
        api.script(
            Text(
                f"Order {n} leaves the north warehouse on day {n % 7}; its pallets are "
                f"checked twice and the carrier collects them at dock {n % 5}. " * 3
            )
        )
        chain.invoke(
            {"question": f"Where is order {n} now, and when does it leave the warehouse?"},
            config={"configurable": {"session_id": "orders"}},
        )
    return api.accepted


def _shares(requests: list[Any]) -> tuple[float, float]:
    """(the share of prompt tokens read from the cache over the requests past the budget, the
    share of requests past it)."""
    past = [r for r in requests if len(r.body["messages"]) > 1 and r.prompt_tokens > 3_000]
    read = sum(r.cache_read for r in past)
    prompt = sum(r.prompt_tokens for r in past)
    return read / prompt if prompt else 0.0, len(past) / len(requests)


def test_the_history_marks_where_the_cache_can_read(anthropic_api: AnthropicEmulator) -> None:
    history = FittedChatMessageHistory("orders", model=WINDOW, store="memory://")
    requests = _converse(anthropic_api, history)
    assert not anthropic_api.refusals
    assert history.last_report.decision == "compressed"  # (past the budget)
    marked = [
        r
        for r in requests
        if any(
            isinstance(b, dict) and b.get("cache_control")
            for m in r.body["messages"]
            for b in (m["content"] if isinstance(m["content"], list) else [])
        )
    ]
    assert len(marked) >= len(requests) - 2  # every request once there is a history
    read, past = _shares(requests)
    assert past > 0.5
    assert read >= 0.6, f"only {read:.2f} of the prompt read from the cache"


def test_without_a_breakpoint_nothing_is_read(anthropic_api: AnthropicEmulator) -> None:
    # the same conversation under a window the emulator does not call Anthropic's: no marks
    window = ModelWindow(MODEL, "example", 6_000, 6_000, 1_000, "o200k_base", "explicit")
    history = FittedChatMessageHistory("orders", model=window, store="memory://")
    requests = _converse(anthropic_api, history)
    read, _ = _shares(requests)
    assert read == 0.0


def test_the_guard_marks_where_the_cache_can_read(anthropic_api: AnthropicEmulator) -> None:
    """``FitToModel(ChatAnthropic(...))`` given the whole conversation at every call (as a chat
    app that keeps its own list does): past the budget, the guard keeps the conversation's
    stable cut and marks its end; the emulator reads most of each prompt from its cache."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    from langchain_session_migrator import FitToModel

    model = ChatAnthropic(model=MODEL, base_url=anthropic_api.url, api_key="test", max_tokens=1_000)  # type: ignore[call-arg]
    guard = FitToModel(model, models={MODEL: WINDOW})
    conversation: list[Any] = [SystemMessage("You are a logistics assistant.")]
    for n in range(TURNS):
        reply = f"Order {n} leaves the north warehouse on day {n % 7}; dock {n % 5}. " * 3
        anthropic_api.script(Text(reply))
        conversation.append(HumanMessage(f"Where is order {n} now?", id=f"h{n}"))
        answer = guard.invoke(conversation)
        conversation.append(AIMessage(answer.content, id=f"a{n}"))
    assert not anthropic_api.refusals
    assert guard.last_report is not None
    assert guard.last_report.decision == "compressed"
    read, past = _shares(anthropic_api.accepted)
    assert past > 0.5
    assert read >= 0.6, f"only {read:.2f} of the prompt read from the cache"
