"""Recall across sessions on LoCoMo (:mod:`benchmarks.cross_session`): each LoCoMo session
stored as its own session of one user, each question asked in a new session of that user. The
share of evidence turns reaching the model stays near what the same conversation fitted as one
session reaches (it was 0.396 when only the 20 newest sessions were read and 6 exchanges came
back in a quarter of the budget)."""

from __future__ import annotations

import os

import pytest

from benchmarks import cross_session, locomo

pytestmark = pytest.mark.skipif(
    not any(locomo.DEFAULT_DATA.glob("*.json")) and not os.environ.get("CI"),
    reason=f"the LoCoMo dev split is not beside the repository: {locomo.WHERE}",
)


@pytest.mark.slow
def test_cross_session_recall_is_near_in_session_recall() -> None:
    result = cross_session.run(budgets=["4k", "8k"], every=8)
    assert result["questions"] >= 50
    assert result["over_budget"] == {}
    cross = result["evidence_recall"][cross_session.CROSS]
    inside = result["evidence_recall"][cross_session.IN_SESSION]
    for budget in ("4k", "8k"):
        assert cross[budget] >= 0.8, (budget, cross)
        assert cross[budget] >= inside[budget] - 0.06, (budget, cross, inside)
    assert cross["8k"] >= cross["4k"]
