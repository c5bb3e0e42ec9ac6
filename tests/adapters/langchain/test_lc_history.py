"""FittedChatMessageHistory on its own: fitting, caching, the full log, model switches, stores."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_session_migrator import (
    FittedChatMessageHistory,
    LangChainSummarizer,
    messages_from_core,
    window_for,
)
from session_migrator import EstimatingCounter, TiktokenCounter, UnknownModelError
from session_migrator.messages._messages import MARKER_KEY


@pytest.fixture
def tokenizations(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every text the core tokenizes, recorded."""
    seen: list[str] = []
    for cls in (TiktokenCounter, EstimatingCounter):
        original = cls.count_text

        def counting(self: Any, text: str, _original: Any = original) -> int:
            seen.append(text)
            return int(_original(self, text))

        monkeypatch.setattr(cls, "count_text", counting)
    return seen


def _fill(history: FittedChatMessageHistory, kit: Any, turns: int = 40) -> None:
    history.add_messages([SystemMessage("You are a careful analyst.", id="sys")])
    history.add_messages(messages_from_core(kit.conversation(turns)))


def test_constructing_and_using_emits_no_warning(store_url: str, make_history: Any) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = make_history("s", model="gpt-4o-mini", store=store_url)
        history.add_user_message("hi")
        history.add_ai_message("hello")
        assert len(history.messages) == 2
        history.clear()
    assert [str(w.message) for w in caught] == []


def test_fits_untouched_and_a_warm_read_tokenizes_nothing(
    store_url: str, kit: Any, tokenizations: list[str], make_history: Any
) -> None:
    history = make_history("s", model="gpt-4o", store=store_url)
    _fill(history, kit, 10)
    first = history.messages
    assert first == history.full_messages
    assert history.last_report is not None
    assert history.last_report.decision == "fits"
    tokenizations.clear()
    second = history.messages
    assert tokenizations == []
    assert second == first
    assert second is not first
    assert all(a is b for a, b in zip(first, second, strict=True))


def test_switching_models_compresses_and_gives_everything_back(
    store_url: str, kit: Any, make_history: Any
) -> None:
    big, small = kit.make_model("gpt-4o", 100_000), kit.make_model("gpt-4o-mini", 1_500, 200)
    history = make_history("s", model=big, store=store_url)
    _fill(history, kit, 40)
    everything = history.messages
    assert len(everything) == 81

    history.set_model(small)
    fitted = history.messages
    budget, counter = kit.budget_of(small)
    assert kit.tokens_sent(fitted, counter) <= budget - history.reserved_tokens(window_for(small))
    assert len(fitted) < len(everything)
    assert fitted[0].content == "You are a careful analyst."  # the system prompt is pinned
    assert MARKER_KEY in fitted[1].response_metadata  # then a summary or note on the cut part
    assert isinstance(fitted[2], HumanMessage)
    assert fitted[-1] == everything[-1]  # the newest turn is there, verbatim
    report = history.last_report
    assert report is not None
    assert report.decision == "compressed"
    assert report.dropped_ids or report.summarized_ids

    history.set_model(big)
    assert history.messages == everything
    assert len(history.full_messages) == 81  # compression never touched the log
    moves = [(r.from_model, r.to_model) for r in history.store.migrations("s")]
    assert moves == [(None, "gpt-4o"), ("gpt-4o", "gpt-4o-mini"), ("gpt-4o-mini", "gpt-4o")]


@pytest.mark.parametrize("strategy", ["trim", "auto"])
def test_the_cut_is_kept_while_new_turns_fit_unless_slack_is_zero(
    strategy: str, kit: Any, tokenizations: list[str], make_history: Any
) -> None:
    small = kit.make_model("gpt-4o-mini", 3_000, 200)
    steady = make_history("a", model=small, store="memory://", strategy=strategy)
    fresh = make_history("b", model=small, store="memory://", strategy=strategy, slack=0.0)
    budget, counter = kit.budget_of(small)
    for history in (steady, fresh):
        _fill(history, kit, 40)
    heads: dict[str, list[str | None]] = {"a": [], "b": []}
    for k in range(6):
        for history in (steady, fresh):
            fitted = history.messages
            assert kit.tokens_sent(fitted, counter) <= budget - history.reserved_tokens(
                window_for(small)
            )
            kit.assert_paired(fitted)
            assert fitted[-1] == history.full_messages[-1]
            heads[history.session_id].append(fitted[1].id)  # the summary or note on the cut
            new = HumanMessage(f"One more short question, number {k}?", id=f"{k}-q")
            history.add_messages([new, AIMessage(f"Short answer {k}.", id=f"{k}-a")])
    # with slack the head moves at most once while six short turns come (the cut sits on a
    # grid of steps of the slack's share of the room: it moves a whole step, rarely) ...
    assert len(set(heads["a"])) <= 2
    assert sum(a != b for a, b in itertools.pairwise(heads["a"])) <= 1
    # ... also after the loop's last turn (a read that leaves the fit up to date) ...
    assert steady.messages[1].id == heads["a"][-1]
    # ... and a re-fit tokenizes only the new messages
    tokenizations.clear()
    last = f"And a last one, for {strategy}?"  # a text no counter has seen
    steady.add_messages([HumanMessage(last, id="last")])
    assert steady.messages[-1].content == last
    assert tokenizations == [last]
    # without slack every read cuts afresh: the oldest kept turns make room for the new ones
    assert len(set(heads["b"])) > 1


def test_ids_are_kept_as_given_and_appends_are_idempotent(
    store_url: str, make_history: Any
) -> None:
    history = make_history("s", model="gpt-4o", store=store_url)
    history.add_messages([HumanMessage("no id"), AIMessage("with id", id="a1")])
    stored = history.full_messages
    assert stored[0].id is None  # none added (as LangChain's own histories keep it)
    assert stored == [HumanMessage("no id"), AIMessage("with id", id="a1")]
    history.add_messages([AIMessage("with id", id="a1")])
    assert len(history.full_messages) == 2


def test_the_setter_replaces_the_log_and_clear_deletes_it(
    store_url: str, make_history: Any
) -> None:
    history = make_history("s", model="gpt-4o", store=store_url)
    history.add_user_message("old")
    history.messages = [HumanMessage("new", id="n1")]
    assert [m.content for m in history.messages] == ["new"]
    history.clear()
    assert history.messages == []
    assert history.full_messages == []
    assert history.store.migrations("s") == []


def test_without_a_model_the_whole_log_is_returned(
    store_url: str, kit: Any, make_history: Any
) -> None:
    history = make_history("s", store=store_url)
    assert history.model is None
    _fill(history, kit, 5)
    assert history.messages == history.full_messages
    assert history.last_report is None


def test_the_last_fitted_model_is_remembered_by_the_store(
    tmp_path: Path, kit: Any, make_history: Any
) -> None:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    first = make_history("s", model="gpt-4o-mini", store=url)
    _fill(first, kit, 3)
    first.messages  # noqa: B018 - the read logs the fit
    again = make_history("s", store=url)
    assert again.model is not None
    assert again.model.name == "gpt-4o-mini"
    assert again.full_messages == first.full_messages


def test_unknown_model_names_fail_loudly(make_history: Any) -> None:
    with pytest.raises(UnknownModelError, match="register_model"):
        make_history("s", model="acme-unknown-model", store="memory://")


def test_tool_calls_and_results_stay_together(store_url: str, kit: Any, make_history: Any) -> None:
    history = make_history("s", model=kit.make_model("gpt-4o-mini", 900, 100), store=store_url)
    for n in range(12):
        history.add_messages(
            [
                HumanMessage(f"Look up order {n}"),
                AIMessage("", tool_calls=[{"name": "lookup", "args": {"n": n}, "id": f"c{n}"}]),
                ToolMessage(kit.FILLER * 3, tool_call_id=f"c{n}"),
                AIMessage(f"Order {n} is fine."),
            ]
        )
    fitted = history.messages
    kit.assert_paired(fitted)
    assert len(fitted) < len(history.full_messages)


async def test_async_reads_writes_and_clear(store_url: str, kit: Any, make_history: Any) -> None:
    history = make_history("s", model="gpt-4o", store=store_url)
    await history.aadd_messages(messages_from_core(kit.conversation(3)))
    assert len(await history.aget_messages()) == 6
    assert await history.aget_messages() == history.messages
    assert len(await history.aget_full_messages()) == 6
    await history.aclear()
    assert await history.aget_messages() == []


def test_a_langchain_chat_model_writes_the_summary(
    store_url: str, kit: Any, make_history: Any
) -> None:
    summarizer = FakeListChatModel(responses=["SUMMARY: the user asked 30 questions."])
    history = make_history(
        "s",
        model=kit.make_model("gpt-4o-mini", 1_500, 200),
        store=store_url,
        strategy="summarize",
        summarizer=summarizer,
    )
    _fill(history, kit, 30)
    fitted = history.messages
    summary = next(m for m in fitted if MARKER_KEY in m.response_metadata)
    assert "SUMMARY: the user asked 30 questions." in summary.text
    report = history.last_report
    assert report is not None
    assert report.summary is not None
    assert report.summary["summarizer"] == "langchain:FakeListChatModel"
    assert report.fallbacks == []
    stored = history.store.get_summary("s")
    assert stored is not None
    assert "SUMMARY" in stored.text


def test_a_failing_summarizer_falls_back_and_says_so(
    store_url: str, kit: Any, make_history: Any
) -> None:
    class Broken(FakeListChatModel):
        def _call(self, *args: Any, **kwargs: Any) -> str:
            raise RuntimeError("provider down")

    history = make_history(
        "s",
        model=kit.make_model("gpt-4o-mini", 1_500, 200),
        store=store_url,
        strategy="summarize",
        summarizer=Broken(responses=["never"]),
    )
    _fill(history, kit, 30)
    history.messages  # noqa: B018
    report = history.last_report
    assert report is not None
    assert report.decision == "compressed"
    assert any("provider down" in f for f in report.fallbacks)


async def test_the_summarizer_works_async_and_cuts_long_replies(kit: Any) -> None:
    counter = TiktokenCounter("o200k_base")
    model = FakeListChatModel(responses=["word " * 500])
    summarizer = LangChainSummarizer(model)
    messages = kit.conversation(2)
    text = await summarizer.asummarize(messages, max_tokens=40, counter=counter)
    assert counter.count_text(text) <= 40
    request = summarizer.request(messages, max_tokens=40, counter=counter, previous="earlier")
    assert "earlier" in request[1].text
    assert "Question 1" in request[1].text


@pytest.mark.redis
def test_on_redis(redis_url: str, kit: Any, make_history: Any) -> None:
    _round_trip_on(redis_url, kit, make_history)


@pytest.mark.postgres
def test_on_postgres(postgres_url: str, kit: Any, make_history: Any) -> None:
    _round_trip_on(postgres_url, kit, make_history)


def _round_trip_on(url: str, kit: Any, make_history: Any) -> None:
    small = kit.make_model("gpt-4o-mini", 1_500, 200)
    history = make_history("s-remote", model="gpt-4o", store=url)
    _fill(history, kit, 30)
    assert len(history.messages) == 61
    history.set_model(small)
    budget, counter = kit.budget_of(small)
    reserve = history.reserved_tokens(window_for(small))
    assert kit.tokens_sent(history.messages, counter) <= budget - reserve
    again = make_history("s-remote", store=url)  # another process, same store
    assert again.full_messages == history.full_messages
    assert again.model is not None
    assert again.model.name == "gpt-4o-mini"


@pytest.mark.parametrize("model", ["gpt-4o", None])
def test_deletes_by_another_process_are_seen_at_the_next_read(
    make_history: Any, tmp_path: Path, model: str | None
) -> None:
    # an operator deletes a message, then erases the user's sessions, with the CLI on the same
    # store the running app reads: the app's next read sends none of it
    from session_migrator.cli import main

    url = f"sqlite:///{tmp_path / 'app.db'}"
    history = make_history("lc", model=model, store=url, metadata={"user_id": "u-42"})
    history.add_messages(
        [
            HumanMessage("my card is 4111 1111 1111 1111", id="secret"),
            AIMessage("noted", id="a1"),
            HumanMessage("what's the weather?", id="u2"),
            AIMessage("sunny", id="a2"),
        ]
    )
    assert len(history.messages) == 4
    assert main(["sessions", "delete", "lc", "--message", "secret", "--store", url]) == 0
    # the log now opens with the model's turn, which a model rejects: left out of the fitted view
    fitted = (
        ["what's the weather?", "sunny"] if model else ["noted", "what's the weather?", "sunny"]
    )
    assert [m.content for m in history.messages] == fitted
    assert [m.content for m in history.full_messages] == ["noted", "what's the weather?", "sunny"]
    assert main(["sessions", "erase", "--user", "u-42", "--store", url]) == 0
    assert history.messages == []
    history.add_messages([HumanMessage("next question", id="u3")])
    assert [m.content for m in history.messages] == ["next question"]
    assert [m.id for m in history.store.load("lc")] == ["u3"]


def test_an_offloaded_tool_output_reads_the_same_in_the_writer_and_elsewhere(
    make_history: Any, tmp_path: Path
) -> None:
    from session_migrator.store import open_store

    url = f"sqlite:///{tmp_path / 'offload.db'}"
    big_output = "\n".join(f"row {i}: " + "value " * 12 for i in range(3_000))
    turn = [
        HumanMessage("Dump the table.", id="u0"),
        AIMessage("", tool_calls=[{"name": "dump", "args": {}, "id": "c1"}], id="a0"),
        ToolMessage(big_output, tool_call_id="c1", id="t0"),
        AIMessage("Done: 3,000 rows.", id="a1"),
    ]
    writer_store = open_store(url, offload_threshold=4_000)
    writer = make_history("s", model="gpt-4", store=writer_store)
    writer.add_messages(turn)
    reader = make_history("s", model="gpt-4", store=open_store(url, offload_threshold=4_000))
    for history in (writer, reader):
        sent = history.messages
        tool = next(m for m in sent if isinstance(m, ToolMessage))
        assert len(str(tool.content)) < len(big_output) // 20  # the preview
        assert "row 1500:" not in str(tool.content)  # (its head and tail are kept)
        assert history.last_report is not None
        assert history.last_report.decision == "fits"  # the preview fits gpt-4
        assert [m.id for m in sent] == ["u0", "a0", "t0", "a1"]
    assert writer.last_report is not None
    assert reader.last_report is not None
    assert writer.last_report.tokens_before == reader.last_report.tokens_before
    assert writer.full_messages == reader.full_messages
    original = writer_store.load("s", full=True)[2]
    assert original.text == big_output  # nothing lost


def test_replacing_the_log_with_a_message_that_cannot_be_stored_keeps_the_log(
    make_history: Any,
) -> None:
    from langchain_core.messages import FunctionMessage

    from session_migrator import InvalidMessageError

    history = make_history("s", store="memory://")
    history.add_messages([HumanMessage("important 1", id="i1"), AIMessage("important 2", id="i2")])
    with pytest.raises(InvalidMessageError, match="FunctionMessage"):
        history.messages = [HumanMessage("new"), FunctionMessage(name="f", content="legacy")]
    assert [m.content for m in history.full_messages] == ["important 1", "important 2"]
    history.messages = [HumanMessage("new", id="n1")]
    assert [m.content for m in history.full_messages] == ["new"]


def test_a_negative_reserve_is_refused(make_history: Any) -> None:
    from langchain_session_migrator import FitToModelMiddleware

    with pytest.raises(ValueError, match="reserve_tokens must not be negative"):
        make_history("s", model="gpt-4", store="memory://", reserve_tokens=-5_000)
    with pytest.raises(ValueError, match="reserve_tokens must not be negative"):
        FitToModelMiddleware(reserve_tokens=-1)
