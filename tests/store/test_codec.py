"""The one codec all backends share: ids to keys and messages to JSON, both one-to-one."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from session_migrator import ContentPart, Message, ToolCall
from session_migrator.messages._messages import Role
from session_migrator.store import _codec
from session_migrator.store._offload import offload

any_text = st.text(st.characters(codec=None, categories=None), max_size=40)  # incl. surrogates


@given(any_text)
def test_keys_round_trip_and_are_valid_utf8_without_nul(value: str) -> None:
    key = _codec.encode_key(value)
    assert _codec.decode_key(key) == value
    assert "\x00" not in key
    key.encode("utf-8")  # no lone surrogate left


@given(any_text, any_text)
def test_keys_are_one_to_one(a: str, b: str) -> None:
    assert (_codec.encode_key(a) == _codec.encode_key(b)) == (a == b)


def test_plain_ids_are_stored_as_they_are() -> None:
    assert _codec.encode_key("session-1/../é 東京 'quoted'") == "session-1/../é 東京 'quoted'"
    assert _codec.encode_key("a\\0b\x00") == "a\\\\0b\\0"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | any_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    role: Role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    content: str | tuple[ContentPart, ...]
    if draw(st.booleans()):
        content = draw(any_text)
    else:
        content = tuple(
            ContentPart(
                draw(any_text),
                draw(st.none() | any_text),
                draw(st.dictionaries(any_text, json_values, max_size=2)),
            )
            for _ in range(draw(st.integers(0, 3)))
        )
    calls: tuple[ToolCall, ...] = ()
    if role == "assistant":
        calls = tuple(
            ToolCall(draw(any_text), draw(any_text), draw(any_text))
            for _ in range(draw(st.integers(0, 2)))
        )
    return Message(
        role,
        content,
        name=draw(st.none() | any_text),
        tool_calls=calls,
        tool_call_id=draw(any_text.filter(bool)) if role == "tool" else None,
        id=draw(any_text.filter(bool)),
        extra=draw(st.dictionaries(any_text, json_values, max_size=3)),
    )


@settings(max_examples=200)
@given(messages())
def test_messages_round_trip(message: Message) -> None:
    text = _codec.message_to_json(message)
    text.encode("utf-8")
    back = _codec.message_from_json(text)
    assert back == message
    assert json.loads(text)["v"] == 1


def test_offload_keeps_head_and_tail() -> None:
    text = "A" * 5000 + "MIDDLE" + "Z" * 5000
    message = Message("tool", text, tool_call_id="c", id="t")
    preview = offload(message, threshold=100)
    assert preview is not None
    assert preview.text.startswith("A" * 600)
    assert preview.text.endswith("Z" * 400)
    assert "MIDDLE" not in preview.text
    assert offload(message, threshold=10**9) is None
    assert offload(Message("tool", "short", tool_call_id="c"), threshold=0) is None
    assert offload(Message("user", text), threshold=0) is None
