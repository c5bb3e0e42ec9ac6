"""The scale benchmark of recall across sessions (:mod:`benchmarks.cross_session_scale`) at a
small scale: every planted fact's evidence reaches the model of a new session of the user, cold
and warm (the times are reported by the benchmark, not asserted here)."""

from __future__ import annotations

from benchmarks import cross_session_scale


def test_planted_evidence_reaches_a_new_session_of_the_user() -> None:
    result = cross_session_scale.run(quick=True, sessions=30, messages=40)
    assert result["sessions"] == 30
    figures = result["backends"]["sqlite"]
    assert len(figures["facts"]) == len(cross_session_scale.FACTS)
    for fact in figures["facts"]:
        assert fact["cold"], fact
        assert fact["warm"], fact
    assert figures["bytes_after"] > figures["bytes_empty"]
    assert figures["cold_ms"]["n"] == figures["warm_ms"]["n"] == len(cross_session_scale.FACTS)
    assert "| sqlite |" in cross_session_scale.markdown(result)


def test_the_facts_are_planted_oldest_to_newest() -> None:
    planted = cross_session_scale.planted_sessions(1_000)
    assert sorted(planted) == [0, 500, 899, 974, 999]
    assert cross_session_scale.main(["--quick", "--sessions", "10", "--messages", "10"]) == 0
