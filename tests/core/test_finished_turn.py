"""A turn that ended with the assistant's answer is history like any other: a session handed
over after a long agent turn (62 tool calls, then the answer) fits a small model, with the
user's request and the answer kept and the steps left to the summary; a turn still in progress
keeps every step or is refused."""

from __future__ import annotations

import json

import pytest

from session_migrator import BudgetError, Message, ToolCall, counter_for, migrate


def _session(finished: bool) -> list[Message]:
    messages = [Message("system", "You are a coding agent.", id="s")]
    for t in range(20):
        messages.append(Message("user", f"Task {t}: fix module {t}. " * 20, id=f"u{t}"))
        messages.append(Message("assistant", f"Done {t}. " * 50, id=f"a{t}"))
    messages.append(Message("user", "Refactor everything.", id="ask"))
    for k in range(62):
        call = ToolCall(f"c{k}", "shell", json.dumps({"cmd": f"ls -la src/{k}"}))
        messages.append(Message("assistant", "", tool_calls=(call,), id=f"x{k}"))
        messages.append(Message("tool", f"file_{k}.py\n" * 300, tool_call_id=f"c{k}", id=f"r{k}"))
    if finished:
        messages.append(Message("assistant", "All refactored; tests pass.", id="answer"))
    return messages


def test_a_finished_turn_is_history() -> None:
    result = migrate(_session(finished=True), "gpt-4")
    sent = result.messages
    assert counter_for("cl100k_base").count_messages(sent) <= result.report.budget
    ids = [m.id for m in sent]
    assert ids[-2:] == ["ask", "answer"]  # the request and the answer, the steps left out
    calls = {c.id for m in sent for c in m.tool_calls}
    assert all(m.tool_call_id in calls for m in sent if m.role == "tool")  # no orphan result
    assert "x0" in result.report.summarized_ids + result.report.dropped_ids


def test_a_turn_in_progress_keeps_its_steps_or_is_refused() -> None:
    """A turn in progress keeps every step (the model would repeat what it cannot see): at their
    smallest (their results' heads, markers without the id to read them back by) the 62 steps
    fit gpt-4; twice as many do not, and are refused."""
    result = migrate(_session(finished=False), "gpt-4")
    sent = result.messages
    assert counter_for("cl100k_base").count_messages(sent) <= result.report.budget
    ids = {m.id for m in sent}
    assert {f"x{k}" for k in range(62)} | {f"r{k}" for k in range(62)} <= ids
    assert all(m.text.startswith("file_") for m in sent if m.role == "tool")  # (their heads)
    longer = _session(finished=False)
    for k in range(62, 124):
        call = ToolCall(f"c{k}", "shell", json.dumps({"cmd": f"ls -la src/{k}"}))
        longer.append(Message("assistant", "", tool_calls=(call,), id=f"x{k}"))
        longer.append(Message("tool", f"file_{k}.py\n" * 300, tool_call_id=f"c{k}", id=f"r{k}"))
    with pytest.raises(BudgetError, match="current turn's 124 tool step"):
        migrate(longer, "gpt-4")
