"""The strategies' behaviour: trim, summarize (rolling), recall, auto; summarizer failures;
budgets too small; cutting inside a message; fitting on cached counts."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from session_migrator import (
    BudgetError,
    ContentPart,
    Message,
    ModelWindow,
    SummarizerError,
    TiktokenCounter,
    ToolCall,
)
from session_migrator.counting._counter import BaseCounter, TokenCounter
from session_migrator.counting._tokens import counter_for
from session_migrator.fitting._truncate import truncate_message
from session_migrator.messages._rules import chat_rule_violations
from session_migrator.migration._migrate import migrate
from session_migrator.migration._strategies import (
    AutoStrategy,
    CompressionResult,
    Compressor,
    RecallStrategy,
    SummarizeStrategy,
    TrimStrategy,
    get_strategy,
)
from session_migrator.summaries._summarizers import ExtractiveSummarizer, Summary

O200K = counter_for("o200k_base")


def window(tokens: int, tokenizer: str = "o200k_base") -> ModelWindow:
    """A target whose input budget is exactly ``tokens`` with exact counting."""
    return ModelWindow("target", "test", tokens, tokens, 0, tokenizer, "explicit")


def chat(turns: int, *, system: bool = True, words: int = 30) -> list[Message]:
    messages = [Message("system", "You are a careful assistant.", id="sys")] if system else []
    for i in range(turns):
        messages.append(
            Message(
                "user", f"Question {i}: " + f"tell me about item {i}. " * (words // 5), id=f"u{i}"
            )
        )
        messages.append(
            Message("assistant", f"Answer {i}: " + f"item {i} is fine. " * (words // 4), id=f"a{i}")
        )
    return messages


class RecordingSummarizer:
    """Records what it is asked to summarize; answers with a short, predictable text."""

    name = "recording"

    def __init__(self, reply: str | None = None) -> None:
        self.calls: list[tuple[list[Message], str | None, int]] = []
        self.reply = reply

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str:
        self.calls.append((list(messages), previous, max_tokens))
        if self.reply is not None:
            return self.reply
        ids = ",".join(m.id for m in messages)
        return f"{previous} + [{ids}]" if previous else f"[{ids}]"


def in_budget_and_valid(result_messages: list[Message], budget: int, counter: TokenCounter) -> None:
    assert counter.count_messages(result_messages) <= budget
    assert chat_rule_violations(result_messages) == []


# -- trim --------------------------------------------------------------------------------------


def test_trim_keeps_system_the_newest_whole_turns_and_one_note() -> None:
    messages = chat(40)
    result = migrate(messages, window(1_000), strategy="trim")
    report = result.report
    assert report.decision == "compressed"
    assert report.strategy == "trim"
    out = result.messages
    assert out[0] is messages[0]
    note = out[1]
    assert note.role == "system"
    assert note.marker is not None
    assert note.marker["kind"] == "trim_note"
    kept = out[2:]
    assert kept == messages[-len(kept) :], "the newest messages, unchanged, in order"
    assert all(a is b for a, b in zip(kept, messages[-len(kept) :], strict=True))
    assert kept[0].role == "user"
    dropped = messages[1 : len(messages) - len(kept)]
    assert report.dropped_ids == [m.id for m in dropped]
    assert f"{len(dropped)} earlier messages" in note.text
    assert note.marker["dropped"] == len(dropped)
    assert "Question 0: tell me about item 0." in note.text, "a preview of the oldest"
    assert report.summarized_ids == report.recalled_ids == report.truncated_ids == []
    in_budget_and_valid(out, report.budget, O200K)
    # the room is used: one more turn would not have fitted with the note
    earlier = messages[len(messages) - len(kept) - 2 : len(messages) - len(kept)]
    assert O200K.count_messages([*out, *earlier]) > report.budget - 64


def test_trim_note_preview_is_short() -> None:
    messages = [Message("user", "word " * 500, id="long"), *chat(30, system=False)]
    result = migrate(messages, window(800), strategy="trim")
    note = result.messages[0]
    assert note.marker is not None
    assert note.marker["kind"] == "trim_note"
    assert '"word word' in note.text
    assert '..."' in note.text
    assert len(note.text) < 400


def test_trim_keeps_tool_groups_whole() -> None:
    messages: list[Message] = [Message("system", "Use tools.", id="sys")]
    for i in range(30):
        calls = tuple(
            ToolCall(f"c{i}_{j}", "search", json.dumps({"q": f"item {i}"})) for j in range(3)
        )
        messages += [
            Message("user", f"Find item {i} " * 5, id=f"u{i}"),
            Message("assistant", "", tool_calls=calls, id=f"a{i}"),
            *(
                Message("tool", f"result {j} " * 20, tool_call_id=c.id, id=f"t{i}_{j}")
                for j, c in reversed(list(enumerate(calls)))
            ),
            Message("assistant", f"Item {i} found.", id=f"b{i}"),
        ]
    for budget in range(300, 1_500, 37):
        result = migrate(messages, window(budget), strategy="trim")
        in_budget_and_valid(result.messages, budget, O200K)
        ids = {m.id for m in result.messages}
        for i in range(30):
            group = {f"a{i}", f"t{i}_0", f"t{i}_1", f"t{i}_2"}
            assert group <= ids or not group & ids, f"group {i} split at budget {budget}"


def test_orphan_and_unanswered_tool_messages_are_left_out_and_reported() -> None:
    messages = [
        Message("user", "hi", id="u0"),
        Message("tool", "stray result", tool_call_id="nobody", id="orphan"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "f"),), id="unanswered"),
        Message("user", "still there?", id="u1"),
        Message("assistant", "yes", id="a1"),
    ]
    assert chat_rule_violations(messages) != []
    result = TrimStrategy().compress(messages, 10_000, O200K)
    assert [m.id for m in result.messages] == ["u0", "u1", "a1"]
    assert set(result.dropped_ids) == {"orphan", "unanswered"}
    assert result.notes
    assert "broken tool pairing" in result.notes[0]
    assert chat_rule_violations(result.messages) == []


def test_a_conversation_that_fits_is_sent_without_its_broken_tool_pairs() -> None:
    # e.g. an assistant tool call deleted from the store, its result left behind: a model would
    # reject the result; the newest call, still waiting for its results, stays when asked
    messages = [
        Message("user", "hi", id="u0"),
        Message("tool", "stray result", tool_call_id="nobody", id="orphan"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "f"),), id="unanswered"),
        Message("user", "look it up", id="u1"),
        Message("assistant", "", tool_calls=(ToolCall("c2", "g"), ToolCall("c3", "g")), id="call"),
        Message("tool", "one of two", tool_call_id="c2", id="r2"),
    ]
    for fitted in (
        migrate(messages, window(10_000), pending_tool_calls="keep"),
        _fitter_fit(messages, window(10_000), pending_tool_calls="keep"),
    ):
        report = fitted.report
        assert report.decision == "fits"
        assert [m.id for m in fitted.messages] == ["u0", "u1", "call", "r2"]
        assert report.dropped_ids == ["orphan", "unanswered"]
        assert "broken tool pairing" in report.notes[0]
        assert report.tokens_after == O200K.count_messages(fitted.messages) < report.tokens_before
        assert report.messages_after == 4
        assert chat_rule_violations(fitted.messages[:2]) == []
    whole = [m for m in messages if m.id not in ("orphan", "unanswered")]
    assert migrate(whole, window(10_000), pending_tool_calls="keep").messages == whole  # as is


def _fitter_fit(messages: list[Message], target: ModelWindow, **options: Any) -> object:
    from session_migrator import SessionFitter

    fitter = SessionFitter(f"f{uuid.uuid4()}", store="memory://", strategy="trim")
    fitter.append(messages)
    return fitter.fit(target, **options)


def test_a_compressed_result_opens_with_a_user_message_after_the_system_prompt() -> None:
    messages = [
        Message("system", "Be brief.", id="sys"),
        Message("assistant", "Hi! How can I help?", id="greeting"),
        Message("user", "Find the invoice.", id="u0"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "search", "{}" + " x" * 600),)),
        Message("user", "Never mind, what is 2 + 2?", id="u1"),
        Message("assistant", "4", id="a1"),
    ]
    for strategy in ("trim", "summarize", "recall", "auto"):
        result = migrate(messages, window(400), strategy=strategy)
        assert result.report.decision == "compressed"
        assert [m.role for m in result.messages][:2] == ["system", "user"], strategy
        assert chat_rule_violations(result.messages) == []
        assert "greeting" in result.report.dropped_ids
        assert any("before the first user message" in n for n in result.report.notes)


# -- summarize ---------------------------------------------------------------------------------


def test_summarize_keeps_the_newest_verbatim_and_summarizes_exactly_the_cut_part() -> None:
    messages = chat(40)
    recorder = RecordingSummarizer()
    result = migrate(messages, window(1_000), strategy="summarize", summarizer=recorder)
    report = result.report
    [(given, previous, max_tokens)] = recorder.calls
    assert previous is None
    lead = result.messages[1]
    assert lead.marker is not None
    assert lead.marker["kind"] == "summary"
    kept = result.messages[2:]
    assert kept == messages[-len(kept) :]
    assert kept[0].role == "user"
    cut = messages[1 : len(messages) - len(kept)]
    assert given == cut
    assert report.summarized_ids == [m.id for m in cut]
    assert report.dropped_ids == []
    assert report.summary == {
        "text": f"[{','.join(m.id for m in cut)}]",
        "first_id": cut[0].id,
        "last_id": cut[-1].id,
        "covered_count": len(cut),
        "summarizer": "recording",
    }
    assert report.summary["text"] in lead.text
    assert max_tokens < report.budget
    in_budget_and_valid(result.messages, report.budget, O200K)


def test_the_summary_rolls_forward_with_only_the_newly_cut_messages() -> None:
    first_messages = chat(40)
    target = window(1_000)
    first = migrate(first_messages, target, strategy="summarize", summarizer=RecordingSummarizer())
    assert first.summary is not None
    covered_before = first.report.summarized_ids

    later_messages = first_messages + chat(50, system=False)[80:]  # turns 40-49: new ids
    assert len(later_messages) == len(first_messages) + 20
    recorder = RecordingSummarizer()
    second = migrate(
        later_messages,
        target,
        strategy="summarize",
        summarizer=recorder,
        previous_summary=first.summary,
    )
    [(given, previous, _)] = recorder.calls
    assert previous == first.summary.text
    cut_ids = second.report.summarized_ids
    assert cut_ids[: len(covered_before)] == covered_before
    newly_cut = cut_ids[len(covered_before) :]
    assert newly_cut, "more was cut the second time"
    assert [m.id for m in given] == newly_cut, "only the newly cut messages are summarized"
    assert second.summary is not None
    assert second.summary.first_id == first.summary.first_id
    assert second.summary.last_id == newly_cut[-1]
    assert second.summary.covered_count == len(cut_ids)
    assert second.summary.text == f"{first.summary.text} + [{','.join(newly_cut)}]"
    in_budget_and_valid(second.messages, second.report.budget, O200K)


def test_an_up_to_date_summary_is_reused_without_calling_the_summarizer() -> None:
    messages = chat(40)
    first = migrate(messages, window(1_000), strategy="summarize", summarizer=RecordingSummarizer())
    recorder = RecordingSummarizer()
    again = migrate(
        messages,
        window(1_000),
        strategy="summarize",
        summarizer=recorder,
        previous_summary=first.summary,
    )
    assert recorder.calls == []
    assert again.summary == first.summary
    assert again.messages == first.messages


def test_a_summary_of_another_stretch_is_not_folded_in() -> None:
    messages = chat(40)
    stale = Summary("about something else", "u7", "a9", 6, "recording")
    recorder = RecordingSummarizer()
    result = migrate(
        messages,
        window(1_000),
        strategy="summarize",
        summarizer=recorder,
        previous_summary=stale,
    )
    [(given, previous, _)] = recorder.calls
    assert previous is None
    assert [m.id for m in given] == result.report.summarized_ids


class Failing:
    name = "failing"

    def __init__(self, error: BaseException | None = None, reply: str = "") -> None:
        self.error = error
        self.reply = reply

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str:
        if self.error is not None:
            raise self.error
        return self.reply


@pytest.mark.parametrize(
    ("summarizer", "reason"),
    [
        (Failing(SummarizerError("HTTP 503")), "HTTP 503"),
        (Failing(TimeoutError("read timed out")), "TimeoutError"),
        (Failing(KeyError("choices")), "KeyError"),
        (Failing(reply="far too long " * 2_000), "over its limit"),
        (Failing(reply="   "), "no summary text"),
    ],
    ids=["summarizer error", "timeout", "malformed", "over-long", "empty"],
)
@pytest.mark.parametrize("strategy", ["summarize", "auto", "recall"])
def test_a_failing_summarizer_falls_back_offline(
    summarizer: Failing, reason: str, strategy: str
) -> None:
    messages = chat(40)
    result = migrate(messages, window(1_000), strategy=strategy, summarizer=summarizer)
    report = result.report
    assert len(report.fallbacks) == 1
    assert "failing" in report.fallbacks[0]
    assert reason in report.fallbacks[0]
    assert "extractive" in report.fallbacks[0]
    assert report.summary is not None
    assert report.summary["summarizer"] == "extractive"
    in_budget_and_valid(result.messages, report.budget, O200K)


# -- recall ------------------------------------------------------------------------------------


def topical_chat() -> list[Message]:
    topics = [
        "the quarterly invoice for the Lisbon office",
        "penguin colonies on the Antarctic peninsula and krill",
        "migrating the database from MySQL to Postgres",
        "the volcano hike near Catania in October",
    ] + [f"routine status update number {i}" for i in range(30)]
    messages = [Message("system", "Be helpful.", id="sys")]
    for i, topic in enumerate(topics):
        messages.append(Message("user", f"Let us talk about {topic}. " * 3, id=f"u{i}"))
        messages.append(Message("assistant", f"Noted everything about {topic}. " * 3, id=f"a{i}"))
    messages.append(
        Message("user", "Remind me: what did we say about the penguin colonies?", id="q")
    )
    return messages


def test_recall_brings_back_the_relevant_cut_turn_in_its_place() -> None:
    messages = topical_chat()
    result = migrate(messages, window(900), strategy="recall")
    report = result.report
    ids = [m.id for m in result.messages]
    assert {"u1", "a1"} <= set(ids), "the penguin turn is recalled"
    # with it, in their order, may come the turns next to it in the conversation
    assert report.recalled_ids.index("a1") == report.recalled_ids.index("u1") + 1
    assert ids.index("u1") < ids.index("a1") < ids.index("q")
    lead = result.messages[1]
    assert lead.marker is not None
    assert lead.marker["kind"] == "trim_note"
    assert ids.index("u1") > 1, "recalled turns come after the note, before the newest turns"
    assert "u1" not in report.dropped_ids
    in_budget_and_valid(result.messages, report.budget, O200K)
    trimmed = migrate(messages, window(900), strategy="trim")
    assert "u1" not in {m.id for m in trimmed.messages}


def test_recall_follows_an_explicit_query() -> None:
    messages = topical_chat()
    result = migrate(messages, window(900), strategy="recall", query="volcano hike Catania")
    recalled = result.report.recalled_ids
    assert {"u3", "a3"} <= set(recalled)
    assert "u1" not in recalled, "the penguin turn is not what was asked"


def test_recall_keeps_original_order_among_recalled_turns() -> None:
    messages = topical_chat()
    result = migrate(messages, window(1_200), strategy="recall", query="penguin volcano invoice")
    recalled = result.report.recalled_ids
    positions = [next(i for i, m in enumerate(messages) if m.id == r) for r in recalled]
    assert len(recalled) >= 4
    assert positions == sorted(positions)


@pytest.mark.parametrize("query", ["zebra quokka", "penguin colonies"])
def test_recall_gives_the_room_it_does_not_use_to_the_newest_turns(query: str) -> None:
    # few cut turns match: the room set aside for them goes to the turns before the newest ones,
    # as trim would keep them, down to the newest recalled turn
    messages = topical_chat()
    budget = 900
    recalled = migrate(messages, window(budget), strategy="recall", query=query)
    trimmed = migrate(messages, window(budget), strategy="trim")
    report = recalled.report
    in_budget_and_valid(recalled.messages, budget, O200K)
    kept = [m.id for m in recalled.messages if m.role != "system"]
    newest = kept[len(report.recalled_ids) :]
    trim_kept = [m.id for m in trimmed.messages if m.role != "system"]
    # (the messages carry no time: the turns next to a hit come back with it, and take room)
    neighbours = sum(1 for r in report.recalled_ids if r not in ("u1", "a1"))
    assert len(newest) + neighbours >= len(trim_kept) - 2, "at most one turn fewer than trim"
    assert newest == trim_kept[len(trim_kept) - len(newest) :]
    largest_turn = max(
        O200K.count_message(messages[i]) + O200K.count_message(messages[i + 1])
        for i in range(1, len(messages) - 1, 2)
    )
    note = O200K.count_message(recalled.messages[1])
    assert budget - report.tokens_after < largest_turn + note + 16
    if query == "penguin colonies":
        assert {"u1", "a1"} <= set(report.recalled_ids)  # (with the turns next to it)
        assert kept.index("a1") < kept.index(newest[0])


# -- auto and the registry ---------------------------------------------------------------------


def test_auto_offline_is_extractive_summary_with_recall() -> None:
    messages = topical_chat()
    result = migrate(messages, window(900), strategy="auto")
    report = result.report
    assert report.strategy == "auto"
    assert report.summary is not None
    assert report.summary["summarizer"] == "extractive"
    assert "u1" in report.recalled_ids
    in_budget_and_valid(result.messages, report.budget, O200K)


def test_auto_uses_a_configured_summarizer() -> None:
    recorder = RecordingSummarizer("What was said before.")  # (a list of every id is over)
    result = migrate(topical_chat(), window(900), strategy="auto", summarizer=recorder)
    assert recorder.calls
    assert result.report.summary is not None
    assert result.report.summary["summarizer"] == "recording"


def test_get_strategy() -> None:
    assert isinstance(get_strategy("trim"), TrimStrategy)
    assert isinstance(get_strategy("summarize"), SummarizeStrategy)
    assert isinstance(get_strategy("recall"), RecallStrategy)
    assert isinstance(get_strategy("auto"), AutoStrategy)
    summarizer = RecordingSummarizer()
    summarize = get_strategy("summarize", summarizer=summarizer)
    assert isinstance(summarize, SummarizeStrategy)
    assert summarize.summarizer is summarizer
    assert isinstance(SummarizeStrategy().summarizer, ExtractiveSummarizer)
    custom = TrimStrategy()
    assert get_strategy(custom) is custom
    with pytest.raises(ValueError, match="unknown strategy 'shrink'; choose one of auto, trim"):
        get_strategy("shrink")
    for name in ("trim", "summarize", "recall", "auto"):
        assert isinstance(get_strategy(name), Compressor)
        assert get_strategy(name).name == name


def test_a_custom_compressor_gets_the_budget_the_counter_and_the_query() -> None:
    seen: dict[str, object] = {}

    class KeepLast:
        name = "keep-last"

        def compress(
            self,
            messages: Sequence[Message],
            budget: int,
            counter: TokenCounter,
            query: str | None = None,
            *,
            previous_summary: Summary | None = None,
        ) -> CompressionResult:
            seen.update(budget=budget, counter=counter, query=query)
            return CompressionResult([messages[-1]], dropped_ids=[m.id for m in messages[:-1]])

    messages = chat(40, system=False)
    messages.append(Message("user", "the last question", id="last"))
    result = migrate(messages, window(500), strategy=KeepLast())
    assert [m.id for m in result.messages] == ["last"]
    assert result.report.strategy == "keep-last"
    assert seen == {"budget": 500, "counter": O200K, "query": "the last question"}


def test_a_custom_compressors_result_is_checked_not_trusted() -> None:
    messages = chat(60, system=False)

    class Over:
        name = "over"

        def compress(
            self, messages: Sequence[Message], budget: int, *args: Any, **kwargs: Any
        ) -> Any:
            return CompressionResult(list(messages), tokens=10)  # over the budget, and says 10

    class NotAResult:
        name = "not-a-result"

        def compress(self, messages: Sequence[Message], *args: Any, **kwargs: Any) -> Any:
            return list(messages[-2:])

    class Orphan:
        name = "orphan"

        def compress(self, messages: Sequence[Message], *args: Any, **kwargs: Any) -> Any:
            stray = Message("tool", "stray", tool_call_id="nope", id="stray")
            return CompressionResult([stray, messages[-1]])

    with pytest.raises(BudgetError, match=r"compressor 'over' returned [0-9]+ tokens for a budget"):
        migrate(messages, window(500), strategy=Over())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"must return a session_migrator\.CompressionResult"):
        migrate(messages, window(500), strategy=NotAResult())  # type: ignore[arg-type]
    report = migrate(messages, window(500), strategy=Orphan()).report  # type: ignore[arg-type]
    assert report.tokens_after == O200K.count_messages(
        [Message("tool", "stray", tool_call_id="nope", id="stray"), messages[-1]]
    )
    assert any(
        "breaks a chat rule" in note and "no preceding call" in note for note in report.notes
    )


# -- budgets too small, and cutting inside -------------------------------------------------------


def test_a_budget_too_small_for_anything_is_a_clear_error() -> None:
    with pytest.raises(BudgetError) as caught:
        migrate(chat(5), window(20), strategy="trim")
    error = caught.value
    assert error.budget == 20
    assert error.needed > error.budget
    assert "cannot hold any conversation" in str(error)
    assert "larger model" in str(error)


@pytest.mark.parametrize(
    "strategy",
    [TrimStrategy(), SummarizeStrategy(), RecallStrategy(), AutoStrategy()],
    ids=lambda s: s.name,
)
def test_every_small_budget_gives_a_valid_result_or_budget_error(strategy: Compressor) -> None:
    messages = [
        Message("system", "You are terse. " * 40, id="sys1"),
        Message("system", "Use metric.", id="sys2", name="policy"),
        *chat(6, system=False),
        Message(
            "user",
            (
                ContentPart("text", "And this? " * 300),
                ContentPart("image", None, {"type": "image_url", "image_url": {"url": "x"}}),
            ),
            id="big",
        ),
        Message(
            "assistant",
            "",
            tool_calls=(ToolCall("c", "f", json.dumps({"q": "x " * 500})),),
            id="call",
        ),
        Message("tool", "output " * 2_000, tool_call_id="c", id="out"),
    ]
    ok = 0
    errors: list[tuple[int, BudgetError]] = []
    for budget in range(0, 400, 3):
        try:
            result = strategy.compress(messages, budget, O200K)
        except BudgetError as exc:
            errors.append((budget, exc))
            continue
        ok += 1
        in_budget_and_valid(result.messages, budget, O200K)
        ids = [m.id for m in result.messages]
        assert ids[:2] == ["sys1", "sys2"]
        assert "big" in ids, "the newest user message is kept, cut inside"
        assert {"call", "out"} <= set(ids), "the current turn's call stays (cut inside)"
    # from the budget the current turn needs at its smallest on, every budget works
    needed = max(e.needed for _, e in errors)
    assert ok >= len(range(needed + (-needed % 3), 400, 3)) > 0
    for budget, error in errors:
        assert error.budget == budget
        assert error.needed > budget
        if budget >= 120:
            # the system prompt whole leaves too little for the turn's call, even cut down:
            # the error says so, and at the budget it names the call is there
            assert "current turn" in str(error)
            kept = [m.id for m in strategy.compress(messages, error.needed, O200K).messages]
            assert {"sys1", "sys2", "big", "call", "out"} <= set(kept)


def test_a_single_message_larger_than_the_budget_is_cut_inside() -> None:
    head = "The beginning of a very long report. "
    tail = " The final conclusion of the report."
    huge = head + "filler sentence number something. " * 3_000 + tail
    messages = [Message("system", "Be brief.", id="sys"), Message("user", huge, id="big")]
    result = migrate(messages, window(1_000), strategy="trim")
    report = result.report
    assert [m.id for m in result.messages] == ["sys", "big"]
    cut = result.messages[1]
    assert cut.text.startswith(head)
    assert cut.text.endswith(tail)
    assert "tokens cut by session-migrator" in cut.text
    assert cut.marker is not None
    assert cut.marker["kind"] == "truncated"
    assert cut.marker["original_tokens"] == O200K.count_message(messages[1])
    assert report.truncated_ids == ["big"]
    assert report.dropped_ids == []
    in_budget_and_valid(result.messages, report.budget, O200K)
    assert O200K.count_messages(result.messages) > report.budget * 0.5, "the room is used"
    assert messages[1].text == huge


@pytest.mark.parametrize("earlier", [0, 1])
def test_a_turn_cut_inside_gets_the_room_no_summary_or_recall_needs(earlier: int) -> None:
    # the room set aside for a summary and recall goes to the cut-down turn when the part left
    # out is small (or nothing): every strategy uses the budget about as trim does
    report_text = "quarterly numbers, line by line. " * 4_000
    messages = [Message("system", "Be brief.", id="sys")]
    for k in range(earlier):
        messages += [
            Message("user", f"hi {k}", id=f"e{k}"),
            Message("assistant", "hello", id=f"r{k}"),
        ]
    messages += [
        Message("user", "Summarize this report: " + report_text, id="big"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "fetch"),), id="call"),
        Message("tool", "appendix: " + report_text, tool_call_id="c1", id="out"),
    ]
    trimmed = migrate(messages, window(4_000), strategy="trim").report.tokens_after
    for strategy in ("summarize", "recall", "auto"):
        result = migrate(messages, window(4_000), strategy=strategy)
        in_budget_and_valid(result.messages, 4_000, O200K)
        assert set(result.report.truncated_ids) == {"big", "out"}
        assert result.report.tokens_after > 0.9 * trimmed, strategy


def test_a_huge_tool_output_in_the_newest_turn_is_cut_not_orphaned() -> None:
    messages = [
        Message("user", "Read the log.", id="u"),
        Message(
            "assistant", "", tool_calls=(ToolCall("c1", "read_file", '{"p": "a.log"}'),), id="a"
        ),
        Message("tool", "START " + "log line\n" * 20_000 + " END", tool_call_id="c1", id="t"),
    ]
    result = migrate(messages, window(2_000), strategy="auto")
    assert [m.id for m in result.messages] == ["u", "a", "t"]
    assert result.report.truncated_ids == ["t"]
    out = result.messages[2].text
    assert out.startswith("START ")
    assert out.endswith(" END")
    in_budget_and_valid(result.messages, result.report.budget, O200K)


def test_a_huge_system_prompt_is_cut_inside_and_kept() -> None:
    messages = [
        Message("system", "Rule: " + "always be precise. " * 5_000, id="sys"),
        Message("system", "Short rule.", id="sys2"),
        *chat(3, system=False),
    ]
    result = migrate(messages, window(1_000), strategy="summarize")
    ids = [m.id for m in result.messages]
    assert ids[:2] == ["sys", "sys2"]
    assert result.messages[1] is messages[1], "the small system message is kept whole"
    assert "sys" in result.report.truncated_ids
    assert ids[-2:] == ["u2", "a2"]
    in_budget_and_valid(result.messages, result.report.budget, O200K)


@pytest.mark.parametrize("strategy", ["trim", "auto"])
def test_a_huge_system_prompt_takes_the_room_a_short_conversation_leaves(strategy: str) -> None:
    messages = [Message("system", "Rule: " + "always be precise. " * 5_000, id="sys")]
    messages += chat(3, system=False)
    result = migrate(messages, window(2_000), strategy=strategy)
    report = result.report
    in_budget_and_valid(result.messages, 2_000, O200K)
    assert report.truncated_ids == ["sys"]
    assert [m.id for m in result.messages][1:] == [m.id for m in messages[1:]]  # all kept
    assert report.tokens_after > 0.9 * 2_000  # not half the room for the system prompt


# -- fitting on cached counts ------------------------------------------------------------------


class CountingCounter(BaseCounter):
    """The o200k counter's counts under a fresh cache, recording every ``count_text`` call."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__()
        self._inner = TiktokenCounter("o200k_base")
        self._name = name or f"counting-{uuid.uuid4().hex}"
        self._exact = True
        self.texts: list[str] = []

    def count_text(self, text: str) -> int:
        self.texts.append(text)
        return self._inner.count_text(text)


def message_texts(messages: Sequence[Message]) -> set[str]:
    """Every string the counter tokenizes for these messages."""
    out: set[str] = set()
    for m in messages:
        if isinstance(m.content, str):
            out.add(m.content)
        else:
            out.update(p.text for p in m.content if p.text)
        out.update(t for c in m.tool_calls for t in (c.name, c.arguments))
        if m.name:
            out.add(m.name)
        if m.tool_call_id:
            out.add(m.tool_call_id)
    out.discard("")
    return out


@pytest.mark.parametrize("strategy", ["trim", "summarize", "recall", "auto"])
def test_refitting_tokenizes_only_new_messages(strategy: str) -> None:
    messages = topical_chat() + chat(150, system=False, words=40)
    messages.append(Message("user", "What about the penguins?", id="now"))
    counter = CountingCounter()
    target = window(2_000)

    first = migrate(messages, target, strategy=strategy, counter=counter)
    assert first.report.decision == "compressed"
    originals = message_texts(messages)
    assert {t for t in counter.texts if t in originals} == originals, "all counted once"

    counter.texts.clear()
    again = migrate(messages, target, strategy=strategy, counter=counter)
    assert again.messages == first.messages
    assert [t for t in counter.texts if t in originals] == []
    if strategy in ("trim", "recall"):
        assert counter.texts == [], "nothing at all is tokenized again"
    # summarize and auto: the extractive summarizer scores and counts its candidate lines again
    # (derived text, not messages); a rolling summary (previous_summary=) is what spares that

    new = Message("assistant", "A brand new answer about penguins and krill.", id="new")
    counter.texts.clear()
    migrate([*messages, new], target, strategy=strategy, counter=counter)
    assert [t for t in counter.texts if t in originals | {new.text}] == [new.text]
    if strategy in ("trim", "recall"):
        assert counter.texts == [new.text], "the new message alone is tokenized"


@pytest.mark.parametrize("role", ["user", "system"])
def test_a_user_or_system_message_is_never_cut_to_nothing(role: str) -> None:
    message = Message(role, "lots of words here " * 500, name="alice", id="m")  # type: ignore[arg-type]
    smallest = O200K.count_message(message.replace(content="[...]"))
    for target in range(smallest, smallest + 40):
        cut = truncate_message(message, target, O200K)
        assert O200K.count_message(cut) <= target
        assert cut.text.strip(), f"empty {role} message at target {target}"
        assert chat_rule_violations([cut] if role == "user" else [cut, Message("user", "q")]) == []
    with pytest.raises(ValueError, match="even with its content removed"):
        truncate_message(message, smallest - 1, O200K)


def test_a_tool_result_may_be_cut_to_empty_content() -> None:
    message = Message("tool", "output " * 500, tool_call_id="c1", id="t")
    shell = O200K.count_message(message.replace(content=""))
    cut = truncate_message(message, shell, O200K)
    assert O200K.count_message(cut) <= shell
    assert cut.tool_call_id == "c1"
    assert cut.marker is not None
    assert cut.marker["kind"] == "truncated"


@pytest.mark.parametrize(
    ("strategy", "error", "match"),
    [
        ("Trim", ValueError, "unknown strategy 'Trim'"),
        (None, TypeError, "strategy must be one of"),
        (42, TypeError, "strategy must be one of"),
        (
            TrimStrategy,
            TypeError,
            r"is a class: pass an instance, e\.g\. strategy=TrimStrategy\(\)",
        ),
    ],
)
def test_a_wrong_strategy_is_refused_where_it_is_given(
    strategy: Any, error: type[Exception], match: str
) -> None:
    from langchain_session_migrator import FittedHistoryFactory, FitToModelMiddleware
    from llamaindex_session_migrator import SessionMigratorMemory
    from session_migrator import SessionFitter

    with pytest.raises(error, match=match):
        migrate(chat(2), window(1_000), strategy=strategy)
    with pytest.raises(error, match=match):
        SessionFitter("s", store="memory://", strategy=strategy)
    with pytest.raises(error, match=match):
        FittedHistoryFactory(store="memory://", model_key=None, strategy=strategy)
    with pytest.raises(error, match=match):
        FitToModelMiddleware(strategy=strategy)
    with pytest.raises(error, match=match):
        SessionMigratorMemory.from_defaults(store="memory://", strategy=strategy)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"target": 42}, "target must be a model name or a session_migrator.ModelWindow"),
        ({"counter": "cl100k_base"}, "counter must be a TokenCounter"),
        ({"query": 123}, "query must be a string"),
        ({"summarizer": "openai"}, "summarizer must be a Summarizer"),
    ],
)
def test_a_wrong_argument_type_says_what_is_expected(kwargs: dict[str, Any], match: str) -> None:
    arguments: dict[str, Any] = {"target": window(1_000), **kwargs}
    with pytest.raises(TypeError, match=match):
        migrate(chat(2), **arguments)


@pytest.mark.parametrize("strategy", ["summarize", "recall", "auto"])
def test_a_system_prompt_that_leaves_little_room_still_gets_the_newest_turn(
    strategy: str,
) -> None:
    # the room beside the system prompt holds the newest user message cut down, not that and a
    # summary's or recall's share too: the shares give way before a BudgetError is raised
    # (hypothesis found: a 202-token system prompt, 24 tokens left)
    system = Message("system", "Keep every answer short and precise. " * 40, id="sys")
    messages = [system, *chat(6)[1:]]
    budget = O200K.count_messages([system]) + 30
    for name in (strategy, "trim"):
        result = migrate(messages, window(budget), strategy=name)
        in_budget_and_valid(result.messages, budget, O200K)
        assert result.messages[0] == system
        assert "u5" in [m.id for m in result.messages]  # the newest question, cut down or whole


def test_the_summary_takes_its_share_up_to_a_cap_and_recalls_leftover_goes_to_turns() -> None:
    # a long conversation on a large budget: the summary is not given a fifth of 100k tokens;
    # the turns kept verbatim are (a user's turns are summarized last)
    messages = chat(1_500, words=40)
    total = O200K.count_messages(messages)
    budget = int(total * 0.7)
    recorder = RecordingSummarizer()
    result = migrate(messages, window(budget), strategy=AutoStrategy(recorder))
    asked = recorder.calls[-1][2]
    assert asked <= 4_096 + 200  # the cap (and the room a recall line may leave it)
    assert result.report.tokens_after >= 0.95 * budget
    users = {m.id for m in messages if m.role == "user"}
    kept = [m.id for m in result.messages if m.id in users]
    trimmed = migrate(messages, window(budget), strategy="trim")
    assert len(kept) >= len([m for m in trimmed.messages if m.id in users]) - 60
    smaller = AutoStrategy(recorder, max_summary_tokens=500)
    migrate(messages, window(budget), strategy=smaller)
    assert recorder.calls[-1][2] <= 500 + 200
    with pytest.raises(ValueError, match="max_summary_tokens"):
        SummarizeStrategy(max_summary_tokens=0)
