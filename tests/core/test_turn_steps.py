"""Issue 32's property on every agent style: for random agent runs on small windows, no step of
the current turn vanishes from what the model is sent. A function call and its result, a ReAct
action and its ``Observation:``, a CodeAct ``<execute>`` and its ``Result of executing the code
given:`` (several results in one message) are each there, whole or shrunk, the result still read
as one (its first line kept) and, where it holds up to three results, every result's header in
view; or the fit raises a ``BudgetError`` naming a budget over the one it was given (the turn,
or the system prompt and the question, do not fit)."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from session_migrator import BudgetError, Message, ModelWindow, ToolCall, migrate

STYLES = ("function", "react", "codeact")
_HEADER = re.compile(r"RESULT (k\d+-\d+):")


def _result(key: str, rows: int) -> str:
    body = "\n".join(f"{key} row {i:03d}: {i * 37 % 101}.25 EUR, settled" for i in range(rows))
    return f"RESULT {key}:\n{body}\nEND {key}"


@st.composite
def agent_runs(draw: st.DrawFn) -> tuple[str, list[Message], set[str]]:
    """A conversation of older turns and a current turn of a few steps, in one style; and the
    ids of the current turn's steps."""
    style = draw(st.sampled_from(STYLES))
    out = [Message("system", "You are an agent. Look things up, then answer.", id="sys")]
    steps: set[str] = set()
    turns = draw(st.integers(1, 4))
    for t in range(turns):
        current = t == turns - 1
        out.append(
            Message("user", f"Question {t}: " + "gather the ledger figures. " * 20, id=f"u{t}")
        )
        for s in range(draw(st.integers(1, 4))):
            keys = [f"k{t}{s}-{j}" for j in range(draw(st.integers(1, 3)))]
            rows = draw(st.integers(5, 60))
            text = "\n".join(_result(k, rows) for k in keys)
            ids = (f"a{t}-{s}", f"r{t}-{s}")
            if style == "function":
                calls = tuple(
                    ToolCall(f"c{t}{s}{j}", "lookup", json.dumps({"key": k}))
                    for j, k in enumerate(keys)
                )
                out.append(Message("assistant", "", tool_calls=calls, id=ids[0]))
                for j, k in enumerate(keys):
                    out.append(
                        Message(
                            "tool", _result(k, rows), tool_call_id=f"c{t}{s}{j}", id=f"{ids[1]}-{j}"
                        )
                    )
                    if current:
                        steps.add(f"{ids[1]}-{j}")
            elif style == "react":
                action = (
                    f"Thought: I need {keys[0]}.\nAction: lookup\n"
                    f'Action Input: {{"key": "{keys[0]}"}}'
                )
                out.append(Message("assistant", action, id=ids[0]))
                out.append(Message("user", f"Observation: {_result(keys[0], rows)}", id=ids[1]))
            else:
                code = "\n".join(f"print(lookup({k!r}))" for k in keys)
                out.append(Message("assistant", f"<execute>\n{code}\n</execute>", id=ids[0]))
                out.append(
                    Message("user", f"Result of executing the code given:\n\n{text}", id=ids[1])
                )
            if current:
                steps.update(ids if style != "function" else ids[:1])
        if not current:
            out.append(Message("assistant", f"Answer {t}: all settled.", id=f"z{t}"))
    return style, out, steps


@settings(max_examples=120, deadline=None)
@given(agent_runs(), st.integers(600, 6_000), st.sampled_from(["auto", "trim", "recall"]))
def test_no_step_of_the_current_turn_vanishes(
    run: tuple[str, list[Message], set[str]], budget: int, strategy: str
) -> None:
    style, messages, steps = run
    window = ModelWindow("agent-test", "test", budget, budget, 0, "o200k_base", "explicit")
    try:
        result = migrate(messages, window, strategy=strategy, reserve_output=0)
    except BudgetError as exc:
        refused = exc
    else:
        refused = None
    if refused is not None:
        assert refused.needed > refused.budget, str(refused)
        return
    sent = {m.id: m for m in result.messages}
    originals = {m.id: m for m in messages}
    for step in steps:
        assert step in sent, f"{style}: a step of the current turn ({step}) vanished"
        kept, original = sent[step], originals[step]
        assert [(c.id, c.name) for c in kept.tool_calls] == [
            (c.id, c.name) for c in original.tool_calls
        ]
        first_line = original.text.split("\n", 1)[0]
        if original.role == "user" and len(first_line) <= 40:
            assert kept.text.startswith(first_line), (style, kept.text[:80])  # still a step result
        headers = _HEADER.findall(original.text)
        if original.role != "assistant" and len(headers) <= 3:
            assert _HEADER.findall(kept.text) == headers, (style, kept.text)
