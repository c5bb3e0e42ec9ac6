"""The fit decision: tokens, budget, fits, exactness; a session that fits goes over untouched."""

from __future__ import annotations

import json
from typing import Any

import pytest

from session_migrator import InvalidMessageError, Message, ModelWindow, Session, ToolCall
from session_migrator.counting._tokens import counter_for
from session_migrator.migration._migrate import migrate, plan, resolve_target
from session_migrator.migration._report import Plan
from session_migrator.models._windows import DEFAULT_OUTPUT_FRACTION, DEFAULT_SAFETY_MARGIN, Budget


def target(
    window: int = 10_000,
    max_input: int | None = None,
    max_output: int | None = 1_000,
    tokenizer: str = "o200k_base",
) -> ModelWindow:
    return ModelWindow(
        "target", "test", window, max_input or window, max_output, tokenizer, "explicit"
    )


def session(turns: int = 3) -> list[Message]:
    out = [Message("system", "You are helpful.", id="sys")]
    for i in range(turns):
        out.append(Message("user", f"Question number {i}?", id=f"u{i}"))
        out.append(Message("assistant", f"Answer number {i}.", id=f"a{i}"))
    return out


# -- the budget --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "max_input", "max_output", "reserve", "expected"),
    [
        # reserved output defaults to the model's max output ...
        (10_000, None, 1_000, None, 9_000),
        # ... capped at a quarter of the window
        (10_000, None, 8_000, None, 10_000 - int(10_000 * DEFAULT_OUTPUT_FRACTION)),
        # no max output known: the cap
        (10_000, None, None, None, 7_500),
        # the input cap wins when it is smaller (gpt-5: 272k input of a 400k window)
        (400_000, 272_000, 128_000, None, 272_000),
        (10_000, 8_000, 1_000, None, 8_000),
        # an explicit reserve wins over the default, even above the cap
        (10_000, None, 1_000, 4_000, 6_000),
        (10_000, None, 1_000, 0, 10_000),
    ],
)
def test_budget_for_exact_counts(
    window: int, max_input: int | None, max_output: int | None, reserve: int | None, expected: int
) -> None:
    p = plan(session(), target(window, max_input, max_output), reserve_output=reserve)
    assert p.exact is True
    assert p.budget.tokens == expected
    assert p.budget.safety_margin == 0
    assert p.budget.context_window == window
    assert p.budget.max_input_tokens == (max_input or window)


def test_estimated_counts_hold_back_a_safety_margin() -> None:
    p = plan(session(), target(10_000, max_output=1_000, tokenizer="claude"))
    assert p.exact is False
    raw = 9_000
    assert p.budget.safety_margin == int(raw * DEFAULT_SAFETY_MARGIN) == 450
    assert p.budget.tokens == raw - 450
    assert p.counter.startswith("estimate:claude")


def test_extra_reserved_is_taken_off() -> None:
    p = plan(session(), target(10_000, max_output=1_000), extra_reserved=500)
    assert p.budget.tokens == 8_500


def test_budget_for_window_directly() -> None:
    w = target(1_000, max_output=100)
    assert Budget.for_window(w, exact=True) == Budget(900, 1_000, 1_000, 100, 0)
    assert Budget.for_window(w, exact=False).tokens == 900 - 45
    assert Budget.for_window(w, exact=True, reserve_output=5_000).tokens == 0
    # a cap lowers the budget to itself, after the reserves and margin, and never raises it
    assert Budget.for_window(w, exact=False, cap=500) == Budget(500, 1_000, 1_000, 100, 45)
    assert Budget.for_window(w, exact=True, cap=5_000).tokens == 900
    assert Budget.for_window(w, exact=True, extra_reserved=100, cap=850).tokens == 800
    with pytest.raises(ValueError, match="reserve_output must not be negative"):
        Budget.for_window(w, exact=True, reserve_output=-1)


# -- the plan ----------------------------------------------------------------------------------


def test_plan_counts_with_the_targets_counter() -> None:
    messages = session()
    p = plan(messages, target())
    counter = counter_for("o200k_base")
    assert p.tokens == counter.count_messages(messages)
    assert p.counter == counter.name == "o200k_base"
    assert p.fits is True
    assert 0 < p.share < 1
    cl100k = plan(messages, target(tokenizer="cl100k_base"))
    assert cl100k.counter == "cl100k_base"
    assert cl100k.tokens == counter_for("cl100k_base").count_messages(messages)


def test_plan_accepts_a_session_and_a_custom_counter() -> None:
    s = Session("s1", messages=tuple(session()))
    custom = counter_for("gemini")
    p = plan(s, target(), counter=custom)
    assert p.tokens == custom.count_messages(s.messages)
    assert p.exact is False
    assert p.budget.safety_margin > 0


def test_fits_is_decided_at_the_exact_boundary() -> None:
    messages = session()
    tokens = counter_for("o200k_base").count_messages(messages)
    exact_fit = target(tokens, max_output=0)
    assert plan(messages, exact_fit).fits is True
    assert plan(messages, target(tokens - 1, max_output=0)).fits is False
    result = migrate(messages, exact_fit)
    assert result.report.decision == "fits"
    assert plan(messages, target(tokens - 1, max_output=0)).share > 1


def test_a_session_that_fits_goes_over_unchanged() -> None:
    messages = session()
    messages.insert(3, Message("assistant", "", tool_calls=(ToolCall("c", "f"),), id="call"))
    messages.insert(4, Message("tool", "done", tool_call_id="c", id="res"))
    result = migrate(messages, target(), strategy="trim")
    assert len(result.messages) == len(messages)
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))
    report = result.report
    assert report.decision == "fits"
    assert report.tokens_before == report.tokens_after
    assert report.messages_before == report.messages_after == len(messages)
    assert report.dropped_ids == report.summarized_ids == report.truncated_ids == []
    assert report.strategy == "trim"
    json.dumps(report.to_dict())


def test_a_small_session_moves_to_a_smaller_model_untouched() -> None:
    messages = session(2)
    big = target(128_000, max_output=16_384)
    small = target(1_000, max_output=200)
    tokens = plan(messages, big).tokens
    assert tokens < 200
    result = migrate(messages, small)
    assert result.report.decision == "fits"
    assert result.messages == messages


def test_a_large_session_is_compressed_even_for_a_bigger_model() -> None:
    messages = session(400)
    result = migrate(messages, target(4_000, max_output=500), source_model="gpt-4")
    report = result.report
    assert report.decision == "compressed"
    assert report.tokens_before > report.budget >= report.tokens_after
    assert report.source_model == "gpt-4"
    assert report.target == "target"
    assert report.window_source == "explicit"
    assert report.seconds >= 0
    assert json.loads(report.to_json())["decision"] == "compressed"


def test_resolve_target_applies_explicit_values() -> None:
    w = target(10_000, max_output=1_000)
    assert resolve_target(w) is w
    smaller = resolve_target(w, context_window=4_000)
    assert smaller.context_window == 4_000
    assert smaller.max_input_tokens == 4_000
    assert smaller.source == "explicit"
    assert resolve_target(w, max_output_tokens=10).max_output_tokens == 10


def test_bad_input_is_rejected_with_its_index() -> None:
    with pytest.raises(InvalidMessageError) as caught:
        plan([Message("user", "ok"), "not a message"], target())  # type: ignore[list-item]
    assert caught.value.index == 1


def test_an_unknown_strategy_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown strategy"):
        migrate(session(400), target(2_000), strategy="squeeze")


def test_plan_is_a_value() -> None:
    p = plan(session(), target())
    assert isinstance(p, Plan)
    assert p == plan(session(), target())


# -- real model names --------------------------------------------------------------------------

REAL_MODELS = [
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-4",
    "gpt-3.5-turbo",
    "gpt-5",
    "o3-mini",
    "claude-3-haiku-20240307",
    "claude-sonnet-4-5",
    "gemini-2.5-pro",
    "mistral-large-latest",
    "deepseek-chat",
    "llama-3.1-8b-instruct",
    "qwen3-32b",
]


@pytest.mark.parametrize("name", REAL_MODELS)
def test_real_model_names_plan_and_migrate(name: str) -> None:
    models = pytest.importorskip("session_migrator.models._lookup")
    window = models.lookup_model(name)
    messages = session()
    p = plan(messages, name)
    assert p.window == window
    assert p.exact == (window.tokenizer in ("o200k_base", "cl100k_base"))
    assert (p.budget.safety_margin > 0) == (not p.exact)
    reserve = p.budget.reserved_output
    assert reserve <= window.context_window * DEFAULT_OUTPUT_FRACTION
    assert p.budget.tokens <= min(window.max_input_tokens, window.context_window - reserve)
    assert p.fits
    assert migrate(messages, name).messages == messages
    # a conversation larger than the budget (shrunk to 3,000 tokens by a large extra reserve, to
    # keep the test fast on million-token windows) is compressed into it
    extra = min(window.max_input_tokens, window.context_window - reserve) - 3_000
    huge = [messages[0], Message("user", "lorem ipsum dolor " * 2_000)]
    result = migrate(huge, name, strategy="trim", extra_reserved=extra)
    assert result.report.decision == "compressed"
    assert result.report.budget <= 3_000
    assert counter_for(window.tokenizer, model=window.name).count_messages(result.messages) <= (
        result.report.budget
    )


def test_gpt5_input_cap_is_the_budget() -> None:
    pytest.importorskip("session_migrator.models._lookup")
    p = plan(session(), "gpt-5")
    assert p.window.max_input_tokens < p.window.context_window
    assert p.budget.tokens == p.window.max_input_tokens


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"extra_reserved": -5_000}, ValueError, "extra_reserved must not be negative"),
        ({"reserve_output": 1.5}, TypeError, "reserve_output must be a whole number"),
        ({"reserve_output": True}, TypeError, "reserve_output must be a whole number"),
        ({"safety_margin": -1.0}, ValueError, "safety_margin must be a share"),
    ],
)
def test_a_budget_never_grows_past_the_window(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        Budget.for_window(target(1_000, max_output=100), exact=False, **kwargs)
