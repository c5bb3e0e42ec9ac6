"""Recall across sessions with an embedding model: the other sessions' exchanges ranked by bm25
and by the model, fused, their vectors kept in the store under their own sessions (issue 43:
"stored vectors are used when an embedding model is given").

The model is the local all-MiniLM-L6-v2 (run in numpy, offline), behind a counting wrapper so
the tests see what is embedded and what is read back from the store."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from session_migrator import (
    Embeddings,
    Message,
    MigrationReport,
    ModelWindow,
    SessionFitter,
    local_embeddings,
)
from session_migrator.store import BaseSessionStore, open_store

LONG_AGO = datetime(2026, 11, 3, 19, 0, tzinfo=UTC)
TODAY = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
PREFERENCE = "I'm vegetarian, and my daughter is allergic to peanuts."
QUESTION = "What should I cook for dinner tonight?"
#: Small enough that only a few of the other sessions' exchanges fit.
WINDOW = ModelWindow("small", "small", 600, 600, 0, "o200k_base", "explicit")

FILLER = [
    ("My car makes a rattling noise when I brake.", "It may be the brake pads; have them checked."),
    ("Can you recommend a thriller novel?", "Try 'Gone Girl' by Gillian Flynn."),
    ("How do I reset my router?", "Hold the reset button for ten seconds."),
    ("What's a good stretch for lower back pain?", "Try the cat-cow stretch each morning."),
    ("Remind me to renew my passport in March.", "Noted: passport renewal in March."),
    ("Which laptop is better for coding, 13 or 15 inch?", "A 14 inch is a good middle ground."),
    ("How many litres of paint for a 12 square metre room?", "About two litres for two coats."),
    ("What time zone is Lisbon in?", "Lisbon is on Western European Time."),
]


class Counting:
    """The local model, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        self.model = local_embeddings()
        self.documents = 0

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        self.documents += len(texts)
        return self.model.embed_documents(list(texts))


def _exchange(when: datetime, question: str, answer: str) -> list[Message]:
    return [
        Message("user", question, timestamp=when),
        Message("assistant", answer, timestamp=when + timedelta(seconds=30)),
    ]


def _fill(store: BaseSessionStore) -> None:
    """Ann's earlier sessions (one states her diet among other talk; the rest are filler) and
    Bob's, who states the same kind of thing."""
    for k, (question, answer) in enumerate(FILLER):
        store.append(
            f"ann-{k}",
            _exchange(LONG_AGO + timedelta(days=k), question, answer),
            metadata={"user_id": "ann"},
        )
    store.append(
        "ann-diet",
        _exchange(LONG_AGO + timedelta(days=2, hours=1), PREFERENCE, "Thanks, I'll remember."),
        metadata={"user_id": "ann"},
    )
    store.append(
        "bob-diet",
        _exchange(LONG_AGO, "I only eat fish and I hate mushrooms.", "Noted."),
        metadata={"user_id": "bob"},
    )


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseSessionStore]:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 's.db'}"
    opened = open_store(url)
    _fill(opened)
    yield opened
    opened.close()


def _ask(
    store: BaseSessionStore, embeddings: object, session: str = "today"
) -> tuple[str, MigrationReport]:
    fitter = SessionFitter(
        session,
        store=store,
        recall_scope="user",
        metadata={"user_id": "ann"},
        reserve_output=0,
        embeddings=embeddings,
    )
    fitter.append([Message("user", QUESTION, timestamp=TODAY)])
    result = fitter.fit(WINDOW)
    text = "\n".join(m.text for m in result.messages)
    return text, result.report


def test_a_paraphrase_reaches_a_new_session_only_with_the_model(store: BaseSessionStore) -> None:
    """No word of the question is in the stated diet: bm25 alone cannot find it; with the
    model it comes back, dated and named, within the window; Bob's never does."""
    without, _ = _ask(store, None, "today-plain")
    assert PREFERENCE not in without

    text, report = _ask(store, Embeddings(Counting(), name="minilm-counted", timeout=120))
    assert report.fallbacks == []
    assert PREFERENCE in text
    assert "mushrooms" not in text  # (never another user's)
    assert report.tokens_after <= WINDOW.max_input_tokens
    assert "ann-diet" in report.related_ids
    assert any("minilm-counted embeddings" in n for n in report.notes), report.notes


def test_vectors_are_kept_under_their_sessions_and_not_made_twice(
    store: BaseSessionStore,
) -> None:
    """The first fit embeds the other sessions' messages and keeps each vector in the store
    under its own session; a new process (a new model wrapper, empty memory) reads them back
    and embeds only what is new."""
    first = Counting()
    text, _ = _ask(store, Embeddings(first, name="minilm-counted", timeout=120))
    assert PREFERENCE in text
    assert first.documents >= 2 * len(FILLER) + 2  # (every message of Ann's other sessions)
    diet_ids = [m.id for m in store.load("ann-diet")]
    kept = store.get_vectors("ann-diet", "minilm-counted", diet_ids)
    assert set(kept) == set(diet_ids)
    assert (
        store.get_vectors("bob-diet", "minilm-counted", [m.id for m in store.load("bob-diet")])
        == {}
    )

    second = Counting()
    text, _ = _ask(store, Embeddings(second, name="minilm-counted", timeout=120), "tomorrow")
    assert PREFERENCE in text
    # only the question (by embed_query) and the one message new since: the first session's
    assert second.documents == 2


def test_a_failing_model_leaves_recall_to_bm25_and_says_so(store: BaseSessionStore) -> None:
    def broken(texts: Sequence[str]) -> list[list[float]]:
        raise ConnectionError("embedding server down")

    store.append(
        "ann-dinner",
        _exchange(LONG_AGO, "Any idea what to cook for dinner on Friday?", "Try a risotto."),
        metadata={"user_id": "ann"},
    )
    text, report = _ask(store, Embeddings(broken, name="broken"))
    assert "risotto" in text  # (bm25 still finds what shares the question's words)
    assert any("embedding server down" in f for f in report.fallbacks), report.fallbacks
