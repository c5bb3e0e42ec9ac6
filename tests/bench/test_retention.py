"""The SGD evidence-retention benchmark on a small sample: it reads the real corpus, asks every
kind of question, and measures what the yardsticks keep (behaviour, not timing)."""

from __future__ import annotations

import pytest

from benchmarks import retention
from tests._sgd import sgd_dialogues


@pytest.fixture(scope="module")
def dialogues() -> list[retention.Dialogue]:
    return sgd_dialogues()


def test_the_corpus_is_read_whole(dialogues: list[retention.Dialogue]) -> None:
    assert len(dialogues) > 1_500
    assert sum(len(d.turns) for d in dialogues) > 25_000


def test_questions_point_at_turns_that_state_the_answer(
    dialogues: list[retention.Dialogue],
) -> None:
    h = retention.build_history(dialogues, seed=3, size=60)
    kinds = {q.kind for q in h.questions}
    assert kinds == {"paraphrase", "temporal", "multi", "changed"}
    by_id = {m.id: m for m in h.messages}
    for q in h.questions:
        texts = [by_id[e].text.lower() for e in q.evidence]
        # the answer is stated in the evidence, and not given away by the question
        for value in q.values:
            assert value.lower() not in q.text.lower(), q
        assert any(q.values[0].lower() in t for t in texts) or q.kind == "changed", q
    # every message carries when it was said, and sessions are days apart
    assert retention.build_history(dialogues, seed=3, size=60).questions == h.questions


def test_yardsticks_fit_the_budget_and_bm25_beats_trimming(
    dialogues: list[retention.Dialogue],
) -> None:
    result = retention.run(
        histories=1, size=60, questions_per_history=8, strategies=["trim"], data=None
    )
    assert result["questions"] == 8
    assert result["over_budget"] == {}
    rows = {r["method"]: r for r in result["rows"]}
    assert set(rows) == {"trim", "BM25 (yardstick)", "BM25 + neighbour (yardstick)"}
    assert rows["BM25 (yardstick)"]["4k"] > rows["trim"]["4k"]
    assert "| BM25 (yardstick) |" in retention.markdown(result)
