"""Messages: the OpenAI chat format both ways, lossless, and errors that name index and field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from session_migrator import (
    ContentPart,
    InvalidMessageError,
    Message,
    Session,
    ToolCall,
    messages_from_openai,
    messages_to_openai,
)
from session_migrator.messages._messages import MARKER_KEY, as_messages
from session_migrator.store import open_store

ROUND_TRIPS: dict[str, dict[str, Any]] = {
    "plain user": {"role": "user", "content": "Hello", "id": "m1"},
    "named user": {"role": "user", "content": "Hi", "name": "alice", "id": "m2"},
    "system": {"role": "system", "content": "Be brief.", "id": "m3"},
    "developer": {"role": "developer", "content": "Answer in French.", "id": "m4"},
    "assistant": {"role": "assistant", "content": "Sure.", "id": "m5"},
    "assistant with null content and calls": {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": "{}"}},
        ],
        "id": "m6",
    },
    "assistant with text and a call": {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
        "id": "m7",
    },
    "tool result": {"role": "tool", "content": "18°C", "tool_call_id": "call_1", "id": "m8"},
    "content parts": {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "low"}},
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
            {"type": "file", "file": {"file_id": "f-1"}},
        ],
        "id": "m9",
    },
    "unknown keys kept": {
        "role": "assistant",
        "content": "ok",
        "refusal": None,
        "annotations": [{"type": "url_citation"}],
        "audio": {"id": "a1"},
        "id": "m10",
    },
    "empty string content": {"role": "assistant", "content": "", "id": "m11"},
}


@pytest.mark.parametrize("data", list(ROUND_TRIPS.values()), ids=list(ROUND_TRIPS))
def test_openai_round_trip_is_lossless(data: dict[str, Any]) -> None:
    message = Message.from_openai(data)
    assert message.to_openai() == data
    again = Message.from_openai(message.to_openai())
    assert again == message
    assert again.fingerprint() == message.fingerprint()


def test_a_whole_conversation_round_trips() -> None:
    data = list(ROUND_TRIPS.values())
    messages = messages_from_openai(data)
    assert [m.id for m in messages] == [d["id"] for d in data]
    assert messages_to_openai(messages) == data
    assert json.loads(json.dumps(messages_to_openai(messages))) == data


def test_fields_are_read_into_the_neutral_message() -> None:
    assistant = Message.from_openai(ROUND_TRIPS["assistant with null content and calls"])
    assert assistant.role == "assistant"
    assert assistant.content == ""
    assert assistant.tool_calls == (
        ToolCall("call_1", "get_weather", '{"city": "Paris"}'),
        ToolCall("call_2", "now", "{}"),
    )
    developer = Message.from_openai(ROUND_TRIPS["developer"])
    assert developer.role == "system"
    parts = Message.from_openai(ROUND_TRIPS["content parts"])
    assert isinstance(parts.content, tuple)
    assert [p.type for p in parts.content] == ["text", "image", "input_audio", "file"]
    assert parts.text == "What is in this picture?"
    tool = Message.from_openai(ROUND_TRIPS["tool result"])
    assert tool.tool_call_id == "call_1"
    unknown = Message.from_openai(ROUND_TRIPS["unknown keys kept"])
    assert unknown.extra == {
        "refusal": None,
        "annotations": [{"type": "url_citation"}],
        "audio": {"id": "a1"},
    }


def test_arguments_given_as_an_object_are_encoded_as_json() -> None:
    data = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {"q": "Zürich"}}}],
    }
    message = Message.from_openai(data)
    assert message.tool_calls[0].arguments == '{"q": "Zürich"}'


def test_derived_ids_are_stable_and_distinct() -> None:
    data = [{"role": "user", "content": "same"}, {"role": "user", "content": "same"}]
    first = messages_from_openai(data)
    second = messages_from_openai(data)
    assert [m.id for m in first] == [m.id for m in second]
    assert first[0].id != first[1].id
    assert first[0].id.startswith("m000000-")
    assert first[1].id.startswith("m000001-")


def test_include_id_false_leaves_out_the_id_and_the_library_marker() -> None:
    message = Message(
        "system", "summary", id="sm-1", extra={MARKER_KEY: {"kind": "summary"}, "x": 1}
    )
    assert message.to_openai(include_id=False) == {"role": "system", "content": "summary", "x": 1}
    assert message.to_openai()[MARKER_KEY] == {"kind": "summary"}
    assert message.to_openai()["id"] == "sm-1"


def test_an_object_with_a_messages_list_is_accepted() -> None:
    messages = messages_from_openai({"messages": [{"role": "user", "content": "hi"}]})
    assert [m.text for m in messages] == ["hi"]


def test_a_plain_string_part_is_read_as_a_text_part() -> None:
    message = Message.from_openai(
        {"role": "user", "content": ["hello", {"type": "text", "text": "x"}]}
    )
    assert message.text == "hello\nx"
    assert message.to_openai(include_id=False)["content"][0] == {"type": "text", "text": "hello"}


MALFORMED: dict[str, tuple[Any, int | None, str | None]] = {
    "not an object": ("hello", 1, None),
    "missing role": ({"content": "x"}, 1, "role"),
    "unknown role": ({"role": "robot", "content": "x"}, 1, "role"),
    "legacy function role": ({"role": "function", "content": "x", "name": "f"}, 1, "role"),
    "null content on a user message": ({"role": "user", "content": None}, 1, "content"),
    "content of the wrong type": ({"role": "user", "content": 42}, 1, "content"),
    "a part that is not an object": ({"role": "user", "content": [7]}, 1, "content"),
    "a part without a type": ({"role": "user", "content": [{"text": "x"}]}, 1, "content"),
    "a text part without text": ({"role": "user", "content": [{"type": "text"}]}, 1, "content"),
    "name not a string": ({"role": "user", "content": "x", "name": 3}, 1, "name"),
    "tool_calls not a list": ({"role": "assistant", "tool_calls": {"id": "c"}}, 1, "tool_calls"),
    "a tool call without an id": (
        {"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]},
        1,
        "tool_calls",
    ),
    "a tool call without a function": (
        {"role": "assistant", "tool_calls": [{"id": "c"}]},
        1,
        "tool_calls",
    ),
    "a function name that is not a string": (
        {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": None}}]},
        1,
        "tool_calls",
    ),
    "tool_calls on a user message": (
        {"role": "user", "content": "x", "tool_calls": [{"id": "c", "function": {"name": "f"}}]},
        1,
        "tool_calls",
    ),
    "a tool message without tool_call_id": ({"role": "tool", "content": "x"}, 1, "tool_call_id"),
    "tool_call_id not a string": (
        {"role": "tool", "content": "x", "tool_call_id": 5},
        1,
        "tool_call_id",
    ),
    "id not a string": ({"role": "user", "content": "x", "id": 12}, 1, "id"),
}


@pytest.mark.parametrize(("bad", "index", "field"), list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_input_names_index_and_field(bad: Any, index: int, field: str | None) -> None:
    data = [{"role": "user", "content": "fine"}, bad]
    with pytest.raises(InvalidMessageError) as caught:
        messages_from_openai(data)
    error = caught.value
    assert error.index == index
    assert error.field == field
    where = f"message {index}" + (f", field {field!r}" if field else "")
    assert str(error).startswith(where + ": ")
    assert error.reason
    assert error.reason in str(error)


@pytest.mark.parametrize("bad", ["not a list", 3, None, {"no": "messages"}])
def test_a_top_level_that_is_not_a_list_is_rejected(bad: Any) -> None:
    with pytest.raises(InvalidMessageError, match="expected a JSON list of messages"):
        messages_from_openai(bad)


def test_the_constructor_enforces_the_invariants() -> None:
    with pytest.raises(InvalidMessageError, match="role must be one of"):
        Message("robot", "x")  # type: ignore[arg-type]
    with pytest.raises(InvalidMessageError, match="tool_call_id"):
        Message("tool", "x")
    with pytest.raises(InvalidMessageError, match="only assistant messages carry tool_calls"):
        Message("user", "x", tool_calls=(ToolCall("c", "f"),))


def test_lists_become_tuples_so_messages_stay_immutable_and_hashable() -> None:
    message = Message(
        "assistant",
        [ContentPart("text", "a")],  # type: ignore[arg-type]
        tool_calls=[ToolCall("c", "f")],  # type: ignore[arg-type]
    )
    assert isinstance(message.content, tuple)
    assert isinstance(message.tool_calls, tuple)
    assert hash(message) == hash(message)
    session = Session("s", messages=[message])  # type: ignore[arg-type]
    assert session.messages == (message,)


def test_fingerprint_follows_what_is_counted_not_the_id() -> None:
    a = Message("user", "same text", id="a")
    b = Message("user", "same text", id="b", extra={"k": 1})
    c = Message("user", "other text", id="a")
    assert a.fingerprint() == b.fingerprint()
    assert a.fingerprint() != c.fingerprint()
    assert a.fingerprint() != Message("assistant", "same text").fingerprint()
    assert a.fingerprint() != Message("user", "same text", name="x").fingerprint()


def test_replace_keeps_the_id_and_leaves_the_original_alone() -> None:
    original = Message("user", "before", id="m1")
    changed = original.replace(content="after")
    assert changed.id == "m1"
    assert changed.text == "after"
    assert original.text == "before"


def test_as_messages_rejects_dicts_with_a_hint() -> None:
    with pytest.raises(InvalidMessageError, match="messages_from_openai") as caught:
        as_messages([Message("user", "ok"), {"role": "user", "content": "x"}])  # type: ignore[list-item]
    assert caught.value.index == 1
    session = Session("s", messages=(Message("user", "hi"),))
    assert as_messages(session) is session.messages


def _openai(*contents: str) -> list[Message]:
    return messages_from_openai(
        [
            {"role": "user" if k % 2 == 0 else "assistant", "content": c}
            for k, c in enumerate(contents)
        ]
    )


def test_storage_ids_replace_derived_ids_only() -> None:
    from session_migrator.messages._ids import is_derived
    from session_migrator.messages._storage_ids import storage_ids

    batch = [*_openai("ok", "ok"), Message("user", "ok", id="client-7")]
    fresh = [m.id for m in storage_ids(batch)]
    assert fresh[2] == "client-7"  # the caller's id is kept
    assert len(set(fresh)) == 3
    assert not any(is_derived(i) for i in fresh)
    assert [m.id for m in storage_ids(batch)][:2] != fresh[:2]  # new ones every time
    keyed = [m.id for m in storage_ids(batch, "k")]
    assert [m.id for m in storage_ids(batch, "k")] == keyed  # the same batch, the same key
    assert keyed[0] != keyed[1]
    assert [m.id for m in storage_ids(batch, "other")][:2] != keyed[:2]
    assert [m.id for m in storage_ids(_openai("stop"), "k")] != keyed[:1]


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: Message("user", 5), "content"),  # type: ignore[arg-type]
        (lambda: Message("user", {"a": 1}), "content"),  # type: ignore[arg-type]
        (lambda: Message("user", ["plain string part"]), "content"),  # type: ignore[list-item]
        (lambda: Message("user", "hi", name=5), "name"),  # type: ignore[arg-type]
        (lambda: Message("user", "hi", id=5), "id"),  # type: ignore[arg-type]
        (lambda: Message("assistant", "", tool_calls=[{"id": "c1"}]), "tool_calls"),  # type: ignore[list-item]
        (lambda: Message("tool", "ok", tool_call_id=7), "tool_call_id"),  # type: ignore[arg-type]
        (lambda: ToolCall("c1", "f", 3), "tool_calls.arguments"),  # type: ignore[arg-type]
        (lambda: ToolCall(1, "f"), "tool_calls.id"),  # type: ignore[arg-type]
    ],
)
def test_a_badly_typed_message_is_refused_when_it_is_made(build: Any, field: str) -> None:
    # (stored, it could not be read back: every later fit of the session would fail)
    with pytest.raises(InvalidMessageError) as info:
        build()
    assert info.value.field == field


def test_tool_call_arguments_given_as_a_dict_are_kept_as_json() -> None:
    call = ToolCall("c1", "search", {"q": "Zürich", "n": 2})  # type: ignore[arg-type]
    assert call.arguments == '{"q": "Zürich", "n": 2}'
    fitter_store = open_store("memory://")
    fitter_store.append("s", [Message("assistant", "", tool_calls=(call,), id="a")])
    assert fitter_store.load("s")[0].tool_calls == (call,)


@pytest.mark.parametrize(
    "message",
    [
        {  # Gemini (OpenAI-compatible): a thought signature that must go back with the call
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": "{}"},
                    "extra_content": {"google": {"thought_signature": "SIG=="}},
                }
            ],
        },
        {  # a custom tool call (free-form input)
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c2", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}}
            ],
        },
        {"role": "assistant", "content": None, "refusal": "I can't help with that."},
    ],
    ids=["extra-keys-on-a-call", "custom-tool-call", "null-content-with-refusal"],
)
def test_odd_but_valid_openai_messages_round_trip_through_the_store(
    message: dict[str, Any],
) -> None:
    parsed = messages_from_openai([message])
    store = open_store("memory://")
    store.append("s", parsed)
    back = messages_to_openai(store.load("s"), include_id=False)
    assert back == [message]
