"""Real ``RunnableWithMessageHistory`` chains driven by LangChain's fake chat models.

What the fake model receives is recorded and measured with the core counter against the model's
budget: a configurable model switch big -> small -> big, the callback path (a router and
fallbacks that change the model without the config saying so), calibration from usage, and
sync, async and streaming calls.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import ConfigurableField, RunnableLambda

from langchain_session_migrator import FittedHistoryFactory, ModelWatcher
from session_migrator import TiktokenCounter
from session_migrator.counting._calibration import calibration_factor

MODES = ("invoke", "stream", "ainvoke", "astream")
PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "You are a helpful assistant for the finance team."),
        MessagesPlaceholder("history"),
        ("human", "{input}"),
    ]
)


async def run(chain: Any, value: Any, config: dict[str, Any], mode: str) -> None:
    """One call of ``chain`` in ``mode``."""
    if mode == "invoke":
        chain.invoke(value, config)
    elif mode == "stream":
        for _ in chain.stream(value, config):
            pass
    elif mode == "ainvoke":
        await chain.ainvoke(value, config)
    else:
        async for _ in chain.astream(value, config):
            pass


def switchable(big: Any, small: Any) -> Any:
    """``big`` by default, ``small`` with ``{"configurable": {"model": "small"}}``."""
    return big.configurable_alternatives(
        ConfigurableField(id="model"), default_key="big", small=small
    )


def question(n: int) -> str:
    return f"Question {n}: what changed in the forecast for region {n} this quarter?"


@pytest.mark.parametrize("mode", MODES)
async def test_configurable_switch_big_small_big(
    mode: str,
    store_url: str,
    kit: Any,
    big: Any,
    small: Any,
    with_history: Callable[..., Any],
    make_factory: Callable[..., FittedHistoryFactory],
) -> None:
    llm = big.configurable_alternatives(
        ConfigurableField(id="model"), default_key="big", small=small
    )
    history = make_factory(store=store_url, llm=llm)
    chain = with_history(
        PROMPT | llm,
        history,
        input_messages_key="input",
        history_messages_key="history",
        history_factory_config=history.config_specs,
    ).with_config(callbacks=[history.watcher])

    def config(model: str) -> dict[str, Any]:
        return {"configurable": {"session_id": "s1", "model": model}}

    calls = 24
    for n in range(calls):
        await run(chain, {"input": question(n)}, config("big"), mode)
    assert len(big.received[-1]) == 2 * (calls - 1) + 2  # the whole history, untouched

    budget, counter = kit.budget_of(small)
    for n in range(calls, calls + 3):
        await run(chain, {"input": question(n)}, config("small"), mode)
        sent = small.received[-1]
        assert kit.tokens_sent(sent, counter) <= budget
        assert len(sent) < 2 * n + 2  # compressed
        assert sent[-1].content == question(n)  # the new question always goes
        kit.assert_paired(sent)

    await run(chain, {"input": question(99)}, config("big"), mode)
    log = history("s1", "big").full_messages
    assert len(log) == 2 * (calls + 4)  # every turn stored once, nothing lost, no duplicate
    assert len(big.received[-1]) == len(log) - 2 + 2  # the whole context is back
    moves = [(r.from_model, r.to_model) for r in history.store.migrations("s1")]
    assert moves == [(None, "gpt-4o"), ("gpt-4o", "gpt-4o-mini"), ("gpt-4o-mini", "gpt-4o")]


def test_history_factory_config_matches_the_model_field(
    big: Any, small: Any, with_history: Callable[..., Any], make_factory: Any
) -> None:
    llm = big.configurable_alternatives(
        ConfigurableField(id="model"), default_key="big", small=small
    )
    history = make_factory(store="memory://", llm=llm)
    chain = with_history(
        PROMPT | llm, history, input_messages_key="input", history_messages_key="history",
        history_factory_config=history.config_specs,
    )  # fmt: skip
    ids = sorted(spec.id for spec in chain.config_specs)  # raises if the specs conflicted
    assert ids == ["model", "session_id"]
    assert history.resolve("small").max_input_tokens == 1_500
    assert history.resolve("gpt-4o-mini").max_input_tokens > 1_500  # a name: the table


def router(active: dict[str, Any]) -> Any:
    """A runnable that sends the prompt to whichever model is active (the config never says)."""

    def route(messages: list[BaseMessage], config: Any) -> Any:
        return active["model"].invoke(messages, config)

    async def aroute(messages: list[BaseMessage], config: Any) -> Any:
        return await active["model"].ainvoke(messages, config)

    return RunnableLambda(route, aroute)


@pytest.mark.parametrize("mode", MODES)
async def test_the_watcher_detects_a_swap_and_the_next_call_fits(
    mode: str, store_url: str, kit: Any, with_history: Callable[..., Any], make_factory: Any
) -> None:
    big = kit.make_model("acme-large", 60_000, 2_000)
    small = kit.make_model("acme-small", 1_800, 200)
    active = {"model": big}
    watcher = ModelWatcher(models=[big, small], calibrate=False)
    history = make_factory(store=store_url, model_key=None, watcher=watcher)
    # no history_messages_key: the history is prepended to the input messages, and
    # RunnableWithMessageHistory slices what to store by the length of a second read
    chain = with_history(router(active), history).with_config(callbacks=[watcher])
    config = {"configurable": {"session_id": "s1"}}

    calls = 20
    for n in range(calls):
        await run(chain, [HumanMessage(question(n))], config, mode)
    budget, counter = kit.budget_of(small)

    active["model"] = small
    await run(chain, [HumanMessage(question(calls))], config, mode)
    overflow = kit.tokens_sent(small.received[-1], counter)
    assert overflow > budget  # the swap was invisible beforehand: this call could not fit ...
    observation = watcher.observation("s1")
    assert observation is not None
    assert observation.model == "acme-small"
    for n in range(calls + 1, calls + 3):
        await run(chain, [HumanMessage(question(n))], config, mode)
        assert kit.tokens_sent(small.received[-1], counter) <= budget  # ... the next ones do
        kit.assert_paired(small.received[-1])

    active["model"] = big
    await run(chain, [HumanMessage(question(50))], config, mode)  # still fitted for the small one
    await run(chain, [HumanMessage(question(51))], config, mode)
    log = history("s1").full_messages
    assert len(log) == 2 * (calls + 5)  # the two reads of each call agreed: nothing lost
    assert len(big.received[-1]) == len(log) - 2 + 1  # everything is back


async def test_fallbacks_are_seen_as_the_model_that_ran(
    store_url: str, kit: Any, with_history: Callable[..., Any], make_factory: Any
) -> None:
    class Down(kit.RecordingChatModel):  # type: ignore[name-defined,misc]
        def _generate(self, *args: Any, **kwargs: Any) -> Any:
            raise ConnectionError("rate limited")

    primary = Down(messages=iter([]), model_name="acme-large",
                   profile={"max_input_tokens": 60_000, "max_output_tokens": 500})  # fmt: skip
    backup = kit.make_model("acme-small", 1_800, 200)
    watcher = ModelWatcher(models=[primary, backup], calibrate=False)
    history = make_factory(store=store_url, model_key=None, watcher=watcher)
    chain = with_history(
        PROMPT | primary.with_fallbacks([backup]),
        history,
        input_messages_key="input",
        history_messages_key="history",
    ).with_config(callbacks=[watcher])
    config = {"configurable": {"session_id": "s1"}}
    budget, counter = kit.budget_of(backup)
    for n in range(20):
        await chain.ainvoke({"input": question(n)}, config)
    assert watcher.observation("s1").model == "acme-small"
    assert kit.tokens_sent(backup.received[-1], counter) <= budget


def test_usage_calibrates_an_estimated_tokenizer(
    store_url: str, kit: Any, with_history: Callable[..., Any], make_factory: Any
) -> None:
    model = kit.make_model("acme-chat", 50_000, 500, usage_from=TiktokenCounter("o200k_base"))
    history = make_factory(store=store_url, model_key=None, models=[model])
    chain = with_history(
        PROMPT | model, history, input_messages_key="input", history_messages_key="history"
    ).with_config(callbacks=[history.watcher])
    assert calibration_factor("acme-chat") == 1.0
    for n in range(3):
        chain.invoke({"input": question(n)}, {"configurable": {"session_id": "s1"}})
    observation = history.watcher.observation("s1")
    assert observation is not None
    assert observation.input_tokens is not None
    assert observation.estimated_tokens is not None
    # the "other" family is estimated at 1.45 x o200k; the provider reported o200k counts
    assert observation.input_tokens < observation.estimated_tokens
    assert calibration_factor("acme-chat") < 1.0


def test_the_summarizer_model_is_not_taken_for_the_chat_model(
    store_url: str, kit: Any, with_history: Callable[..., Any], make_factory: Any
) -> None:
    model = kit.make_model("acme-small", 1_800, 200)
    summary = "The user asked about regional forecasts."
    summarizer = kit.make_model("acme-summarizer", 8_000, replies=itertools.repeat(summary))
    seen: list[str | None] = []

    class Spy(ModelWatcher):
        def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
            super().on_chat_model_start(*args, **kwargs)
            seen.append(self.last.model if self.last else None)

    watcher = Spy(models=[model, summarizer], calibrate=False)
    history = make_factory(
        store=store_url,
        model_key=None,
        watcher=watcher,
        strategy="summarize",
        summarizer=summarizer,
    )
    chain = with_history(
        PROMPT | model, history, input_messages_key="input", history_messages_key="history"
    ).with_config(callbacks=[watcher])
    budget, counter = kit.budget_of(model)
    for n in range(25):
        chain.invoke({"input": question(n)}, {"configurable": {"session_id": "s1"}})
        if n > 0:  # the first call of a new session is attributed to no session
            assert watcher.observation("s1").model == "acme-small"
    assert summarizer.received  # the summarizer did run, inside the chain's run ...
    assert len(seen) == 25 + len(summarizer.received)  # ... and the watcher saw it start
    assert set(seen) == {"acme-small"}  # but never took it for the chat model
    sent = model.received[-1]
    assert kit.tokens_sent(sent, counter) <= budget
    assert any("regional forecasts" in m.text for m in sent)


SERVERS = [
    pytest.param("redis", marks=pytest.mark.redis),
    pytest.param("postgres", marks=pytest.mark.postgres),
]


@pytest.mark.parametrize("server", SERVERS)
def test_a_chain_on_a_server_store(
    server: str,
    request: pytest.FixtureRequest,
    kit: Any,
    big: Any,
    small: Any,
    with_history: Callable[..., Any],
    make_factory: Any,
) -> None:
    url = request.getfixturevalue(f"{server}_url")
    llm = big.configurable_alternatives(
        ConfigurableField(id="model"), default_key="big", small=small
    )
    history = make_factory(store=url, llm=llm)
    chain = with_history(
        PROMPT | llm, history, input_messages_key="input", history_messages_key="history",
        history_factory_config=history.config_specs,
    ).with_config(callbacks=[history.watcher])  # fmt: skip
    for n in range(14):
        chain.invoke({"input": question(n)}, {"configurable": {"session_id": "s", "model": "big"}})
    chain.invoke({"input": question(14)}, {"configurable": {"session_id": "s", "model": "small"}})
    budget, counter = kit.budget_of(small)
    assert kit.tokens_sent(small.received[-1], counter) <= budget
    assert len(history("s", "big").full_messages) == 30


def test_many_sync_calls_hold_a_fixed_number_of_store_connections(
    tmp_path: Any,
    postgres_url: str,
    big: Any,
    with_history: Callable[..., Any],
    make_factory: Any,
) -> None:
    # RunnableWithMessageHistory loads the history in a new thread on every sync invoke: the
    # SQL stores must hand each thread's connection on, not keep one per thread
    from pathlib import Path

    import psycopg

    def sqlite_files(path: str) -> int:
        fds = list(Path("/proc/self/fd").iterdir())
        return sum(str(fd.resolve()).startswith(path) for fd in fds if fd.exists())

    def server_connections() -> int:
        with psycopg.connect(postgres_url.split("?")[0], autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            ).fetchone()
        assert row is not None
        return int(row[0])

    db = str(tmp_path / "chat.db")
    for url, opened in (
        (f"sqlite:///{db}", lambda: sqlite_files(db)),
        (postgres_url, server_connections),
    ):
        history = make_factory(store=url, llm=big)
        chain = with_history(
            PROMPT | big, history, input_messages_key="input", history_messages_key="history"
        )
        config = {"configurable": {"session_id": "s"}}
        chain.invoke({"input": question(0)}, config)
        before = opened()
        for n in range(1, 40):
            chain.invoke({"input": question(n)}, config)
        assert opened() <= before + 1, url
        assert len(history("s").full_messages) == 80


@pytest.mark.parametrize("strategy", ["trim", "auto"])
def test_a_long_question_after_short_ones_still_fits_the_small_model(
    strategy: str,
    store_url: str,
    kit: Any,
    big: Any,
    small: Any,
    with_history: Callable[..., Any],
    make_factory: Callable[..., FittedHistoryFactory],
) -> None:
    # the room kept for what the chain adds was what it added last time (a short question):
    # this call's input is known while the history loads, and a longer one gets its room
    llm = switchable(big, small)
    history = make_factory(store=store_url, llm=llm, strategy=strategy)
    chain = with_history(
        PROMPT | llm, history, input_messages_key="input", history_messages_key="history",
        history_factory_config=history.config_specs,
    ).with_config(callbacks=[history.watcher])  # fmt: skip

    def ask(text: str, model: str) -> None:
        chain.invoke({"input": text}, {"configurable": {"session_id": "s", "model": model}})

    for n in range(12):
        ask(question(n) + " detail" * 40, "big")
    budget, counter = kit.budget_of(small)
    for text in ("Short?", "Short again?", "A long one: " + "please consider the ledger " * 120):
        ask(text, "small")
        sent = small.received[-1]
        assert sent[-1].content == text
        assert kit.tokens_sent(sent, counter) <= budget
        kit.assert_paired(sent)


def test_models_without_names_are_told_apart_by_their_keys(
    store_url: str,
    kit: Any,
    with_history: Callable[..., Any],
    make_factory: Callable[..., FittedHistoryFactory],
) -> None:
    # two profile-only models of one class: their windows go by the configurable keys, so the
    # switches between them are fitted and logged
    big = kit.make_model("", 100_000, 1_000)
    small = kit.make_model("", 1_500, 200)
    llm = switchable(big, small)
    history = make_factory(store=store_url, llm=llm)
    assert (history.resolve("big").name, history.resolve("small").name) == ("big", "small")
    chain = with_history(
        PROMPT | llm, history, input_messages_key="input", history_messages_key="history",
        history_factory_config=history.config_specs,
    ).with_config(callbacks=[history.watcher])  # fmt: skip
    for n, model in enumerate(["big"] * 12 + ["small", "big", "small"]):
        chain.invoke(
            {"input": question(n) + " detail" * 40},
            {"configurable": {"session_id": "s", "model": model}},
        )
    moves = [(r.from_model, r.to_model) for r in history.store.migrations("s")]
    assert moves == [(None, "big"), ("big", "small"), ("small", "big"), ("big", "small")]
    budget, counter = kit.budget_of(small)
    assert kit.tokens_sent(small.received[-1], counter) <= budget


def test_init_chat_model_names_select_the_fit(
    with_history: Callable[..., Any], make_factory: Any
) -> None:
    from langchain.chat_models import init_chat_model

    llm = init_chat_model(configurable_fields=("model", "model_provider"))
    history = make_factory(store="memory://", llm=llm)
    chain = with_history(
        PROMPT | llm, history, input_messages_key="input", history_messages_key="history",
        history_factory_config=history.config_specs,
    )  # fmt: skip
    assert sorted(spec.id for spec in chain.config_specs) == ["model", "session_id"]
    fitted = history("s1", "openai:gpt-4o-mini")  # as the config would name it
    assert fitted.model is not None
    assert fitted.model.name == "gpt-4o-mini"
    assert history("s1", None).model is None


def test_one_huge_prompt_does_not_starve_later_calls(
    store_url: str, kit: Any, with_history: Callable[..., Any], make_factory: Any
) -> None:
    model = kit.make_model("acme-small", 1_800, 200)
    history = make_factory(store=store_url, model_key=None, models=[model])
    chain = with_history(
        PROMPT | model, history, input_messages_key="input", history_messages_key="history"
    ).with_config(callbacks=[history.watcher])
    config = {"configurable": {"session_id": "s1"}}
    budget, counter = kit.budget_of(model)
    for n in range(8):
        chain.invoke({"input": question(n)}, config)
    chain.invoke({"input": "Please read this: " + kit.FILLER * 200}, config)  # over the window
    for n in range(8, 11):
        chain.invoke({"input": question(n)}, config)
        assert kit.tokens_sent(model.received[-1], counter) <= budget
    view = history("s1")
    assert view.reserved_tokens(view.model) <= budget // 2


@pytest.mark.parametrize("slack", [0.8, 1.0, -0.1])
def test_slack_must_be_a_small_share(slack: float) -> None:
    # refused when the factory is made, not later inside a chain call
    with pytest.raises(ValueError, match="slack"):
        FittedHistoryFactory(store="memory://", model_key=None, slack=slack)
