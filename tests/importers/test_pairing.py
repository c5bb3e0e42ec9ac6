"""Property: whatever order calls and results arrive in, the result is a paired conversation."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from session_migrator import Message, ToolCall
from session_migrator.importers._common import Stats
from session_migrator.importers._pairing import Conversation

Check = Callable[[Sequence[Message]], None]

_events = st.lists(
    st.one_of(
        st.tuples(st.just("user"), st.text(max_size=3)),
        st.tuples(st.just("assistant"), st.text(max_size=3)),
        st.tuples(st.just("call"), st.sampled_from("abcdef")),
        st.tuples(st.just("output"), st.sampled_from("abcdefg")),
    ),
    max_size=40,
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],  # check_paired is stateless
)
@given(events=_events)
def test_any_event_order_gives_a_paired_conversation(
    events: list[tuple[str, str]], check_paired: Check
) -> None:
    stats = Stats()
    conv = Conversation(stats, id_prefix="t", key="k")
    for n, (kind, value) in enumerate(events):
        if kind in ("user", "assistant"):
            conv.message(kind, value, id=f"m{n}")  # type: ignore[arg-type]
        elif kind == "call":
            conv.tool_call(ToolCall(value, "f"), id=f"m{n}")
        else:
            conv.tool_output(value, f"out {value}", id=conv.result_id(value))
    messages = conv.build()
    check_paired(messages)
    calls = {v for k, v in events if k == "call"}
    outputs = {v for k, v in events if k == "output"}
    assert stats.skipped.get("orphan_tool_output", 0) == sum(
        1 for k, v in events if k == "output" and v not in calls
    )
    assert stats.repaired.get("placeholder_result", 0) == len(calls - outputs)
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    assert answered == calls
