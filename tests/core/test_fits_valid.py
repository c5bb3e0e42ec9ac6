"""A conversation that fits is also one the chat APIs accept: what compression would repair is
repaired on the fits path too, and reported; ``pending_tool_calls="keep"`` keeps a call whose
results are appended next."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from session_migrator import (
    Message,
    MigrationResult,
    ModelWindow,
    SessionFitter,
    ToolCall,
    chat_rule_violations,
    counter_for,
    migrate,
)

WINDOW = ModelWindow("target", "test", 10_000, 10_000, 0, "o200k_base", "explicit")
O200K = counter_for("o200k_base")


def _both(messages: list[Message], **options: Any) -> list[MigrationResult]:
    """The fit by migrate() and by a store-backed SessionFitter (the adapters' path)."""
    fitter = SessionFitter(f"s{uuid.uuid4().hex}", store="memory://")
    fitter.append(messages)
    return [migrate(messages, WINDOW, **options), fitter.fit(WINDOW, **options)]


CALLED = [
    Message("system", "Use tools.", id="sys"),
    Message("user", "What is the weather in Oslo?", id="u1"),
    Message("assistant", "", tool_calls=(ToolCall("c1", "weather", '{"city": "Oslo"}'),), id="a1"),
]


def test_a_trailing_call_without_results_is_left_out_and_reported() -> None:
    for result in _both(CALLED):
        report = result.report
        assert report.decision == "fits"
        assert [m.id for m in result.messages] == ["sys", "u1"]
        assert chat_rule_violations(result.messages) == []
        assert report.dropped_ids == ["a1"]
        assert "pending_tool_calls='keep'" in report.notes[0]
        assert report.messages_after == 2
        assert report.tokens_after == O200K.count_messages(result.messages) < report.tokens_before


def test_keep_leaves_the_call_for_a_caller_about_to_append_its_results() -> None:
    for result in _both(CALLED, pending_tool_calls="keep"):
        assert result.messages == CALLED
        assert result.report.dropped_ids == []
        assert result.report.notes == []
    answered = [*CALLED, Message("tool", "12 C, rain", tool_call_id="c1", id="t1")]
    for result in _both(answered):  # once answered, nothing is pending
        assert all(a is b for a, b in zip(result.messages, answered, strict=True))


def test_keep_holds_on_the_compressed_path_too() -> None:
    long = [Message("system", "Use tools.", id="sys")]
    for i in range(60):
        long += [Message("user", f"q{i} " + "word " * 60), Message("assistant", f"a{i}")]
    long += CALLED[1:]
    small = ModelWindow("target", "test", 800, 800, 0, "o200k_base", "explicit")
    kept = migrate(long, small, strategy="trim", pending_tool_calls="keep")
    dropped = migrate(long, small, strategy="trim")
    assert kept.report.decision == dropped.report.decision == "compressed"
    assert kept.messages[-1].id == "a1"
    assert "a1" not in {m.id for m in dropped.messages}
    assert chat_rule_violations(dropped.messages) == []


def test_a_leading_assistant_message_is_left_out_and_reported() -> None:
    messages = [
        Message("system", "Be kind.", id="sys"),
        Message("assistant", "Hello! How can I help?", id="greet"),
        Message("user", "Hi, a question.", id="u1"),
        Message("assistant", "Sure.", id="a1"),
    ]
    for result in _both(messages):
        assert [m.id for m in result.messages] == ["sys", "u1", "a1"]
        assert result.report.dropped_ids == ["greet"]
        assert "before the first user message" in result.report.notes[0]
        assert chat_rule_violations(result.messages) == []


def test_a_system_message_in_the_middle_moves_to_the_front() -> None:
    messages = [
        Message("system", "Be kind.", id="sys"),
        Message("user", "Hi.", id="u1"),
        Message("assistant", "Hello.", id="a1"),
        Message("system", "From now on answer in French.", id="sys2"),
        Message("user", "And now?", id="u2"),
    ]
    for result in _both(messages):
        assert [m.id for m in result.messages] == ["sys", "sys2", "u1", "a1", "u2"]
        assert result.report.dropped_ids == []  # nothing lost
        assert "moved 1 system message(s)" in result.report.notes[0]
        assert chat_rule_violations(result.messages) == []


def test_a_valid_conversation_goes_over_as_the_same_objects() -> None:
    messages = [Message("system", "Be kind."), Message("user", "Hi."), Message("assistant", "Hi!")]
    for result in _both(messages):
        assert all(a is b for a, b in zip(result.messages, messages, strict=True))
        assert result.report.notes == []


def test_a_wrong_choice_says_what_the_choices_are() -> None:
    with pytest.raises(ValueError, match=r"'drop'.*'keep'"):
        migrate(CALLED, WINDOW, pending_tool_calls="yes")  # type: ignore[arg-type]
