"""``SessionFitter.fit(pending_calls=True)``: a trailing tool call whose results are the next
input is kept with the newest turn when the log is cut (without it, it is left out)."""

from __future__ import annotations

from session_migrator import Message, ModelWindow, SessionFitter, ToolCall

WINDOW = ModelWindow("tiny", "custom", 1_200, 1_000, 200, "o200k_base", "explicit")


def log() -> list[Message]:
    out = [Message("system", "You look up orders.")]
    for n in range(30):
        out.append(Message("user", f"Question {n}: " + "detail " * 40))
        out.append(Message("assistant", f"Answer {n}: " + "fact " * 40))
    out.append(Message("user", "Where is order 7?"))
    out.append(Message("assistant", "", tool_calls=(ToolCall("call-7", "lookup", "{}"),)))
    return out


def test_a_pending_call_is_kept_when_the_log_is_cut() -> None:
    fitter = SessionFitter("s", store="memory://")
    fitter.append(log())
    kept = fitter.fit(WINDOW, pending_calls=True)
    assert kept.report.decision == "compressed"
    assert kept.messages[-1].tool_calls[0].id == "call-7"
    assert kept.messages[-2].text == "Where is order 7?"
    dropped = fitter.fit(WINDOW)
    assert all(not m.tool_calls for m in dropped.messages)
    assert "call-7" not in [c.id for m in dropped.messages for c in m.tool_calls]
