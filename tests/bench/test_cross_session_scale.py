"""The scale benchmark of recall across sessions (:mod:`benchmarks.cross_session_scale`) at a
small scale: every planted fact's evidence reaches the model of a new session of the user, cold
and warm (the times are reported by the benchmark, not asserted here), the oldest too when the
user's sessions hold more messages than recall reads (the store's search index finds it)."""

from __future__ import annotations

from benchmarks import cross_session_scale


def test_planted_evidence_reaches_a_new_session_of_the_user() -> None:
    # 60 sessions of 100 messages: more than the 5,000 messages read by recency
    result = cross_session_scale.run(quick=True, sessions=60, messages=100)
    assert result["sessions"] == 60
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
