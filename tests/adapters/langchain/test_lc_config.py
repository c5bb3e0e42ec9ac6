"""The factory's configuration is checked where it is given, and a call may leave the model out
(issue 21, drop-in fidelity)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import ConfigurableField

from langchain_session_migrator import FittedChatMessageHistory, FittedHistoryFactory
from session_migrator import UnknownModelError

PROMPT = ChatPromptTemplate.from_messages(
    [("system", "Be brief."), MessagesPlaceholder("history"), ("human", "{input}")]
)


def switchable(kit: Any) -> tuple[Any, Any, Any]:
    big = kit.make_model("gpt-4o", 100_000, 1_000)
    small = kit.make_model("gpt-4o-mini", 1_500, 200)
    llm = big.configurable_alternatives(
        ConfigurableField(id="model"), default_key="big", small=small
    )
    return llm, big, small


def test_a_call_without_the_model_uses_the_fields_default(
    kit: Any, make_factory: Callable[..., FittedHistoryFactory]
) -> None:
    llm, big, small = switchable(kit)
    history = make_factory(store="memory://", llm=llm)
    chain = history.with_message_history(
        PROMPT | llm, input_messages_key="input", history_messages_key="history"
    )
    for _ in range(2):
        chain.invoke({"input": "hi"}, {"configurable": {"session_id": "s1"}})
    assert len(big.received) == 2
    report = history("s1").last_report  # the read was fitted to the default model
    assert report is not None
    assert report.target == history.windows["big"].name
    chain.invoke({"input": "hi"}, {"configurable": {"session_id": "s1", "model": "small"}})
    assert len(small.received) == 1


def test_an_unknown_configured_key_lists_the_registered_keys(
    kit: Any, make_factory: Callable[..., FittedHistoryFactory]
) -> None:
    llm, _, _ = switchable(kit)
    history = make_factory(store="memory://", llm=llm)
    view = history("s1", "smal")  # a typo
    with pytest.raises(UnknownModelError, match=r"'big', 'small'"):
        _ = view.messages


def test_a_field_named_otherwise_than_model_key_is_refused(
    kit: Any, make_factory: Callable[..., FittedHistoryFactory]
) -> None:
    big = kit.make_model("gpt-4o", 100_000, 1_000)
    small = kit.make_model("gpt-4o-mini", 1_500, 200)
    llm = big.configurable_alternatives(ConfigurableField(id="llm"), default_key="big", small=small)
    with pytest.raises(ValueError, match=r"model_key='llm'"):
        make_factory(store="memory://", llm=llm)
    assert make_factory(store="memory://", llm=llm, model_key="llm").windows.keys() == {
        "big",
        "small",
    }


@pytest.mark.parametrize(
    "make", [FittedHistoryFactory, lambda **kw: FittedChatMessageHistory("s", **kw)]
)
def test_a_store_that_is_not_one_is_refused_at_construction(make: Callable[..., Any]) -> None:
    with pytest.raises(TypeError, match="store must be a store URL"):
        make(store=42)


def test_messages_given_at_construction_read_back_as_given() -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    given = [HumanMessage("Hello"), AIMessage("Hi!", id="a1")]
    with FittedChatMessageHistory("s", store="memory://", messages=given) as history:
        assert history.messages == given  # no id added where none was given
        assert history == FittedChatMessageHistory("t", store="memory://", messages=given)
