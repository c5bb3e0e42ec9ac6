"""``memory://`` keeps what the other backends would give back, without a second copy of the text.

The contract suite runs on it like on every backend; these pin what is its own: a message with no
metadata is kept as a frozen copy sharing the appended strings (every load hands out that copy,
whose ``extra`` is read-only), one with metadata as JSON decoded at each load, and what a load
gives is what the SQLite store gives for the same messages.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from session_migrator import ContentPart, InvalidMessageError, Message, StoreError, ToolCall
from session_migrator.store import open_store

TEXT = st.text(max_size=40) | st.sampled_from(["", "lone \ud800 surrogate", "東京 \x00 \u2028"])
NAMES = st.none() | st.sampled_from(["", "ann", "t"])


@st.composite
def messages(draw: st.DrawFn) -> list[Message]:
    out: list[Message] = []
    for k in range(draw(st.integers(min_value=1, max_value=6))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "tool", "parts", "extra"]))
        text, name, mid = draw(TEXT), draw(NAMES), f"m{k}"
        if kind == "calls":
            calls = tuple(
                ToolCall(f"c{k}{j}", draw(TEXT), draw(TEXT))
                for j in range(draw(st.integers(min_value=1, max_value=2)))
            )
            out.append(Message("assistant", text, name=name, tool_calls=calls, id=mid))
        elif kind == "tool":
            out.append(Message("tool", text, name=name, tool_call_id=draw(TEXT) or "c", id=mid))
        elif kind == "parts":
            part = ContentPart("text", text, draw(st.sampled_from([{}, {"type": "text"}])))
            out.append(Message("user", (part,), name=name, id=mid))
        elif kind == "extra":
            extra = {"k": draw(TEXT), "nested": {"n": [1, 2.5, None]}}
            out.append(Message("assistant", text, name=name, id=mid, extra=extra))
        else:
            out.append(Message(kind, text, name=name, id=mid))
    return out


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(messages())
def test_memory_gives_back_what_sqlite_gives_back(tmp_path: Path, appended: list[Message]) -> None:
    memory = open_store("memory://")
    with open_store(f"sqlite:///{tmp_path / 'parity.db'}") as sqlite:
        sqlite.delete_session("s")
        memory.append("s", appended)
        sqlite.append("s", appended)
        from_sqlite = sqlite.load("s")
    from_memory = memory.load("s")
    assert from_memory == from_sqlite == appended
    for a, b in zip(from_memory, from_sqlite, strict=True):
        assert a.fingerprint() == b.fingerprint()
        assert dict(a.extra) == dict(b.extra)
        assert a.to_openai() == b.to_openai()


def test_a_message_without_metadata_is_kept_once_and_read_only() -> None:
    store = open_store("memory://")
    text = "a long answer " * 1000
    call = ToolCall("c1", "search", '{"q": "x"}')
    plain = [
        Message("user", text, id="u1"),
        Message("assistant", "", tool_calls=(call,), id="a1"),
        Message("tool", text, tool_call_id="c1", name="search", id="t1"),
    ]
    store.append("s", plain)
    first, second = store.load("s"), store.load("s")
    assert first == plain
    for got, again, appended in zip(first, second, plain, strict=True):
        assert got is again  # handed out, not decoded again
        assert got.content is appended.content  # the appended text, not a copy of it
        with pytest.raises(TypeError):
            got.extra["k"] = "v"  # type: ignore[index]
    plain[0].extra["k"] = "v"  # type: ignore[index]  # the caller's object: not the store's
    assert store.load("s")[0].extra == {}


def test_a_message_with_metadata_is_decoded_at_each_load() -> None:
    store = open_store("memory://")
    rich = [
        Message("assistant", "x", id="a", extra={"usage": {"in": 1}}),
        Message("user", (ContentPart("text", "hi", {"type": "text", "text": "hi"}),), id="p"),
    ]
    store.append("s", rich)
    first = store.load("s")
    assert first == rich
    first[0].extra["usage"]["in"] = 99  # type: ignore[index]
    first[1].content[0].data["text"] = "changed"  # type: ignore[index, union-attr]
    again = store.load("s")
    assert again == rich
    assert again[0] is not first[0]
    assert again[0].extra == {"usage": {"in": 1}}


def test_it_refuses_what_the_other_backends_refuse() -> None:
    store = open_store("memory://")
    with pytest.raises(InvalidMessageError, match="arguments must be a JSON string"):
        ToolCall("c1", "search", object())  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="JSON"):
        store.append("s", [Message("assistant", "hi", id="a", extra={"x": object()})])
    assert store.load("s") == []


def test_the_store_holds_no_second_copy_of_the_text() -> None:
    conversation = [
        Message("user" if i % 2 == 0 else "assistant", f"message {i}: " + "word " * 400, id=f"m{i}")
        for i in range(500)
    ]
    text = sum(len(m.text) for m in conversation)
    store = open_store("memory://")
    tracemalloc.start()
    try:
        store.append("s", conversation)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert store.load("s") == conversation
    # a copy per message (about 300 bytes) and the store's own records; JSON would be 1x more
    assert held < 0.25 * text
