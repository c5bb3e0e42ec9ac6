"""SessionMigratorMemory on its own: the BaseMemory API, persistence, fitting, the model."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from llama_index.core import Settings
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, TextBlock, ToolCallBlock
from llama_index.core.llms import MockLLM
from llama_index.core.memory import BaseMemory, ChatMemoryBuffer
from llama_index.core.output_parsers import PydanticOutputParser
from pydantic import BaseModel

from llamaindex_session_migrator import (
    LlamaIndexSummarizer,
    SessionMigratorMemory,
    from_chat_messages,
)
from llamaindex_session_migrator._memory_hooks import PromptTokenizer
from llamaindex_session_migrator._models import DEFAULT_WINDOW
from session_migrator import DEFAULT_SLACK, Message, ModelWindow, SummarizerError, TiktokenCounter
from session_migrator.counting._counter import TOKENS_PER_MESSAGE
from session_migrator.messages._rules import is_valid_chat
from session_migrator.migration._migrate import default_counter
from session_migrator.store import open_store

MemoryFactory = Callable[..., SessionMigratorMemory]
COUNTER = TiktokenCounter("o200k_base")


def _turns(n: int, words: int = 30) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    for i in range(n):
        out.append(ChatMessage(role="user", content=f"question {i}: " + "blah " * words))
        out.append(ChatMessage(role="assistant", content=f"answer {i}: " + "word " * words))
    return out


def _tokens(messages: list[ChatMessage]) -> int:
    return COUNTER.count_messages(from_chat_messages(messages))


class _Answer(BaseModel):
    text: str


def test_is_a_chat_memory_buffer(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    assert isinstance(memory, ChatMemoryBuffer)
    assert isinstance(memory, BaseMemory)
    assert memory.chat_store_key == memory.session_id == "s1"


def test_put_get_all_and_reset(make_memory: MemoryFactory) -> None:
    memory = make_memory(llm=MockLLM())
    memory.put(ChatMessage(role="user", content="hello"))
    memory.put_messages([ChatMessage(role="assistant", content="hi"), ChatMessage(content="bye")])
    assert [m.content for m in memory.get_all()] == ["hello", "hi", "bye"]
    assert [m.content for m in memory.get()] == ["hello", "hi", "bye"]
    memory.reset()
    assert memory.get_all() == []
    assert memory.get() == []


async def test_async_forms(make_memory: MemoryFactory) -> None:
    memory = make_memory(llm=MockLLM())
    await memory.aput(ChatMessage(role="user", content="a"))
    await memory.aput_messages([ChatMessage(role="assistant", content="b")])
    assert [m.content for m in await memory.aget()] == ["a", "b"]
    assert [m.content for m in await memory.aget_all()] == ["a", "b"]
    await memory.aset([ChatMessage(role="user", content="c")])
    assert [m.content for m in await memory.aget_all()] == ["c"]
    await memory.areset()
    assert await memory.aget_all() == []


def test_log_persists_across_memories_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'p.db'}"
    first = SessionMigratorMemory.from_defaults(chat_store_key="chat", store=url, llm=MockLLM())
    first.put_messages(_turns(2))
    first.close()
    second = SessionMigratorMemory.from_defaults(chat_store_key="chat", store=url, llm=MockLLM())
    try:
        assert [m.content for m in second.get_all()] == [m.content for m in _turns(2)]
    finally:
        second.close()


def test_default_store_is_embedded_sqlite_under_home(tmp_path: Path) -> None:
    memory = SessionMigratorMemory.from_defaults(chat_store_key="d", llm=MockLLM())
    try:
        memory.put(ChatMessage(content="x"))
        assert memory.store.url.startswith("sqlite:///")
        assert (tmp_path / "sm-home" / "sessions.db").exists()
    finally:
        memory.close()


def test_get_fits_the_window_and_get_all_keeps_everything(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    llm = make_llm(context_window=1000, num_output=100)
    memory = make_memory(llm=llm, strategy="trim")
    memory.put_messages(_turns(40))
    fitted = memory.get()
    assert _tokens(fitted) <= 900
    assert len(memory.get_all()) == 80
    report = memory.last_report
    assert report is not None
    assert report.decision == "compressed"
    assert report.tokens_after <= report.budget
    assert fitted[-1].content == _turns(40)[-1].content
    assert is_valid_chat(from_chat_messages(fitted))


def test_a_second_get_reuses_the_fit_and_copies_only_what_llamaindex_edits(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    memory = make_memory(llm=make_llm(context_window=1000), strategy="trim")
    memory.put_messages(_turns(40))
    first = memory.get()
    report = memory.last_report
    second = memory.get()
    assert memory.last_report is report  # cached: no re-fit, no tokenization
    assert first == second
    assert first is not second  # a new list: callers insert into it and replace items
    # new objects each call: the leading system message (here the trim note), the latest user
    # message and the last message; the others are shared by every read of this fit
    assert first[0].role.value == "system"
    assert [first[-2].role.value, first[-1].role.value] == ["user", "assistant"]
    fresh = {0, len(first) - 2, len(first) - 1}
    assert [i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a is not b] == sorted(
        fresh
    )
    for i in fresh:  # down to the blocks and additional_kwargs
        assert first[i].blocks is not second[i].blocks
        assert all(a is not b for a, b in zip(first[i].blocks, second[i].blocks, strict=True))
        assert first[i].additional_kwargs is not second[i].additional_kwargs


def test_the_edits_llamaindex_makes_never_reach_the_log_or_a_later_read(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    memory = make_memory(llm=make_llm(context_window=1000), strategy="trim")
    memory.put_messages(_turns(40))
    stored = _stored(memory)
    full = memory.get_all()
    got = memory.get()
    pristine = [m.model_copy(deep=True) for m in got]
    # what LlamaIndex does to a history in place, each to the message it picks:
    text = got[-1].blocks[-1]
    assert isinstance(text, TextBlock)
    text.text = "state + " + text.text  # an agent's setup_agent
    got[0].blocks.append(TextBlock(text="format instructions"))  # an output parser
    got[-2].blocks = [TextBlock(text="memory block"), *got[-2].blocks]  # Memory, user insert
    got[-1].additional_kwargs["seen"] = True
    got.insert(0, ChatMessage(role="system", content="composed"))  # SimpleComposableMemory
    assert memory.get() == pristine
    assert memory.get_all() == full
    memory.set(memory.get_all())
    assert _stored(memory) == stored
    memory.put(ChatMessage(role="user", content="next"))
    refit = memory.get()  # a new fit, in which the messages edited above are shared ones
    assert refit[-3:-1] == pristine[-2:]


@pytest.mark.parametrize("leading_system", [True, False])
def test_an_output_parser_formatting_the_history_in_place_changes_nothing(
    make_memory: MemoryFactory, leading_system: bool
) -> None:
    """``BaseOutputParser.format_messages`` edits the first message if it is a system message,
    else the last, in place."""
    memory = make_memory(llm=MockLLM())
    turns = _turns(5)
    if leading_system:
        turns.insert(0, ChatMessage(role="system", content="Be brief."))
    memory.put_messages(turns)
    before = memory.get()
    formatted = PydanticOutputParser(output_cls=_Answer).format_messages(memory.get())
    edited = 0 if leading_system else -1
    assert formatted[edited] != before[edited]
    assert memory.get() == before
    assert [m.content for m in memory.get_all()] == [m.content for m in turns]


def test_initial_token_count_is_taken_off_the_budget(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    memory = make_memory(llm=make_llm(context_window=2000, num_output=100), strategy="trim")
    memory.put_messages(_turns(40))
    memory.get()
    assert memory.last_report is not None
    budget = memory.last_report.budget
    less = _tokens(memory.get(initial_token_count=600))
    assert memory.last_report.budget == budget - 600
    assert less <= budget - 600


def test_token_limit_caps_the_history(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    memory = make_memory(llm=make_llm(context_window=4000), token_limit=1000, strategy="trim")
    memory.put_messages(_turns(40))
    # as ChatMemoryBuffer's: the history takes up to token_limit less initial_token_count (the
    # model's own input reserve, 400 here, is not taken off the cap again); it is cut at whole
    # turns, with a note, and leaves up to the slack's share free for the next turns (the cut
    # sits on a grid of such steps, so that the prompt's head stays the same between them)
    for initial in (0, 300):
        history = _tokens(memory.get(initial_token_count=initial))
        assert (1 - DEFAULT_SLACK - 0.1) * (1000 - initial) < history <= 1000 - initial
        assert memory.last_report is not None
        assert memory.last_report.budget == 1000 - initial
    # a cap above the model's budget leaves that budget as it is
    roomy = make_memory("s2", llm=make_llm(context_window=1200), token_limit=100_000)
    roomy.put_messages(_turns(40))
    plain = make_memory("s3", llm=make_llm(context_window=1200))
    plain.put_messages(_turns(40))
    roomy.get()
    plain.get()
    assert roomy.last_report is not None
    assert plain.last_report is not None
    assert roomy.last_report.budget == plain.last_report.budget < 1200


@pytest.mark.parametrize("strategy", ["trim", "summarize", "recall", "auto"])
def test_every_strategy_fits(
    make_memory: MemoryFactory, make_llm: Callable[..., Any], strategy: str
) -> None:
    memory = make_memory(llm=make_llm(context_window=1200), strategy=strategy)
    turns = _turns(30)
    turns[4] = ChatMessage(role="assistant", content="The launch code is ZEBRA-42. " * 3)
    memory.put_messages(turns)
    fitted = memory.get(input="what was the launch code ZEBRA?")
    assert _tokens(fitted) <= 1100
    assert is_valid_chat(from_chat_messages(fitted))
    report = memory.last_report
    assert report is not None
    assert report.strategy == strategy
    if strategy in ("recall", "auto"):
        assert any("ZEBRA-42" in (m.content or "") for m in fitted)


def test_recall_uses_the_latest_user_message_without_input(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    memory = make_memory(llm=make_llm(context_window=1200), strategy="recall")
    turns = _turns(30)
    turns[4] = ChatMessage(role="assistant", content="The launch code is ZEBRA-42. " * 3)
    memory.put_messages(
        [*turns, ChatMessage(role="user", content="Remind me: the launch code ZEBRA?")]
    )
    assert any("ZEBRA-42" in (m.content or "") for m in memory.get())


def test_tool_pairs_stay_together(make_memory: MemoryFactory, make_llm: Callable[..., Any]) -> None:
    memory = make_memory(llm=make_llm(context_window=900), strategy="trim")
    for i in range(25):
        call = ToolCallBlock(tool_call_id=f"c{i}", tool_name="lookup", tool_kwargs={"i": i})
        memory.put_messages(
            [
                ChatMessage(role="user", content=f"look up {i} " + "x " * 20),
                ChatMessage(role="assistant", blocks=[call]),
                ChatMessage(
                    role="tool", content="found " * 20, additional_kwargs={"tool_call_id": f"c{i}"}
                ),
                ChatMessage(role="assistant", content=f"done {i}"),
            ]
        )
    fitted = memory.get()
    assert memory.last_report is not None
    assert memory.last_report.decision == "compressed"
    assert is_valid_chat(from_chat_messages(fitted))


# -- set ---------------------------------------------------------------------------------------


def _stored(memory: SessionMigratorMemory) -> list[Message]:
    return memory.store.load(memory.session_id)


def test_set_with_the_same_history_changes_nothing(make_memory: MemoryFactory) -> None:
    memory = make_memory(llm=MockLLM())
    memory.put_messages(_turns(3))
    before = _stored(memory)
    memory.set(memory.get_all())
    assert _stored(memory) == before


def test_set_with_new_messages_at_the_end_appends_only_those(make_memory: MemoryFactory) -> None:
    memory = make_memory(llm=MockLLM())
    memory.put_messages(_turns(3))
    before = _stored(memory)
    memory.set([*memory.get_all(), ChatMessage(role="user", content="more")])
    after = _stored(memory)
    assert after[:-1] == before
    assert after[-1].text == "more"


def test_set_with_a_fitted_view_keeps_the_full_log(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    memory = make_memory(llm=make_llm(context_window=800), strategy="trim")
    memory.put_messages(_turns(30))
    before = _stored(memory)
    view = memory.get()
    assert view[0].role.value == "system"  # the trim note
    memory.set([*view, ChatMessage(role="user", content="next")])
    after = _stored(memory)
    assert after[:-1] == before
    assert after[-1].text == "next"


def test_set_dropping_messages_deletes_them_and_keeps_the_rest(make_memory: MemoryFactory) -> None:
    memory = make_memory(llm=MockLLM())
    memory.put_messages(_turns(3))
    before = _stored(memory)
    memory.set([*memory.get_all()[2:], ChatMessage(content="new")])
    after = _stored(memory)
    assert after[:-1] == before[2:]
    assert after[-1].text == "new"


def test_set_reordering_rewrites_but_keeps_ids(make_memory: MemoryFactory) -> None:
    memory = make_memory(llm=MockLLM())
    memory.put_messages(_turns(2))
    before = _stored(memory)
    everything = memory.get_all()
    memory.set([ChatMessage(role="system", content="first"), *everything])
    after = _stored(memory)
    assert after[0].text == "first"
    assert [m.id for m in after[1:]] == [m.id for m in before]


def test_chat_history_in_from_defaults_is_set(make_memory: MemoryFactory) -> None:
    memory = make_memory(llm=MockLLM(), chat_history=_turns(2))
    assert len(memory.get_all()) == 4
    again = make_memory(llm=MockLLM(), chat_history=_turns(2))  # same history: no duplicates
    assert len(again.get_all()) == 4
    empty = make_memory(llm=MockLLM(), chat_history=[])  # engines pass []: nothing is erased
    assert len(empty.get_all()) == 4


# -- the model ---------------------------------------------------------------------------------


def test_changed_llm_metadata_is_noticed_on_the_next_get(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    llm = make_llm(model_name="gpt-4o", context_window=8000)
    memory = make_memory(llm=llm)
    memory.put_messages(_turns(40))
    big = memory.get()
    assert memory.last_report is not None
    assert memory.last_report.decision == "fits"
    llm.model_name, llm.context_window = "gpt-4o-mini", 1000
    small = memory.get()
    assert _tokens(small) <= 900 < _tokens(big)
    llm.model_name, llm.context_window = "gpt-4o", 8000
    assert memory.get() == big
    moves = [(r.from_model, r.to_model) for r in memory.store.migrations("s1")]
    assert moves == [(None, "gpt-4o"), ("gpt-4o", "gpt-4o-mini"), ("gpt-4o-mini", "gpt-4o")]


def test_settings_llm_is_used_when_no_llm_is_given(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    memory = make_memory()
    memory.put_messages(_turns(40))
    memory.get()
    assert memory.model_source == "default"
    Settings.llm = make_llm(context_window=6000)
    memory.get()
    assert memory.model_source == "settings"
    assert memory.model_window is not None
    assert memory.model_window.context_window == 6000
    Settings.llm = make_llm(context_window=1000)
    assert _tokens(memory.get()) <= 900


def test_set_model_wins_over_everything(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    memory = make_memory(llm=make_llm(context_window=1000))
    memory.put_messages(_turns(10))
    memory.set_model("gpt-4o")
    memory.get()
    assert memory.model_source == "explicit"
    assert memory.model_window is not None
    assert memory.model_window.context_window == 128_000
    window = ModelWindow("tiny", "test", 600, 600, 50, "o200k_base", "explicit")
    memory.set_model(window)
    assert _tokens(memory.get()) <= 550
    memory.set_model(None)
    memory.get()
    assert memory.model_source == "llm"
    with pytest.raises(Exception, match="Unknown model"):
        memory.set_model("no-such-model-xyz")


def test_the_model_that_really_ran_is_observed(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    configured = make_llm(model_name="gpt-4o", context_window=8000)
    memory = make_memory(llm=configured)
    memory.put_messages(_turns(40))
    history = memory.get()
    assert memory.model_source == "llm"
    other = make_llm(model_name="gpt-4o-mini", context_window=1000)
    other.chat(history)  # an engine used another model than the memory was told
    fitted = memory.get()
    assert memory.model_source == "observed"
    assert _tokens(fitted) <= 900
    configured.context_window = 7000  # the configured model changes later: it is newer
    memory.get()
    assert memory.model_source == "llm"


@pytest.mark.parametrize("sent", ["shared", "fresh", "copies"])
def test_a_call_carrying_the_history_in_any_form_is_observed(
    make_memory: MemoryFactory, make_llm: Callable[..., Any], sent: str
) -> None:
    memory = make_memory(llm=make_llm(model_name="gpt-4o", context_window=8000))
    memory.put_messages(_turns(10))
    history = memory.get()
    if sent == "shared":  # messages shared by every read of the fit
        messages = history[2:5]
    elif sent == "fresh":  # the copy of the last message this read handed out
        messages = [ChatMessage(role="system", content="Be brief."), history[-1]]
    else:  # new objects equal to it (context engines format the history into new messages)
        messages = [m.model_copy(deep=True) for m in history]
    make_llm(model_name="gpt-4o-mini", context_window=1000).chat(messages)
    memory.get()
    assert memory.model_source == "observed"
    assert memory.model_window is not None
    assert memory.model_window.context_window == 1000


def test_two_memories_ending_alike_each_observe_their_own_calls(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    first = make_memory("a", llm=make_llm(model_name="gpt-4o", context_window=8000))
    second = make_memory("b", llm=make_llm(model_name="gpt-4o", context_window=8000))
    for memory in (first, second):
        memory.put_messages(_turns(3))
    first_history, second_history = first.get(), second.get()
    assert first_history == second_history  # equal, but not the same objects
    make_llm(model_name="gpt-4o-mini", context_window=1000).chat(first_history)
    make_llm(model_name="gpt-4o-mini", context_window=1500).chat(second_history)
    windows = []
    for memory in (first, second):
        memory.get()
        assert memory.model_source == "observed"
        assert memory.model_window is not None
        windows.append(memory.model_window.context_window)
    assert windows == [1000, 1500]


def test_a_call_is_ours_when_it_carries_an_object_the_last_read_handed_out(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    memory = make_memory(llm=make_llm(context_window=8000))
    memory.put_messages(_turns(3))
    first, second = memory.get(), memory.get()

    def ours(message: ChatMessage) -> bool:
        return memory._observe([message], {}, True)

    shared = [b for a, b in zip(first, second, strict=True) if a is b]
    stale = [a for a, b in zip(first, second, strict=True) if a is not b]
    assert len(shared) == 4  # no system message: the latest user message and the last are new
    assert len(stale) == 2
    assert all(ours(m) for m in second)  # the shared messages and this read's fresh copies
    assert not any(ours(m) for m in stale)  # the copies an earlier read handed out
    handout = memory._handout  # the templates of the copies are never handed out
    assert not any(ours(handout._shared[i]) for i in handout._fresh)
    assert not ours(second[-1].model_copy(deep=True))  # equal is not the same object
    assert memory._observe([second[-1].model_copy(deep=True)], {}, False)  # ... but is equal


def test_calls_that_did_not_carry_the_history_are_ignored(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    memory = make_memory(llm=make_llm(context_window=8000))
    memory.put_messages(_turns(3))
    memory.get()
    make_llm(model_name="gpt-4o-mini", context_window=500).chat([ChatMessage(content="unrelated")])
    memory.get()
    assert memory.model_source == "llm"


def test_no_model_at_all_uses_llamaindex_defaults(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    memory.put_messages(_turns(60))
    fitted = memory.get()
    assert memory.model_source == "default"
    assert memory.model_window is not None
    assert memory.model_window.context_window == 3900
    assert len(fitted) < 120


# -- summaries with the LlamaIndex LLM ---------------------------------------------------------


class _FailingLLM(MockLLM):
    def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        raise RuntimeError("model is down")


def test_summaries_written_by_the_llamaindex_llm(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    writer = make_llm(model_name="gpt-4o-mini", reply_words=5)
    memory = make_memory(llm=make_llm(context_window=1000), strategy="summarize", summarizer=writer)
    memory.put_messages(_turns(30))
    fitted = memory.get()
    report = memory.last_report
    assert report is not None
    assert report.summary is not None
    assert report.summary["summarizer"] == "llamaindex:gpt-4o-mini"
    assert report.fallbacks == []
    assert "reply" in (fitted[0].content or "")
    assert writer.received  # the summarizing model was asked
    assert memory.store.get_summary("s1") is not None


def test_a_failing_summarizer_llm_falls_back(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    memory = make_memory(
        llm=make_llm(context_window=1000), strategy="summarize", summarizer=_FailingLLM()
    )
    memory.put_messages(_turns(30))
    memory.get()
    report = memory.last_report
    assert report is not None
    assert report.fallbacks
    assert "model is down" in report.fallbacks[0]


def test_llamaindex_summarizer_sync_and_async(make_llm: Callable[..., Any]) -> None:
    summarizer = LlamaIndexSummarizer(make_llm(reply_words=3), max_input_tokens=200)
    messages = from_chat_messages(_turns(20))
    text = summarizer.summarize(messages, max_tokens=100, counter=COUNTER)
    assert text.startswith("reply")
    again = asyncio.run(
        summarizer.asummarize(messages, max_tokens=100, counter=COUNTER, previous=text)
    )
    assert again.startswith("reply")
    with pytest.raises(SummarizerError, match="model is down"):
        LlamaIndexSummarizer(_FailingLLM()).summarize(messages, max_tokens=10, counter=COUNTER)


# -- construction ------------------------------------------------------------------------------


def test_from_defaults_rejects_a_llamaindex_chat_store_and_unknown_kwargs() -> None:
    from llama_index.core.storage.chat_store import SimpleChatStore

    with pytest.raises(ValueError, match="store="):
        SessionMigratorMemory.from_defaults(chat_store=SimpleChatStore())
    with pytest.raises(ValueError, match="Unexpected kwargs"):
        SessionMigratorMemory.from_defaults(bogus=1)
    with pytest.raises(ValueError, match="reserve_input"):
        SessionMigratorMemory.from_defaults(reserve_input=1.5)


def test_a_store_object_is_left_open(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'o.db'}")
    memory = SessionMigratorMemory.from_defaults(chat_store_key="k", store=store, llm=MockLLM())
    memory.put(ChatMessage(content="x"))
    memory.close()
    assert [m.text for m in store.load("k")] == ["x"]
    store.close()


def test_reset_starts_the_migration_log_afresh(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    memory = make_memory(llm=make_llm(model_name="gpt-4o"))
    memory.put_messages(_turns(2))
    memory.get()
    memory.reset()
    assert memory.get() == []  # an empty session: nothing to fit, nothing to log
    memory.put_messages(_turns(1))
    memory.get()
    assert [(r.from_model, r.to_model) for r in memory.store.migrations("s1")] == [(None, "gpt-4o")]


def test_a_call_on_the_configured_model_is_not_a_change(
    make_memory: MemoryFactory, make_llm: Callable[..., Any]
) -> None:
    llm = make_llm(context_window=4000)
    memory = make_memory(llm=llm, token_limit=500)
    memory.put_messages(_turns(10))
    llm.chat(memory.get())
    memory.get()
    assert memory.model_source == "llm"


def test_the_cut_is_kept_while_new_turns_fit_unless_slack_is_zero() -> None:
    window = ModelWindow("small", "test", 2_000, 2_000, 0, "o200k_base", "explicit")
    filler = "We went over the staging checks and the release notes once more. " * 8
    heads: dict[float, list[str | None]] = {}
    for slack in (0.2, 0.0):
        memory = SessionMigratorMemory.from_defaults(
            chat_store_key=f"slack-{slack}",
            store="memory://",
            model=window,
            strategy="trim",
            reserve_input=0,
            slack=slack,
        )
        memory.put(ChatMessage(role="system", content="You are terse."))
        for k in range(30):
            memory.put(ChatMessage(role="user", content=f"Step {k}. {filler}"))
            memory.put(ChatMessage(role="assistant", content=f"Done {k}."))
        seen: list[str | None] = []
        for k in range(6):
            got = memory.get()
            assert memory.last_report is not None
            assert memory.last_report.decision == "compressed"  # a cut: got[1] is its note
            assert got[-1].content == memory.get_all()[-1].content
            seen.append(got[1].content)  # the note on what was cut
            memory.put(ChatMessage(role="user", content=f"Question {k}? {filler[:120]}"))
            memory.put(ChatMessage(role="assistant", content=f"Short answer {k}."))
        heads[slack] = seen
    assert len(set(heads[0.2])) == 1  # nothing more is cut while the new turns fit
    assert len(set(heads[0.0])) > 1  # every get cuts afresh


def test_slack_must_be_a_small_share() -> None:
    with pytest.raises(ValueError, match="slack"):
        SessionMigratorMemory.from_defaults(chat_store_key="x", store="memory://", slack=0.8)


def test_its_tokenizer_counts_for_the_model_and_loads_no_llamaindex_encoding(
    make_memory: MemoryFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    import llama_index.core

    # the parent's default tokenizer would load LlamaIndex's global tiktoken encoding
    monkeypatch.setattr(llama_index.core, "global_tokenizer", None)
    window = ModelWindow("w", "p", 4_000, 4_000, 0, "o200k_base", "explicit")
    made = [
        make_memory(model=window),
        SessionMigratorMemory(token_limit=1_000, chat_store_key="direct"),
        SessionMigratorMemory.model_validate({"token_limit": 1_000}),
    ]
    assert llama_index.core.global_tokenizer is None
    text = "How many tokens does the engine's system prompt take?"
    # the model's count plus a message's chat-format overhead, so that prefix + history fit
    assert len(made[0].tokenizer_fn(text)) == COUNTER.count_text(text) + TOKENS_PER_MESSAGE + 1
    assert made[0].tokenizer_fn("") == []
    # with no model known at all, LlamaIndex's default window (and its estimating counter)
    default = default_counter(DEFAULT_WINDOW).count_text(text) + TOKENS_PER_MESSAGE + 1
    assert default != COUNTER.count_text(text) + TOKENS_PER_MESSAGE + 1
    for memory in made:
        assert isinstance(memory.tokenizer_fn, PromptTokenizer)
    for memory in made[1:]:
        assert len(memory.tokenizer_fn(text)) == default
        memory.close()
    # a tokenizer given explicitly is kept
    mine = make_memory("own", tokenizer_fn=lambda t: t.split())
    assert mine.tokenizer_fn("a b c") == ["a", "b", "c"]
    assert llama_index.core.global_tokenizer is None  # counting loaded none either


def test_deletes_by_another_process_are_seen_at_the_next_get(tmp_path: Path) -> None:
    from session_migrator.cli import main

    url = f"sqlite:///{tmp_path / 'app.db'}"
    memory = SessionMigratorMemory.from_defaults(chat_store_key="li", store=url, model="gpt-4o")
    memory.put_messages(
        [
            ChatMessage(role="user", content="my password is hunter2"),
            ChatMessage(role="assistant", content="ok"),
            ChatMessage(role="user", content="weather?"),
            ChatMessage(role="assistant", content="sunny"),
        ]
    )
    assert len(memory.get()) == 4
    first = memory.store.load("li")[0].id
    assert main(["sessions", "delete", "li", "--message", first, "--store", url]) == 0
    # the log now opens with the model's turn, which a model rejects: left out of get()
    assert [m.content for m in memory.get()] == ["weather?", "sunny"]
    assert [m.content for m in memory.get_all()] == ["ok", "weather?", "sunny"]
    assert main(["sessions", "delete", "li", "--store", url]) == 0
    assert memory.get() == []
    assert memory.get_all() == []
    memory.put(ChatMessage(role="user", content="hello again"))
    assert [m.content for m in memory.get()] == ["hello again"]


def test_copying_fails_clearly_and_serializing_refers_to_the_session(
    make_memory: MemoryFactory,
) -> None:
    import copy
    import pickle

    from llama_index.core.storage.chat_store import SimpleChatStore

    memory = make_memory()
    memory.put(ChatMessage(role="user", content="Hello"))
    for attempt in (lambda: copy.deepcopy(memory), lambda: memory.model_copy(deep=True)):
        with pytest.raises(TypeError, match="cannot be deep-copied"):
            attempt()
    # serialized, it is a reference to its store and session: in this process, itself
    assert pickle.loads(pickle.dumps(memory)) is memory
    assert SessionMigratorMemory.from_dict(memory.to_dict()) is memory
    assert SessionMigratorMemory.from_string(memory.to_string()) is memory
    assert "Hello" not in memory.to_string()
    with pytest.raises(ValueError, match="instead of chat_store"):
        SessionMigratorMemory(chat_store=SimpleChatStore(), chat_store_key="x")
    with pytest.raises(ValueError, match="instead of chat_store"):
        SessionMigratorMemory.from_dict(
            ChatMemoryBuffer.from_defaults(chat_store_key="x").to_dict()
        )
    assert [m.content for m in memory.get_all()] == ["Hello"]  # nothing moved


def test_a_compactor_writes_the_memorys_summaries_off_the_get() -> None:
    import threading

    from session_migrator import Compactor, ExtractiveSummarizer

    class Recorded:
        name = "recorded"
        threads: ClassVar[set[str]] = set()

        def summarize(
            self, messages: Any, *, max_tokens: int, counter: Any, previous: Any = None
        ) -> str:
            self.threads.add(threading.current_thread().name)
            return ExtractiveSummarizer().summarize(
                messages, max_tokens=max_tokens, counter=counter
            )

    window = ModelWindow("small", "test", 2_000, 2_000, 0, "o200k_base", "explicit")
    compactor = Compactor(workers=1)
    try:
        memory = SessionMigratorMemory.from_defaults(
            chat_store_key="compacted",
            store="memory://",
            model=window,
            strategy="summarize",
            summarizer=Recorded(),
            reserve_input=0,
            compactor=compactor,
        )
        memory.put(ChatMessage(role="system", content="You answer questions about orders."))
        for n in range(150):
            memory.put(ChatMessage(role="user", content=f"When does order {n} ship?"))
            assert memory.get()
            memory.put(ChatMessage(role="assistant", content=f"Order {n} ships on day {n % 7}."))
            assert compactor.wait(10)
        assert Recorded.threads
        assert threading.current_thread().name not in Recorded.threads
    finally:
        compactor.close()
    with pytest.raises(TypeError, match="compactor must be a Compactor"):
        SessionMigratorMemory.from_defaults(store="memory://", model=window, compactor="yes")
