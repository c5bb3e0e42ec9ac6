"""The re-fit step timer runs and its steps nest (behaviour, not timing)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks import refit_steps
from session_migrator.counting import _tokens


@pytest.fixture(autouse=True)
def _shared_counters_kept() -> Iterator[None]:
    """The run empties the process's shared counters, as each benchmark cell does; the other
    tests hold (and compare) the ones there were.
    """
    registries = (_tokens._tiktoken_counters, _tokens._estimating, _tokens._heuristic)
    saved = [dict(registry) for registry in registries]
    yield
    for registry, before in zip(registries, saved, strict=True):
        registry.clear()
        registry.update(before)


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


def test_the_profiling_loop_refits_after_new_questions(monkeypatch: pytest.MonkeyPatch) -> None:
    from session_migrator.recall import _recall

    queries: list[str] = []
    recall = _recall.recall_turns

    def counted(*args: Any, **kwargs: Any) -> Any:
        queries.append(args[5])
        return recall(*args, **kwargs)

    monkeypatch.setattr(_recall, "recall_turns", counted)
    questions = refit_steps.loop(100, 0.5)
    assert questions >= 2
    # the cold read's question, then each new question, searched (again after an answer only
    # where the answer made the fitter cut again)
    assert len(set(queries)) == 1 + questions
    assert refit_steps.main(["--size", "100", "--loop", "0.2"]) == 0


def test_the_cold_mode_times_each_questions_two_tokenizations() -> None:
    rows = refit_steps.cold(100, repeats=3)
    assert len(rows) == 2  # the two user questions among the appended messages
    for row in rows:
        assert set(row) == {"stems_warm", "stems_cold", "count_warm", "count_cold"}
        assert all(seconds > 0 for seconds in row.values())
    assert refit_steps.main(["--size", "100", "--cold"]) == 0
