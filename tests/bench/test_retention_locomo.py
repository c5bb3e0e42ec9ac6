"""The LoCoMo retention benchmark on a small slice (one conversation, a few questions, one
budget): it reads the dataset as LoCoMo ships it, scores within [0, 1], keeps every method
within its budget, and retrieval that fills the budget by rank beats trimming at 4k (behaviour,
not timing). A laptop without the data skips them; CI fails them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks import _minilm, locomo, retention

DATA = locomo.DEFAULT_DATA

pytestmark = pytest.mark.skipif(
    not any(DATA.glob("*.json")) and not os.environ.get("CI"),
    reason=f"the LoCoMo dev split is not beside the repository ({DATA}): {locomo.WHERE}",
)


def test_the_conversations_are_read_as_locomo_writes_them() -> None:
    convs = locomo.load(locomo.data_files())
    assert len(convs) >= 1
    c = convs[0]
    by_id = {m.id: m for m in c.plain}
    assert c.plain[0].role == "system"
    assert len(c.plain) == len(c.dated) == len(c.session) + 1
    # every message carries its speaker's name; dated ones carry their session's time, in order
    assert all(": " in m.text for m in c.plain[1:])
    times = [m.timestamp for m in c.dated[1:]]
    assert all(t is not None for t in times)
    assert times == sorted(times)  # type: ignore[type-var]
    assert all(m.timestamp is None for m in c.plain)
    assert c.asked_at > times[-1]  # type: ignore[operator]
    # evidence names turns of the conversation; adversarial questions have no answer to find
    assert {q.category for q in c.questions} <= set(locomo.CATEGORIES)
    for q in c.questions:
        assert q.evidence
        assert all(e in by_id for e in q.evidence)
        assert (q.category == 5) == (q.answer == ())


def test_answers_are_normalised_as_locomo_does() -> None:
    assert locomo.normalise("The Sunrise, painted!") == "sunrise painted"
    assert locomo._answer_parts({"category": 1, "answer": "Kyle, Sara"}) == ("kyle", "sara")
    assert locomo._answer_parts({"category": 3, "answer": "Likely yes; she is"}) == ("likely yes",)
    assert locomo._answer_parts({"category": 5, "adversarial_answer": "x"}) == ()
    # 1 and 3: 1/61 + 1/63 > 2 / 62 for 2; a tie goes to the newer turn
    assert locomo.rrf([1, 2, 3], [3, 2, 1]) == [3, 1, 2]


def test_a_slice_scores_in_range_and_bm25_fill_beats_trim_at_4k() -> None:
    result = locomo.run(
        budgets=["4k"], strategies=["trim"], modes=["plain"], every=10, conversations=1,
        dense=False,
    )  # fmt: skip
    assert result["questions"] >= 10
    assert result["over_budget"] == {}
    recall = result["evidence_recall"]
    presence = result["answer_presence"]
    for name in ("trim", locomo.BM25, locomo.BM25_NEIGHBOURS, locomo.WHOLE):
        assert 0.0 <= recall[name]["4k"] <= 1.0
        assert 0.0 <= presence[name]["4k"] <= 1.0
        assert presence[name]["4k"] <= presence[locomo.WHOLE]["4k"]
    assert recall[locomo.WHOLE]["4k"] == 1.0
    assert recall[locomo.BM25]["4k"] > recall["trim"]["4k"]
    assert set(result["skipped"]) == {locomo.DENSE, locomo.HYBRID}
    text = locomo.markdown(result)
    assert f"| {locomo.BM25} |" in text
    assert "multi-hop" in text


def test_the_command_line_writes_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "retention_locomo.md"
    argv = ["--locomo", str(DATA), "--budgets", "4k", "--strategies", "trim", "--modes", "plain",
            "--every", "40", "--conversations", "1", "--no-dense", "--out", str(out)]  # fmt: skip
    assert retention.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert "--locomo" in text
    assert "| trim |" in text
    assert text.strip() in capsys.readouterr().out
    assert retention.main(["--locomo", str(tmp_path / "nowhere"), "--no-save"]) == 2


def test_the_dense_yardstick_is_all_minilm_l6_v2() -> None:
    """The numpy encoder gives the checkpoint's own similarities (sentence-transformers' docs
    print 0.7553 and 0.7369 for these pairs with all-MiniLM-L6-v2); `make test` installs it."""
    assert _minilm.missing() is None, _minilm.missing()
    vectors = _minilm.load().embed(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "A man is riding a horse.",
            "A man is riding a white horse on an enclosed ground.",
        ]
    )
    sims = vectors @ vectors.T
    assert sims[0, 1] == pytest.approx(0.7553, abs=5e-4)
    assert sims[2, 3] == pytest.approx(0.7369, abs=5e-4)
    assert sims[0, 2] < 0.3


def test_the_library_rows_with_the_minilm_as_a_users_embedding_model() -> None:
    """``auto`` and ``recall`` with ``embeddings=`` the MiniLM, through ``migrate()``: each
    message embedded once (kept in the model object), within the budget, never a fallback."""
    assert _minilm.missing() is None, _minilm.missing()
    result = locomo.run(
        budgets=["4k"], strategies=["auto"], modes=["dated"], every=20, conversations=1
    )
    name = "auto, dated, embeddings"
    assert name in result["rows"]
    assert result["over_budget"] == {}
    assert 0.0 <= result["evidence_recall"][name]["4k"] <= 1.0
