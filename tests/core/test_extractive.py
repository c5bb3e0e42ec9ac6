"""The extractive summarizer's bounded reading and its fast paths.

- the block scoring gives, sentence for sentence, the scores by definition (:func:`_score_all`);
- the faster sentence splits give the sentences the plain split gives;
- an input within the reading budget is summarized as reading everything would (a plain
  reference reading, the summarizer's as it was before reading was bounded);
- a longer one is read within the budget: every message, the long ones by head and tail.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from session_migrator import Message, ToolCall
from session_migrator.counting._counter import TokenCounter
from session_migrator.counting._tokens import TiktokenCounter
from session_migrator.summaries import _extractive as summarizers
from session_migrator.summaries._extractive import ExtractiveSummarizer, _reading_cap
from session_migrator.summaries._outline import Outline
from session_migrator.summaries._sentences import (
    _SENTENCE,
    _SENTENCE_SCAN,
    _score_all,
    _score_lines,
    _split,
)

PIECES = [
    "we decided", "Decision:", "decisions", "Going with", "go  with", "let's", "lets", "we'll",
    "WILL USE", "switched to",
    "switch todo", "instead", "prefer", "favourite", "dislike", "don't want", "dont want",
    "TODO", "to-do", "to-dont want", "need to", "must", "follow-up", "followXup", "follow up",
    "open question", "my name", "my names", "I am", "I'm", "i amx", "call me", "call meal", "our",
    "hour", "yours",
    "let'should", "src/app/main.py", "notes.md", "a.tsx", "b.tsc", "x.json", "config.yaml", "./x",
    "a/", "/b", "`run()`", "``", "`a", "snake_case", "ab_", "_ab", "A_b", "camelCase", "McDonald",
    "iPhone", "JIRA-123", "AB_1", "AB1x", "a@b.io", "a@b", "https://x.y/z", "http://", "Alice",
    "(Alice", "'Bob", "-Eve", "x.Bob", ". Bob", "! Bob", "? Bob", "Al", "42", "2024-05-01", "the",
    "and", "of", ".", "!", "?", ",", ":", "#", "'", "-", "_", "/", "@", "`", "K", "ſ", "İ", "ı",
    "É", "ǅ", "数据", "Ünïcode", "José", "“quoted”", "it’s", "—", "…", "🙂", "٣", "MY", "Our",
    "WeLL", "Instead", "DECIDED", "Due", "residue",
]  # fmt: skip


def _clean(text: str) -> str:
    return " ".join(text.split())


_sentence = st.builds(
    lambda parts, sep: _clean(sep.join(parts)),
    st.lists(st.sampled_from(PIECES) | st.text(max_size=8), min_size=1, max_size=12),
    st.sampled_from([" ", "", " . ", "-", "'"]),
).filter(bool)


@settings(max_examples=600, deadline=None)
@given(st.lists(_sentence, min_size=1, max_size=12))
def test_block_scores_equal_the_scores_by_definition(sentences: list[str]) -> None:
    assert _score_lines(sentences) == [_score_all(s) for s in sentences]


def test_block_scores_on_long_ascii_blocks() -> None:
    rng = random.Random(7)
    ascii_pieces = [p for p in PIECES if p.isascii()]
    sentences = [
        _clean(" ".join(rng.choices(ascii_pieces, k=rng.randint(1, 30)))) for _ in range(3000)
    ]
    sentences = [s for s in sentences if s]
    assert _score_lines(sentences) == [_score_all(s) for s in sentences]


_text = st.lists(
    st.sampled_from([*PIECES, " ", "  ", "\n", "\n\n", ". ", "!  ", "?\n", "\t", ".\t", "\r\n"])
    | st.text(max_size=6),
    max_size=20,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(_text)
def test_the_faster_splits_give_the_same_sentences(text: str) -> None:
    plain = _SENTENCE.split(text)
    assert _SENTENCE_SCAN.split(text) == plain
    assert _split(text, exact=True) == (plain, False)

    def sentences(parts: Sequence[str]) -> list[str]:
        return [s for s in map(_clean, parts) if s]

    parts, clean = _split(text)
    assert sentences(parts) == sentences(plain)
    if clean:
        assert all("\n" not in p and p.replace(" ", "x").isprintable() for p in parts)


# -- the summary ----------------------------------------------------------------------------------


def _reference(
    messages: Sequence[Message], max_tokens: int, counter: TokenCounter, previous: str | None
) -> str:
    """The extractive summary by definition: every sentence read and scored, then handed to
    the outline (which picks and writes them) one by one."""
    outline = Outline(messages, [m.text for m in messages], previous)
    for index, message in enumerate(messages):
        weight = {"user": 1.5, "assistant": 1.0, "tool": 0.6, "system": 1.0}[message.role]
        for k, call in enumerate(message.tool_calls):
            if outline.keeps_call(index, k):
                args = (
                    call.arguments if len(call.arguments) <= 160 else call.arguments[:160] + "..."
                )
                outline.call(f"called {call.name}({args})", index, 2.5)
        if index in outline.consumed:
            continue
        parts = _SENTENCE.split(message.text)
        if message.role == "tool" and len(parts) > 24:
            parts = parts[:12] + parts[-12:]
        for raw in parts:
            sentence = _clean(raw)
            if len(sentence) < 8:
                continue
            if len(sentence) > 320:
                sentence = sentence[:317] + "..."
            score = _score_all(sentence) * weight
            if score > 0:
                outline.add([sentence], [index], [score])
    return outline.write(max_tokens, counter)


COUNTER = TiktokenCounter()


@st.composite
def _conversations(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = []
    for i in range(draw(st.integers(1, 12))):
        role = draw(st.sampled_from(["user", "assistant", "tool", "system"]))
        text = draw(_text)
        if role == "tool":
            messages.append(Message("tool", text, tool_call_id=f"c{i}"))
        elif role == "assistant" and draw(st.booleans()):
            args = draw(st.sampled_from(['{"q": "x"}', '{"path": "' + "a/" * 120 + '"}']))
            call = ToolCall(f"c{i}", draw(st.sampled_from(["search", "read_file"])), args)
            messages.append(Message("assistant", text, tool_calls=(call,)))
        else:
            name = draw(st.sampled_from([None, "ana"])) if role == "user" else None
            messages.append(Message(role, text, name=name))
    return messages


@settings(max_examples=150, deadline=None)
@given(_conversations(), st.integers(0, 400), st.booleans())
def test_within_the_budget_the_summary_is_the_one_reading_everything(
    messages: list[Message], max_tokens: int, roll: bool
) -> None:
    previous = _reference(messages[:3], 60, COUNTER, None) if roll else None
    got = ExtractiveSummarizer().summarize(
        messages, max_tokens=max_tokens, counter=COUNTER, previous=previous
    )
    assert got == _reference(messages, max_tokens, COUNTER, previous)


def _filler(rng: random.Random, chars: int) -> str:
    words = "the service handles retries and the queue stays bounded while workers drain".split()
    out: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rng.choices(words, k=12)).capitalize() + "."
        out.append(sentence)
        size += len(sentence) + 1
    return " ".join(out)


def test_a_long_input_is_read_within_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    messages = [
        Message(
            ["user", "assistant", "tool"][i % 3],
            _filler(rng, rng.choice([200, 3000, 40_000])),
            tool_call_id="c" if i % 3 == 2 else None,
        )
        for i in range(300)
    ]
    read: list[int] = []
    real_split = summarizers._split

    def counting_split(text: str, *, exact: bool = False) -> tuple[list[str], bool]:
        read.append(len(text))
        return real_split(text, exact=exact)

    monkeypatch.setattr(summarizers, "_split", counting_split)
    summarizer = ExtractiveSummarizer(min_read_chars=0)
    total = sum(len(m.text) for m in messages)
    budget = summarizer.read_budget(5_000)
    assert budget == 40_000 < total // 50
    summarizer.summarize(messages, max_tokens=5_000, counter=COUNTER)
    assert total // 100 < sum(read) <= budget  # every message, none whole when long
    assert len(read) >= len(messages)


def test_long_messages_are_read_by_head_and_tail() -> None:
    rng = random.Random(5)
    text = (
        "My locker code is 4417. "
        + _filler(rng, 50_000)
        + " The middle code is 9321. "
        + _filler(rng, 50_000)
        + " The port is 8080."
    )
    summarizer = ExtractiveSummarizer(min_read_chars=0, read_per_token=4)
    summary = summarizer.summarize([Message("user", text)], max_tokens=2_000, counter=COUNTER)
    assert "4417" in summary
    assert "8080" in summary
    assert "9321" not in summary
    # the whole-message reading of the same text finds the middle too
    whole = ExtractiveSummarizer(min_read_chars=10**6).summarize(
        [Message("user", text)], max_tokens=2_000, counter=COUNTER
    )
    assert "9321" in whole


def test_every_message_is_read_and_users_get_the_larger_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(11)
    messages = []
    for i in range(200):
        role = "user" if i % 2 == 0 else "assistant"
        messages.append(Message(role, f"Note {i}: ticket T-{1000 + i}. " + _filler(rng, 5_000)))
    # the characters each message hands to the sentence split (its head and tail when long)
    read: list[int] = []
    real_read, real_split = summarizers._read, summarizers._split

    def reading(text: str, allowance: float, *, tool: bool) -> tuple[list[str], bool]:
        read.append(0)
        return real_read(text, allowance, tool=tool)

    def counting_split(text: str, *, exact: bool = False) -> tuple[list[str], bool]:
        read[-1] += len(text)
        return real_split(text, exact=exact)

    monkeypatch.setattr(summarizers, "_read", reading)
    monkeypatch.setattr(summarizers, "_split", counting_split)
    summarizer = ExtractiveSummarizer(min_read_chars=0)
    summary = summarizer.summarize(messages, max_tokens=6_000, counter=COUNTER)
    assert all(f"T-{1000 + i}" in summary for i in range(200))  # each message's head is read
    assert len(read) == len(messages)
    assert 0 < sum(read) <= summarizer.read_budget(6_000)
    shortest = min(len(m.text) for m in messages)
    users = {n for n, m in zip(read, messages, strict=True) if m.role == "user"}
    assistants = {n for n, m in zip(read, messages, strict=True) if m.role == "assistant"}
    # every message is long, so each is read by the same window for its role, none whole
    assert len(users) == len(assistants) == 1
    (user,), (assistant,) = users, assistants
    assert 0 < assistant < user < shortest
    assert user == pytest.approx(2 * assistant, abs=2)  # a user's share is twice an assistant's
    cap = _reading_cap(
        [len(m.text) for m in messages],
        [2.0 if m.role == "user" else 1.0 for m in messages],
        summarizer.read_budget(6_000),
    )
    assert 0 < cap < 5_000
    assert (user, assistant) == (int(2 * cap), int(cap))
    assert summary == summarizer.summarize(messages, max_tokens=6_000, counter=COUNTER)


def test_the_reading_cap_spreads_the_budget() -> None:
    lengths = [10, 500, 40, 7_000, 0, 90_000]
    shares = [1.0, 2.0, 1.0, 0.5, 1.0, 1.0]
    assert _reading_cap(lengths, shares, sum(lengths)) == float("inf")
    cap = _reading_cap(lengths, shares, 3_000)
    spent = sum(min(n, s * cap) for n, s in zip(lengths, shares, strict=True))
    assert spent == pytest.approx(3_000)
    assert _reading_cap(lengths, [0.0] * len(lengths), 3_000) == 0.0
    # the messages with a share fit: the cap lets them be read whole
    assert _reading_cap([10, 99_999], [1.0, 0.0], 100) == float("inf")


def test_a_role_with_no_share_is_not_read() -> None:
    messages = [
        Message("user", "My locker code is 4417."),
        Message("tool", "The port is 8080.", tool_call_id="c1"),
    ]
    summary = ExtractiveSummarizer(shares={"tool": 0}).summarize(
        messages, max_tokens=100, counter=COUNTER
    )
    assert "4417" in summary
    assert "8080" not in summary


@pytest.mark.parametrize(
    "kwargs", [{"read_per_token": -1}, {"min_read_chars": -1}, {"shares": {"user": -1.0}}]
)
def test_negative_reading_settings_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="negative"):
        ExtractiveSummarizer(**kwargs)  # type: ignore[arg-type]
