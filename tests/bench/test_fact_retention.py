"""The fact-retention floors of the engine issue, on a small sample (behaviour, not timing)."""

from __future__ import annotations

from benchmarks import fact_retention


def test_recall_and_summaries_keep_what_trimming_loses() -> None:
    result = fact_retention.run(seeds=1, builtins=False)
    rows = {row["method"]: row for row in result["rows"]}
    trim = rows["session-migrator trim"]
    recall = rows["session-migrator recall"]
    summarize = rows["session-migrator summarize"]
    auto = rows["session-migrator auto"]
    assert result["questions"] == 10
    # recall keeps at least twice as many facts as trim at 10% of the session (and some at all)
    assert recall["10%"] >= 2 * trim["10%"]
    assert recall["10%"] >= 0.5
    for budget in result["budgets"]:
        assert summarize[budget] > trim[budget], budget  # the offline summary beats trimming
        assert auto[budget] >= recall[budget] - 0.1, budget
