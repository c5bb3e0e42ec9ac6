"""Query-aware recall inside ``RunnableWithMessageHistory``: the question being asked.

``RunnableWithMessageHistory`` reads the history before the call's input is added to it, so the
latest user message in the history is the *previous* question. A read made by its
history-loading step ranks the cut turns against the call's input instead, in every way the
chain is called. Real chains, LangChain's fake chat model, a stored session whose one planted
fact sits in a turn that the small model's window cuts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import uuid4

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from langchain_session_migrator import FittedChatMessageHistory, FittedHistoryFactory

from .conftest import FILLER, make_model
from .test_lc_chains import MODES, run

FACT = "The vault combination is 4417 and the vault is in Lisbon."
ASK = "What is the vault combination?"
PROMPT = ChatPromptTemplate.from_messages(
    [("system", "You help the operations team."), MessagesPlaceholder("history"), ("human", "{q}")]
)


def stored_session() -> list[BaseMessage]:
    """Forty turns about forecasts, the planted fact before turn 12 (cut by a small window),
    ending with a question that shares no searched word with :data:`ASK`.
    """
    out: list[BaseMessage] = []
    for n in range(40):
        if n == 12:  # (amid small talk: not a neighbour, two turns near, of the forecast's)
            out += [
                HumanMessage("By the way, lovely weather today."),
                AIMessage("Indeed it is."),
                HumanMessage("Did you sleep well?"),
                AIMessage("Like a log."),
                HumanMessage(f"Remember this. {FACT}"),
                AIMessage("Noted."),
                HumanMessage("Thanks, that is all for now."),
                AIMessage("You are welcome."),
                HumanMessage("Enjoy your lunch."),
                AIMessage("You too."),
            ]
        out += [
            HumanMessage(f"Question {n} about the forecast. " + FILLER * 3),
            AIMessage(f"Answer {n}. " + FILLER * 3),
        ]
    return out


def received_fact(model: Any) -> bool:
    """Whether the model's last request held the planted fact (before the question itself)."""
    return any("4417" in str(m.content) for m in model.received[-1][:-1])


def fact_turn_sent(model: Any) -> bool:
    """Whether the planted fact's own message (not a summary quoting it) was sent."""
    return any(m.content == f"Remember this. {FACT}" for m in model.received[-1])


def recalled_fact(factory: FittedHistoryFactory, session: str) -> bool:
    """Whether the session's last fit recalled the planted fact's turn (``auto`` may also
    quote it in its summary: the report tells recall apart).
    """
    history = factory(session, "small")
    report = history.last_report
    assert report is not None
    fact = next(m.id for m in history.fitter.messages if FACT in m.text)  # (the store ids)
    return fact in report.recalled_ids


def question_chain(with_history: Any, prompt: Any, model: Any, factory: Any) -> Any:
    """``prompt | model`` with the factory's history under ``history``, the question under
    ``q``.
    """
    return with_history(
        prompt | model,
        factory,
        input_messages_key="q",
        history_messages_key="history",
        history_factory_config=factory.config_specs,
    )


def seeded(factory: FittedHistoryFactory, session: str) -> list[BaseMessage]:
    history = factory(session)
    history.add_messages(stored_session())
    return history.full_messages


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("strategy", ["auto", "recall"])
async def test_recall_ranks_against_the_calls_input(
    mode: str, strategy: str, make_factory: Callable[..., FittedHistoryFactory], with_history: Any
) -> None:
    model = make_model("gpt-4o-mini", 1_500, 100)
    factory = make_factory(store="memory://", models={"small": model}, strategy=strategy)
    session = f"s-{uuid4().hex[:8]}"
    before = seeded(factory, session)
    chain = question_chain(with_history, PROMPT, model, factory)
    config = {"configurable": {"session_id": session, "model": "small"}}

    await run(chain, {"q": ASK}, config, mode)

    assert received_fact(model)
    assert recalled_fact(factory, session)
    # the call's question and answer are stored once each, after everything that was there
    after = factory(session, "small").full_messages
    assert [m.content for m in after[: len(before)]] == [m.content for m in before]
    assert isinstance(after[-2], HumanMessage)
    assert isinstance(after[-1], AIMessage)
    assert len(after) == len(before) + 2
    assert after[len(before)].content == ASK


def test_a_plain_history_reads_the_calls_input_too(
    make_history: Callable[..., FittedChatMessageHistory], with_history: Any
) -> None:
    """No factory, no watcher: a single history handed to the chain by a lambda."""
    model = make_model("gpt-4o-mini", 1_500, 100)
    history = make_history("s1", model=model, store="memory://", strategy="recall")
    history.add_messages(stored_session())
    chain = with_history(
        PROMPT | model,
        lambda session_id: history,
        input_messages_key="q",
        history_messages_key="history",
    )
    chain.invoke({"q": ASK}, {"configurable": {"session_id": "s1"}})
    assert received_fact(model)
    assert fact_turn_sent(model)


@pytest.mark.parametrize("mode", MODES)
async def test_message_input_without_a_history_key_stores_each_message_once(
    mode: str, make_factory: Callable[..., FittedHistoryFactory], with_history: Any
) -> None:
    """With ``history_messages_key=None`` the chain reads the history a second time after the
    model ran, to strip it from what it stores: both reads must fit alike.
    """
    model = make_model("gpt-4o-mini", 1_500, 100)
    factory = make_factory(store="memory://", models={"small": model})
    before = seeded(factory, "s1")
    chain = with_history(model, factory, history_factory_config=factory.config_specs)

    await run(
        chain, [HumanMessage(ASK)], {"configurable": {"session_id": "s1", "model": "small"}}, mode
    )

    assert received_fact(model)
    assert recalled_fact(factory, "s1")
    after = factory("s1", "small").full_messages
    assert len(after) == len(before) + 2
    assert isinstance(after[-2], HumanMessage)
    assert isinstance(after[-1], AIMessage)
    assert after[len(before)].content == ASK


def test_the_question_is_the_inputs_key_among_several(
    make_factory: Callable[..., FittedHistoryFactory], with_history: Any
) -> None:
    model = make_model("gpt-4o-mini", 1_500, 100)
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer in {language}."), MessagesPlaceholder("history"), ("human", "{q}")]
    )
    factory = make_factory(store="memory://", models={"small": model}, strategy="recall")
    seeded(factory, "s1")
    chain = question_chain(with_history, prompt, model, factory)
    chain.invoke(
        {"q": ASK, "language": "Portuguese"},
        {"configurable": {"session_id": "s1", "model": "small"}},
    )
    assert received_fact(model)
    assert recalled_fact(factory, "s1")


def test_a_read_outside_a_call_uses_the_latest_user_message(
    make_factory: Callable[..., FittedHistoryFactory],
) -> None:
    model = make_model("gpt-4o-mini", 1_500, 100)
    factory = make_factory(store="memory://", models={"small": model}, strategy="recall")
    seeded(factory, "s1")
    history = factory("s1", "small")
    assert not any("4417" in str(m.content) for m in history.messages)
    history.add_messages([HumanMessage(ASK)])
    assert any("4417" in str(m.content) for m in history.messages)
