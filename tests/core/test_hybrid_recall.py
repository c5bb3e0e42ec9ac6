"""Hybrid recall: bm25 fused with a user's embedding model (``embeddings=``).

A small deterministic embedder maps words to concepts (car, automobile and vehicle are one), so
a paraphrase shares the question's concept and none of its words: bm25 misses it, the fused
ranking finds it. A counting embedder shows that each message is embedded once; a raising and a
sleeping one that recall falls back to bm25 within the deadline and the report says so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from session_migrator import (
    Embeddings,
    Message,
    ModelWindow,
    RequestFitter,
    counter_for,
    fit_request,
    migrate,
)
from session_migrator.recall._hybrid import fuse

CONCEPTS = {
    "car": 0, "automobile": 0, "vehicle": 0, "sedan": 0,
    "dog": 1, "puppy": 1, "pizza": 2, "food": 2, "colour": 3, "color": 3, "red": 3,
}  # fmt: skip


class ConceptEmbedder:
    """Texts to concept counts (plus a small constant), counting every text it embeds."""

    model_name = "concepts-v1"

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.calls = 0

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.texts += texts
        out = []
        for text in texts:
            v = [0.05] * 5
            for word in text.lower().replace("?", " ").replace(".", " ").split():
                if word in CONCEPTS:
                    v[CONCEPTS[word]] += 1.0
            out.append(v)
        return out


def conversation() -> list[Message]:
    messages = [Message("system", "You are helpful.", id="sys")]
    for i in range(30):
        messages += [
            Message("user", f"Tell me about topic {i}. " + "filler words here " * 30, id=f"u{i}"),
            Message("assistant", f"Sure, on {i}. " + "more filler " * 30, id=f"a{i}"),
        ]
    # the paraphrase: no word of the question below
    messages[11] = Message("user", "I bought a new automobile yesterday, a red one.", id="u5")
    return messages


QUESTION = Message("user", "What colour is my car?", id="q")


def window_for(messages: list[Message]) -> ModelWindow:
    budget = counter_for("o200k_base").count_messages(messages) // 4
    return ModelWindow("small", "example", budget, budget, 0, "o200k_base", "explicit")


def sent(result: object) -> str:
    return "\n".join(m.text for m in result.messages)  # type: ignore[attr-defined]


def test_hybrid_recall_finds_the_paraphrase_bm25_misses() -> None:
    messages = [*conversation(), QUESTION]
    window = window_for(messages)
    plain = migrate(messages, window, strategy="recall", reserve_output=0)
    assert "automobile" not in sent(plain)  # bm25: no word in common
    embedder = ConceptEmbedder()
    hybrid = migrate(
        messages, window, strategy="recall", reserve_output=0,
        embeddings=Embeddings(embedder, name="concepts"),
    )  # fmt: skip
    assert "automobile" in sent(hybrid)
    assert "u5" in hybrid.report.recalled_ids
    assert hybrid.report.tokens_after <= hybrid.report.budget
    assert hybrid.report.fallbacks == []
    assert any("concepts embeddings" in n for n in hybrid.report.notes)
    auto = migrate(messages, window, reserve_output=0, embeddings=Embeddings(embedder, name="c2"))
    assert "automobile" in sent(auto)


def test_without_embeddings_nothing_changes() -> None:
    messages = [*conversation(), QUESTION]
    window = window_for(messages)
    a = migrate(messages, window, reserve_output=0)
    b = migrate(messages, window, reserve_output=0, embeddings=None)
    assert a.messages == b.messages
    assert a.report.notes == b.report.notes
    # a conversation that fits never calls the model
    embedder = ConceptEmbedder()
    whole = migrate(messages, "gpt-4o", embeddings=Embeddings(embedder, name="concepts"))
    assert whole.report.decision == "fits"
    assert embedder.calls == 0


def test_each_message_is_embedded_once_and_the_question_each_time() -> None:
    messages = [*conversation(), QUESTION]
    window = window_for(messages)
    embedder = ConceptEmbedder()
    model = Embeddings(embedder, name="concepts")
    migrate(messages, window, strategy="recall", reserve_output=0, embeddings=model)
    first = len(embedder.texts)
    assert first == len(set(embedder.texts[:-1])) + 1  # every cut message once, the question
    again = migrate(messages, window, strategy="recall", reserve_output=0, embeddings=model)
    assert len(embedder.texts) == first  # nothing new: not even the same question again
    assert "0 message(s) embedded" in again.report.notes[-1]
    grown = [
        *messages,
        Message("assistant", "It is red.", id="a-new"),
        Message("user", "Which puppy did I adopt?", id="q2"),
    ]
    migrate(grown, window, strategy="recall", reserve_output=0, embeddings=model)
    new = embedder.texts[first:]
    assert new[-1] == "Which puppy did I adopt?"
    # the newly cut messages and the question: none embedded before, never the whole log
    assert not set(new[:-1]) & set(embedder.texts[:first])
    assert len(new) < first / 3


def test_the_same_model_object_keeps_its_vectors_between_calls() -> None:
    messages = [*conversation(), QUESTION]
    window = window_for(messages)
    embedder = ConceptEmbedder()  # a callable object: its wrapper is found again
    migrate(messages, window, strategy="recall", reserve_output=0, embeddings=embedder)
    first = len(embedder.texts)
    migrate(messages, window, strategy="recall", reserve_output=0, embeddings=embedder)
    assert len(embedder.texts) == first
    assert Embeddings.of(embedder).key == "ConceptEmbedder:concepts-v1"


def test_a_failing_model_falls_back_to_bm25_and_says_so() -> None:
    def broken(texts: Sequence[str]) -> list[list[float]]:
        raise ConnectionError("embedding service down")

    messages = [*conversation(), QUESTION]
    window = window_for(messages)
    plain = migrate(messages, window, reserve_output=0)
    result = migrate(
        messages, window, reserve_output=0, embeddings=Embeddings(broken, name="broken")
    )
    assert result.messages == plain.messages  # exactly bm25's
    assert len(result.report.fallbacks) == 1
    fallback = result.report.fallbacks[0]
    assert "broken" in fallback
    assert "ConnectionError" in fallback
    assert "bm25 alone" in fallback
    assert not any("embeddings (reciprocal" in n for n in result.report.notes)


def test_a_model_that_returns_garbage_falls_back() -> None:
    def short(texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0]]  # one vector, whatever the number of texts

    messages = [*conversation(), QUESTION]
    result = migrate(
        messages, window_for(messages), reserve_output=0, embeddings=Embeddings(short, name="s")
    )
    assert "returned 1 vectors" in result.report.fallbacks[0]


def test_a_slow_model_falls_back_within_its_deadline_and_its_answer_serves_later() -> None:
    release = threading.Event()
    inner = ConceptEmbedder()

    def slow(texts: Sequence[str]) -> list[list[float]]:
        release.wait(10)
        return inner(texts)

    messages = [*conversation(), QUESTION]
    window = window_for(messages)
    plain = migrate(messages, window, strategy="recall", reserve_output=0)
    model = Embeddings(slow, name="slow", timeout=0.3)
    started = time.perf_counter()
    result = migrate(messages, window, strategy="recall", reserve_output=0, embeddings=model)
    assert time.perf_counter() - started < 0.3 + 1.5
    assert result.messages == plain.messages
    assert "no answer within its 0.3 s deadline" in result.report.fallbacks[0]
    release.set()  # the model answers at last: its vectors are kept for the next fit
    deadline = time.monotonic() + 5
    while not model.memory and time.monotonic() < deadline:
        time.sleep(0.01)
    later = migrate(messages, window, strategy="recall", reserve_output=0, embeddings=model)
    assert later.report.fallbacks == []
    assert "automobile" in sent(later)


def test_model_keys_are_stable_and_a_lambda_needs_a_name() -> None:
    with pytest.raises(ValueError, match="name="):
        Embeddings(lambda texts: [[1.0] for _ in texts])
    assert Embeddings(lambda texts: [[1.0] for _ in texts], name="mine").key == "mine"
    with pytest.raises(TypeError, match="LangChain Embeddings"):
        Embeddings(42)
    with pytest.raises(ValueError, match="timeout"):
        Embeddings(ConceptEmbedder(), timeout=0)


def test_fuse_adds_reciprocal_ranks() -> None:
    found = np.array([2, 0], dtype=np.int64)  # bm25: turn 2, then turn 0
    sims = np.array([0.1, 0.9, 0.5])  # dense: turn 1, 2, 0
    turns, scores = fuse(found, sims, k=60)
    expected = {0: 1 / 62 + 1 / 63, 1: 1 / 61, 2: 1 / 61 + 1 / 62}
    assert turns.tolist() == [0, 1, 2]  # (every turn, in order: the neighbour bonus ranks them)
    assert scores.tolist() == pytest.approx([expected[t] for t in turns.tolist()])


def test_requests_recall_with_embeddings_too() -> None:
    messages = [*conversation(), QUESTION]
    window = window_for(messages)
    embedder = ConceptEmbedder()
    fit = fit_request(messages, window, reserve_output=0, embeddings=Embeddings(embedder, name="c"))
    assert "automobile" in "\n".join(m.text for m in fit.messages)
    fitter = RequestFitter(reserve_output=0, embeddings=embedder)
    assert "automobile" in "\n".join(m.text for m in fitter.fit(messages, window).messages)


def test_a_question_most_like_an_old_turn_is_about_the_past() -> None:
    from session_migrator.fitting._units import build_units
    from session_migrator.recall._hybrid import hybrid_for

    counter = counter_for("o200k_base")
    messages = [*conversation(), QUESTION]  # the automobile is in turn 5 of 30
    layout = build_units(messages, [counter.count_message(m) for m in messages])
    room = counter.count_messages(messages) // 8
    hybrid = hybrid_for(Embeddings(ConceptEmbedder(), name="concepts"))
    assert hybrid is not None
    assert hybrid.asks_about_the_past(messages, layout, QUESTION.text, counter, room)
    recent = [*messages[:-1], Message("user", "My dog is a puppy.", id="d"), QUESTION]
    recent[-1] = Message("user", "How old is the puppy?", id="q3")
    layout = build_units(recent, [counter.count_message(m) for m in recent])
    assert not hybrid.asks_about_the_past(recent, layout, "How old is the puppy?", counter, room)
    # the question's past share goes to recall: more of the cut turns come back
    window = window_for(messages)
    with_model = migrate(
        messages, window, reserve_output=0, embeddings=Embeddings(ConceptEmbedder(), name="c3")
    )
    without = migrate(messages, window, reserve_output=0)
    assert len(with_model.report.recalled_ids) > len(without.report.recalled_ids)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]) | st.floats(0, 1), max_size=80))
def test_best_first_ranks_as_a_stable_sort_with_the_later_first(values: list[float]) -> None:
    from session_migrator.recall._hybrid import best_first

    v = np.array(values, dtype=np.float64)
    expected = np.arange(len(v))[::-1][np.argsort(-v[::-1], kind="stable")]
    assert best_first(v).tolist() == expected.tolist()
