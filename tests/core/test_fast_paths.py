"""The fast paths give what the plain computations give.

- the extractive summarizer's literal pre-checks skip only patterns that cannot match;
- the kept full-text index ranks as a fresh one over the same documents;
- a re-fit from a :class:`Ledger` kept up to date message by message equals a fit from scratch;
- an estimating counter's counts survive a calibration without re-tokenizing.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from session_migrator import BudgetError, Message, SessionFitter, ToolCall, migrate
from session_migrator._fit import Ledger, build_units
from session_migrator._recall import RelevanceIndex, rank_by_relevance
from session_migrator._summarizers import _score, _score_all
from session_migrator._tokens import EstimatingCounter, TiktokenCounter, calibrate, counter_for
from session_migrator._windows import ModelWindow

PIECES = [
    "we decided", "Going with", "let's", "we'll", "WILL USE", "switched to", "instead", "prefer",
    "favourite", "dislike", "don't want", "TODO", "to-do", "need to", "must", "follow-up",
    "open question", "my name", "I am", "I'm", "call me", "our", "src/app/main.py", "notes.md",
    "config.yaml", "`run()`", "snake_case", "camelCase", "JIRA-123", "a@b.io", "https://x.y/z",
    "Alice", "Bob", "42", "2024-05-01", "the", "and", "of", ".", "!", "?", " ", "  ", "\n",
    "K", "ſ", "İ", "É", "ǅ", "数据", "Ünïcode", "MY", "Our", "WeLL", "Instead",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=6), max_size=14))
def test_the_pre_checked_score_equals_the_plain_one(parts: list[str]) -> None:
    sentence = " ".join(parts)
    assert _score(sentence) == _score_all(sentence)
    assert _score(sentence[1:]) == _score_all(sentence[1:])


WORDS = "alpha beta gamma locker code port server invoice meeting flight charts".split()


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_the_kept_index_ranks_as_a_fresh_one(seed: int) -> None:
    rng = random.Random(seed)
    docs = {3 * i: " ".join(rng.choices(WORDS, k=rng.randint(1, 20))) for i in range(40)}
    keys = sorted(docs)
    index: RelevanceIndex[int] = RelevanceIndex(docs.__getitem__)
    for _ in range(8):
        low = rng.randint(0, 20)
        current = keys[low : rng.randint(low, 40)]
        index.sync({k: k for k in current})
        assert index.keys() == current
        query = " ".join(rng.choices(WORDS, k=2))
        fresh = rank_by_relevance([docs[k] for k in current], query)
        assert index.rank(query) == [(current[i], score) for i, score in fresh]


def _conversation(rng: random.Random, n: int) -> list[Message]:
    """Turns with tool calls; in some conversations a call never answered (broken) or a system
    message in the middle, which take the general paths instead of the fast ones.
    """
    unanswered = 0.1 if rng.random() < 0.3 else 0.0
    mid_system = 0.1 if rng.random() < 0.3 else 0.0
    out = [Message("system", "You are terse.", id="sys")]
    while len(out) < n:
        k = len(out)
        out.append(Message("user", f"question {k} " + "word " * rng.randint(1, 60), id=f"u{k}"))
        if rng.random() < 0.3:
            call = ToolCall(f"c{k}", "search", '{"q": "x"}')
            out.append(Message("assistant", "", tool_calls=(call,), id=f"a{k}"))
            if rng.random() >= unanswered:
                out.append(
                    Message(
                        "tool", "result " * rng.randint(1, 80), tool_call_id=f"c{k}", id=f"t{k}"
                    )
                )
        if rng.random() < mid_system:
            out.append(Message("system", "A note from the operator.", id=f"s{k}"))
        out.append(Message("assistant", "answer " * rng.randint(1, 90), id=f"r{k}"))
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1), st.sampled_from(["trim", "auto", "recall"]))
def test_a_ledger_refit_equals_a_fit_from_scratch(seed: int, strategy: str) -> None:
    rng = random.Random(seed)
    messages = _conversation(rng, 60)
    counter = TiktokenCounter()
    ledger = Ledger(counter.count_message)
    fitter = SessionFitter(f"s{seed}", store="memory://", strategy=strategy, reserve_output=0)
    budget = rng.randint(150, 900)
    window = ModelWindow("w", "p", budget, budget, 0, "o200k_base", "explicit")
    start = rng.randint(10, 50)
    fitter.append(messages[:start])
    ledger.extend(messages[:start])
    for k in range(start, len(messages) + 1):
        layout = ledger.layout()
        plain = build_units(messages[:k], [counter.count_message(m) for m in messages[:k]])
        assert (layout.system, layout.broken, layout.units_cost) == (
            plain.system,
            plain.broken,
            plain.units_cost,
        )
        assert [u.indices for u in layout.units] == [u.indices for u in plain.units]
        stored = fitter._stored_summary()  # the rolling summary the fitter starts from
        previous = stored[0] if stored else None
        try:
            expected = migrate(
                messages[:k], window, strategy=strategy, reserve_output=0, previous_summary=previous
            )
        except BudgetError:  # a budget too small for this conversation
            with pytest.raises(BudgetError):
                fitter.fit(window)
        else:
            got = fitter.fit(window)
            assert [m.id for m in got.messages] == [m.id for m in expected.messages]
            assert [m.text for m in got.messages] == [m.text for m in expected.messages]
            report, want = got.report, expected.report
            assert report.dropped_ids == want.dropped_ids
            assert report.summarized_ids == want.summarized_ids
            assert report.recalled_ids == want.recalled_ids
            assert report.tokens_after == want.tokens_after
        if k < len(messages):
            fitter.append([messages[k]])
            ledger.extend([messages[k]])


def test_a_calibration_keeps_the_per_message_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    original = TiktokenCounter.count_text

    def recording(self: TiktokenCounter, text: str) -> int:
        seen.append(text)
        return original(self, text)

    monkeypatch.setattr(TiktokenCounter, "count_text", recording)
    before = counter_for("claude", model="claude-bench")
    assert isinstance(before, EstimatingCounter)
    messages = [Message("user", f"message number {i} " * 5) for i in range(20)]
    first = [before.count_message(m) for m in messages]
    assert seen  # counted once, by the o200k counter
    calibrate("claude-bench", estimated=100, observed=130, persist=False)
    after = counter_for("claude", model="claude-bench")
    assert after.name != before.name, "a calibrated counter must not share cached counts"
    assert after.cache_owner is before.cache_owner
    seen.clear()
    second = [after.count_message(m) for m in messages]
    assert all(b > a for a, b in zip(first, second, strict=True))
    assert seen == []  # nothing tokenized again
    assert [after.cached(m) for m in messages] == second
