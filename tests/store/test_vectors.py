"""Message vectors (hybrid recall's, see session_migrator.recall._hybrid) on every backend.

``put_vectors`` / ``get_vectors`` keep a message's vector by its id and the embedding model's
key, beside the message: never for a message the session does not hold, gone with the message
or the session, and never changing a message. A ``SessionFitter`` with an embedding model
embeds each message once: a re-fit embeds only the newly cut messages and the question, and a
store reopened (a restart) embeds nothing twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from session_migrator import Embeddings, Message, ModelWindow, SessionFitter, counter_for
from session_migrator.recall._embeddings import DIGEST_BYTES, text_digest
from session_migrator.store import BaseSessionStore

StoreFactory = Callable[..., BaseSessionStore]


def _vec(text: str, *values: float) -> bytes:
    """A vector as stores keep it: the digest of the text it was made from, then the numbers."""
    return text_digest(text) + np.array(values, dtype=np.float32).tobytes()


def test_vectors_are_kept_by_message_and_model(store: BaseSessionStore) -> None:
    store.append("s", [Message("user", "hello", id="m1"), Message("assistant", "hi", id="m2")])
    a1, a2 = _vec("hello", 1, 2), _vec("hi", 3, 4)
    store.put_vectors("s", "model-a", {"m1": a1, "m2": a2, "ghost": _vec("boo", 5, 6)})
    store.put_vectors("s", "model-b", {"m1": _vec("hello", 9, 9, 9)})
    assert store.get_vectors("s", "model-a", ["m1", "m2", "ghost", "m3"]) == {"m1": a1, "m2": a2}
    assert store.get_vectors("s", "model-b", ["m1", "m2"]) == {"m1": _vec("hello", 9, 9, 9)}
    store.put_vectors("s", "model-a", {"m1": _vec("hello", 7, 7)})  # replaced
    assert store.get_vectors("s", "model-a", ["m1"]) == {"m1": _vec("hello", 7, 7)}
    assert store.get_vectors("nobody", "model-a", ["m1"]) == {}
    store.put_vectors("nobody", "model-a", {"m1": a1})  # no session: nothing, no error
    assert store.get_session("nobody") is None
    assert [m.text for m in store.load("s")] == ["hello", "hi"]  # the messages as they were


def test_a_vector_is_kept_only_for_the_text_it_was_made_from(store: BaseSessionStore) -> None:
    store.append("s", [Message("user", "hello", id="m1")])
    store.put_vectors("s", "k", {"m1": _vec("good bye", 1, 2)})  # another text's
    assert store.get_vectors("s", "k", ["m1"]) == {}
    store.put_vectors("s", "k", {"m1": np.array([1, 2], dtype=np.float32).tobytes()})  # none
    assert store.get_vectors("s", "k", ["m1"]) == {}


def test_vectors_go_with_their_messages(store: BaseSessionStore) -> None:
    store.append("s", [Message("user", f"m {i}", id=f"m{i}") for i in range(3)])
    store.put_vectors("s", "k", {f"m{i}": _vec(f"m {i}", i) for i in range(3)})
    assert store.delete_messages("s", ["m1"]) == 1
    assert set(store.get_vectors("s", "k", ["m0", "m1", "m2"])) == {"m0", "m2"}
    store.append("s", [Message("user", "said again", id="m1")])  # the id again: a new message
    assert store.get_vectors("s", "k", ["m1"]) == {}
    assert store.delete_session("s")
    store.append("s", [Message("user", "m 0", id="m0")])
    assert store.get_vectors("s", "k", ["m0"]) == {}


async def test_async_twins(store: BaseSessionStore) -> None:
    store.append("s", [Message("user", "hello", id="m1")])
    await store.aput_vectors("s", "k", {"m1": _vec("hello", 1, 2)})
    assert await store.aget_vectors("s", "k", ["m1"]) == {"m1": _vec("hello", 1, 2)}
    assert await store.adelete_vectors("k") == 1
    assert await store.aget_vectors("s", "k", ["m1"]) == {}


class Counting:
    """A deterministic embedder (a few concepts), counting the texts it embeds."""

    model_name = "counting-v1"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += texts
        return [[0.1 + t.count("car"), 0.1 + t.count("dog"), float(len(t) % 7)] for t in texts]


def _history() -> list[Message]:
    out = [Message("system", "You are helpful.", id="sys")]
    for i in range(30):
        out += [
            Message("user", f"Turn {i}: tell me about the dog. " + "words " * 40, id=f"u{i}"),
            Message("assistant", f"Reply {i} about a car. " + "more " * 40, id=f"a{i}"),
        ]
    return out


def _window() -> ModelWindow:
    budget = counter_for("o200k_base").count_messages(_history()) // 3
    return ModelWindow("small", "example", budget, budget, 0, "o200k_base", "explicit")


def test_a_fitter_embeds_each_message_once_also_across_a_restart(
    make_store: StoreFactory, store_url: str
) -> None:
    counting = Counting()
    model: Any = Embeddings(counting, name="counting")
    store = make_store()
    fitter = SessionFitter("s", store=store, strategy="recall", embeddings=model)
    fitter.append(_history())
    fitter.append([Message("user", "Which car did we talk about?", id="q1")])
    first = fitter.fit(_window())
    assert first.report.fallbacks == []
    embedded = list(counting.texts)
    assert len(embedded) == len(set(embedded)) > 10  # each message once, and the question
    assert "Which car did we talk about?" in embedded  # (begun while bm25 ranks: any order)
    # a re-fit after new messages: only the newly cut messages and the new question
    fitter.append(
        [Message("assistant", "A red one.", id="r1"), Message("user", "And the dog?", id="q2")]
    )
    fitter.fit(_window())
    new = counting.texts[len(embedded) :]
    assert new.count("And the dog?") == 1
    # (the first question, embedded as a query, is embedded once as a message of its turn)
    assert not (set(new) - {"And the dog?"}) & (set(embedded) - {"Which car did we talk about?"})
    # the vectors are in the store, by message id and model key
    kept = store.get_vectors("s", "counting", [f"u{i}" for i in range(30)])
    assert kept
    assert all(len(v) == DIGEST_BYTES + 3 * 4 for v in kept.values())
    if store_url == "memory://":
        return  # (a new memory store is empty)
    # a restart: a new model object, a new fitter, the store reopened; nothing embedded twice
    again = Counting()
    reopened = SessionFitter(
        "s", store=make_store(), strategy="recall", embeddings=Embeddings(again, name="counting")
    )
    result = reopened.fit(_window())
    assert again.texts == ["And the dog?"]  # the question alone
    assert result.report.fallbacks == []
    assert "0 message(s) embedded" in result.report.notes[-1]
