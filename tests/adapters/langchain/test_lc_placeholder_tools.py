"""The placeholder tools of ``FittedChatMessageHistory.context_tools()`` (issue 44): the model
compresses a range of its own context, lists the placeholders and restores one; the history's
fitted messages honour them, and the store keeps every message."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from langchain_session_migrator import FittedChatMessageHistory
from session_migrator import ModelWindow
from session_migrator.store import open_store

WINDOW = ModelWindow("small", "test", 32_000, 32_000, 0, "o200k_base", "explicit")


def _history() -> FittedChatMessageHistory:
    history = FittedChatMessageHistory("ops", model=WINDOW, store=open_store("memory://"))
    messages = []
    for i in range(3):
        call = {"name": "read_log", "args": {"service": str(i)}, "id": f"c{i}"}
        messages += [
            HumanMessage(f"Check service {i}.", id=f"u{i}"),
            AIMessage("", tool_calls=[call], id=f"a{i}"),
            ToolMessage("heartbeat ok\n" * 50, tool_call_id=f"c{i}", id=f"t{i}"),
            AIMessage(f"Service {i} is fine.", id=f"r{i}"),
        ]
    history.add_messages([*messages, HumanMessage("Any service down?", id="now")])
    return history


def test_context_tools_are_read_context_and_the_placeholder_tools() -> None:
    history = _history()
    tools = history.context_tools()
    assert [t.name for t in tools] == [
        "read_context",
        "compress_context",
        "list_placeholders",
        "restore_context",
    ]
    for t in tools:
        assert len(t.description) < 250
        convert_to_openai_tool(t)  # a provider can be given it
    assert [t.name for t in history.context_tools(placeholders=False)] == ["read_context"]


def test_compress_list_restore_through_the_tools() -> None:
    history = _history()
    _, compress, listed, restore = history.context_tools()
    before = len(history.messages)
    said = str(compress.invoke({"first_id": "u0", "last_id": "a1", "summary": "0 is fine"}))
    assert said.startswith("compressed as p1: 7 message(s), u0..t1: 0 is fine")  # widened to t1
    assert 'restore_context(id="p1")' in said
    sent = history.messages
    assert len(sent) == before - 6
    assert any('restore_context(id="p1")' in str(m.content) for m in sent)
    assert "p1: 7 message(s)" in str(listed.invoke({}))
    assert len(history.full_messages) == before  # nothing deleted
    assert "overlaps placeholder 'p1'" in str(compress.invoke({"first_id": "r0", "last_id": "r1"}))
    assert "no placeholder 'p2' in force" in str(restore.invoke({"id": "p2"}))
    assert str(restore.invoke({"id": "p1"})).startswith("p1 restored")
    assert len(history.messages) == before
    assert str(listed.invoke({})) == "no placeholders in force"
    tool_put = str(compress.invoke({"tool": "read_log", "summary": "all heartbeats"}))
    assert "3 output(s) of read_log" in tool_put
    outputs = [m for m in history.messages if m.type == "tool"]
    assert len(outputs) == 3
    assert all('restore_context(id="p2")' in str(m.content) for m in outputs)
