"""Calibration of estimate multipliers: persisted per model, from usage and from exact counts."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from session_migrator import Message, lookup_model, migrate
from session_migrator.counting import _calibration, _tokens
from session_migrator.counting._calibration import (
    calibrate,
    calibration_factor,
    calibration_path,
    reset_calibration,
)
from session_migrator.counting._online_counters import AnthropicCounter
from session_migrator.counting._recalibration import recalibrate_from_exact
from session_migrator.counting._tokens import FAMILY_MULTIPLIERS, EstimatingCounter, counter_for


def forget_memory() -> None:
    """Drop the in-memory state, as a new process would start."""
    monkey = _calibration._State()
    _calibration._state.path = monkey.path
    _calibration._state.stamp = monkey.stamp
    _calibration._state.models = monkey.models


def test_tokens_reexports_the_calibration_functions() -> None:
    assert _tokens.calibrate is calibrate
    assert _tokens.calibration_factor is calibration_factor
    assert _tokens.reset_calibration is reset_calibration


def test_defaults_are_unchanged_and_nothing_is_written() -> None:
    assert calibration_factor("claude-sonnet-4-5") == 1.0
    counter = counter_for("claude", model="claude-sonnet-4-5")
    assert isinstance(counter, EstimatingCounter)
    assert counter.multiplier == FAMILY_MULTIPLIERS["claude"]
    reset_calibration()
    assert not calibration_path().exists()


def test_calibrate_moves_halfway_and_persists() -> None:
    assert calibrate("claude-sonnet-4-5", estimated=100, observed=150) == 1.25
    assert calibrate("claude-sonnet-4-5", estimated=100, observed=100) == 1.25  # ratio 1.25
    assert calibrate("claude-sonnet-4-5", estimated=0, observed=100) == 1.25
    assert calibrate("tiny", estimated=100, observed=1) == 0.505
    assert calibrate("huge", estimated=100, observed=1000) == 2.0  # clamped to [0.5, 2.0]
    saved = json.loads(calibration_path().read_text())
    entry = saved["models"]["claude-sonnet-4-5"]
    assert entry["factor"] == 1.25
    assert entry["method"] == "usage"
    assert entry["observations"] == 2
    forget_memory()
    assert calibration_factor("claude-sonnet-4-5") == 1.25
    counter = counter_for("claude", model="claude-sonnet-4-5")
    assert isinstance(counter, EstimatingCounter)
    assert counter.multiplier == round(FAMILY_MULTIPLIERS["claude"] * 1.25, 4)


def test_calibration_is_seen_by_another_process() -> None:
    calibrate("gemini-2.5-pro", estimated=200, observed=180)
    script = textwrap.dedent(
        """
        from session_migrator.counting._tokens import calibration_factor
        print(calibration_factor("gemini-2.5-pro"))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert float(out.stdout) == 0.95


def test_another_process_calibrating_is_picked_up() -> None:
    assert calibration_factor("qwen3-max") == 1.0
    script = (
        "from session_migrator import calibrate; calibrate('qwen3-max', estimated=10, observed=12)"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert calibration_factor("qwen3-max") == 1.1


def test_persist_false_stays_in_memory() -> None:
    calibrate("m", estimated=100, observed=120, persist=False)
    assert calibration_factor("m") == 1.1
    assert not calibration_path().exists()


def test_reset_forgets_on_disk_too() -> None:
    calibrate("a", estimated=100, observed=120)
    calibrate("b", estimated=100, observed=80)
    reset_calibration("a")
    forget_memory()
    assert (calibration_factor("a"), calibration_factor("b")) == (1.0, 0.9)
    reset_calibration()
    forget_memory()
    assert calibration_factor("b") == 1.0


@pytest.mark.parametrize(
    "content",
    [
        "{ not json",
        "[]",
        '{"models": {"a": {"factor": "high"}, "b": {"factor": 9}, "c": 3, "d": {"factor": 1.2}}}',
    ],
)
def test_a_corrupt_file_is_tolerated(content: str) -> None:
    path = calibration_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    assert calibration_factor("a") == 1.0
    assert calibration_factor("b") == 1.0
    assert calibration_factor("d") == (1.2 if "models" in content else 1.0)
    assert calibrate("a", estimated=100, observed=140) == 1.2
    assert json.loads(path.read_text())["models"]["a"]["factor"] == 1.2


def test_an_unwritable_home_keeps_the_factor_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("SESSION_MIGRATOR_HOME", str(blocker / "home"))
    assert calibrate("m", estimated=100, observed=120) == 1.1
    assert calibration_factor("m") == 1.1


def test_each_data_home_has_its_own_calibration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calibrate("m", estimated=100, observed=150)
    monkeypatch.setenv("SESSION_MIGRATOR_HOME", str(tmp_path / "other-home"))
    assert calibration_factor("m") == 1.0


class WordCounter:
    """An 'exact' counter for tests: two tokens per word."""

    name = "words"
    exact = True

    def count_text(self, text: str) -> int:
        return 2 * len(text.split())

    def count_message(self, message: Message) -> int:
        return 3 + self.count_text(message.text)

    def count_messages(self, messages: Any) -> int:
        return 3 + sum(self.count_message(m) for m in messages)


SAMPLES = [
    Message("user", "The quick brown fox jumps over the lazy dog near the river bank."),
    Message("assistant", "def add(a, b):\n    return a + b\n"),
    Message("user", ""),
]


def test_recalibrate_from_exact_sets_the_measured_ratio() -> None:
    texts = [m.text for m in SAMPLES if m.text]
    estimate = counter_for("mistral")
    expected = round(
        sum(2 * len(t.split()) for t in texts) / sum(estimate.count_text(t) for t in texts), 4
    )
    factor = recalibrate_from_exact("mistral-large", WordCounter(), SAMPLES)
    assert factor == expected
    forget_memory()
    assert calibration_factor("mistral-large") == expected
    # kept under the name the model's window goes by, as the fits look it up
    key = lookup_model("mistral-large").name
    entry = json.loads(calibration_path().read_text())["models"][key]
    assert entry["method"] == "exact"
    calibrated = counter_for("mistral", model="mistral-large")
    assert isinstance(calibrated, EstimatingCounter)
    assert calibrated.multiplier == round(FAMILY_MULTIPLIERS["mistral"] * expected, 4)


def test_recalibrate_with_no_text_changes_nothing() -> None:
    assert recalibrate_from_exact("m", WordCounter(), [Message("user", "  ")]) == 1.0
    assert not calibration_path().exists()


def test_recalibrate_from_the_anthropic_endpoint(serve: Any) -> None:
    def tokens(text: str) -> int:  # two per word, but "a" is one (the probes rely on it)
        return sum(1 if word == "a" else 2 for word in text.split())

    def route(request: Any) -> tuple[Any, ...]:
        messages = request.body["messages"]
        return 200, {"input_tokens": 7 + sum(3 + tokens(m["content"]) for m in messages)}

    server = serve(route)
    exact = AnthropicCounter("claude-opus-4-7", api_key="x", base_url=server.url)
    factor = recalibrate_from_exact("claude-opus-4-7", exact, SAMPLES)
    exact.close()
    texts = [m.text for m in SAMPLES if m.text]
    estimate = counter_for("claude-4.7")
    expected = sum(tokens(t) for t in texts) / sum(estimate.count_text(t) for t in texts)
    assert factor == round(expected, 4)
    forget_memory()
    assert calibration_factor("claude-opus-4-7") == factor


def test_recalibrate_skips_when_the_endpoint_fails(serve: Any) -> None:
    server = serve(lambda request: (429, {"type": "error", "error": {"type": "rate_limit_error"}}))
    exact = AnthropicCounter("claude-opus-4-7", api_key="x", base_url=server.url)
    assert recalibrate_from_exact("claude-opus-4-7", exact, SAMPLES) == 1.0
    exact.close()
    assert not calibration_path().exists()


@pytest.mark.parametrize(
    "alias", ["claude-3-haiku", "anthropic/claude-3-haiku-20240307", "Claude-3-Haiku-20240307"]
)
def test_a_calibration_under_any_name_of_a_model_is_what_its_fits_use(alias: str) -> None:
    messages = [Message("user", "What did the quarterly report say about churn? " * 20)]
    before = migrate(messages, "claude-3-haiku-20240307").report.tokens_before
    assert calibrate(alias, estimated=1_000, observed=2_000) == 1.5
    for name in ("claude-3-haiku-20240307", alias):
        after = migrate(messages, name).report.tokens_before
        assert after > before * 1.4


def test_a_calibration_from_nan_or_infinite_counts_changes_nothing() -> None:
    calibrate("claude-3-haiku", estimated=100, observed=150)
    for estimated, observed in ((100, float("nan")), (float("nan"), 100), (100, float("inf"))):
        assert calibrate("claude-3-haiku", estimated=estimated, observed=observed) == 1.25
