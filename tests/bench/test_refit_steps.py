"""The re-fit step timer runs and its steps nest (behaviour, not timing)."""

from __future__ import annotations

from benchmarks import refit_steps


def test_the_steps_of_a_refit_after_a_question_nest_inside_it() -> None:
    rows = refit_steps.run(100, "auto", runs=1)
    assert len(rows) == 2  # the benchmark appends assistant, user, assistant, user, assistant
    for row in rows:
        assert set(row) == {"fit", "recall", "rank", "stems", "ids", "yardstick"}
        assert row["fit"] >= row["recall"] >= row["rank"] >= row["stems"] > 0
        assert row["fit"] >= row["recall"] + row["ids"]
        assert row["yardstick"] > 0


def test_a_trim_refit_recalls_nothing() -> None:
    rows = refit_steps.run(100, "trim", runs=1)
    assert rows
    assert all(set(row) == {"fit", "yardstick"} for row in rows)
