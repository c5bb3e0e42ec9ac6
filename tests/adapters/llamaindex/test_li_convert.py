"""ChatMessage <-> core Message: lossless both ways, through the store codec too."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.base.llms.types import (
    AudioBlock,
    CacheControl,
    CachePoint,
    ChatMessage,
    DocumentBlock,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)

from llamaindex_session_migrator import (
    LLAMAINDEX_KEY,
    from_chat_message,
    from_chat_messages,
    to_chat_message,
    to_chat_messages,
)
from session_migrator import Message, ToolCall, messages_from_openai
from session_migrator.messages._rules import is_valid_chat
from session_migrator.store._codec import message_from_json, message_to_json

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))

text = st.text(max_size=40)
ident = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12)
json_scalar = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=10)
json_value = st.recursive(
    json_scalar,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)

text_block = st.builds(TextBlock, text=text)
image_block = st.one_of(
    st.builds(
        lambda d: ImageBlock(image=PNG, detail=d), st.none() | st.sampled_from(["low", "high"])
    ),
    st.builds(
        lambda name, d: ImageBlock(url=f"https://example.com/{name}.png", detail=d),
        ident,
        st.none() | st.just("auto"),
    ),
)
thinking_block = st.builds(
    ThinkingBlock,
    content=st.none() | text,
    num_tokens=st.none() | st.integers(0, 500),
    additional_information=st.dictionaries(
        st.sampled_from(["signature", "id"]), st.text(max_size=8)
    ),
)
tool_call_block = st.builds(
    ToolCallBlock,
    tool_call_id=st.none() | ident,
    tool_name=ident,
    tool_kwargs=st.dictionaries(st.text(max_size=6), json_value, max_size=3) | st.text(max_size=20),
)
other_block = st.sampled_from(
    [
        AudioBlock(audio=b"\x00\x01\xff", format="wav"),
        DocumentBlock(data=b"%PDF-1.4 hi", title="t"),
        CachePoint(cache_control=CacheControl(type="ephemeral")),
    ]
)
any_block = st.one_of(text_block, image_block, thinking_block, tool_call_block, other_block)
openai_call = st.builds(
    lambda i, n, a: {"id": i, "type": "function", "function": {"name": n, "arguments": a}},
    ident,
    ident,
    st.just("{}") | st.builds(json.dumps, st.dictionaries(st.text(max_size=5), json_scalar)),
)
kwargs = st.fixed_dictionaries(
    {},
    optional={
        "name": ident,
        "tool_call_id": ident,
        "tool_calls": st.lists(openai_call, max_size=2),
        "logprobs": json_value,
        "thinking_delta": st.none() | text,
    },
)


@st.composite
def chat_messages(draw: st.DrawFn) -> ChatMessage:
    role = draw(st.sampled_from(list(MessageRole)))
    blocks = draw(st.lists(any_block, max_size=4) | st.builds(lambda t: [TextBlock(text=t)], text))
    return ChatMessage(role=role, blocks=blocks, additional_kwargs=draw(kwargs))


@settings(max_examples=300, deadline=None)
@given(chat_messages())
def test_chat_message_round_trip_is_lossless(message: ChatMessage) -> None:
    core = from_chat_message(message, id="m1")
    assert core.id == "m1"
    assert to_chat_message(core) == message


@settings(max_examples=200, deadline=None)
@given(chat_messages())
def test_round_trip_through_the_store_codec(message: ChatMessage) -> None:
    core = from_chat_message(message, id="m1")
    stored = message_from_json(message_to_json(core))
    assert stored == core
    assert to_chat_message(stored) == message


@settings(max_examples=200, deadline=None)
@given(chat_messages())
def test_core_to_chat_to_core_keeps_every_field(message: ChatMessage) -> None:
    core = from_chat_message(message, id="m1")
    again = from_chat_message(to_chat_message(core), id="m1")
    assert again == core


def test_text_message_maps_to_plain_fields() -> None:
    core = from_chat_message(
        ChatMessage(role="user", content="hi", additional_kwargs={"name": "ann"})
    )
    assert (core.role, core.content, core.name, dict(core.extra)) == ("user", "hi", "ann", {})


def test_tool_call_block_becomes_a_core_tool_call() -> None:
    call = ToolCallBlock(tool_call_id="c1", tool_name="get_weather", tool_kwargs={"city": "Oslo"})
    core = from_chat_message(ChatMessage(role="assistant", blocks=[call]))
    assert core.tool_calls == (ToolCall("c1", "get_weather", '{"city": "Oslo"}'),)
    assert core.content == ""
    result = from_chat_message(
        ChatMessage(role="tool", content="cold", additional_kwargs={"tool_call_id": "c1"})
    )
    assert (result.role, result.tool_call_id, result.text) == ("tool", "c1", "cold")
    assert is_valid_chat([Message("user", "weather?"), core, result])


def test_openai_style_tool_calls_in_additional_kwargs() -> None:
    raw = [{"id": "c9", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]
    message = ChatMessage(role="assistant", content=None, additional_kwargs={"tool_calls": raw})
    core = from_chat_message(message)
    assert core.tool_calls == (ToolCall("c9", "f", '{"a": 1}'),)
    back = to_chat_message(core)
    assert back == message
    assert back.additional_kwargs["tool_calls"] == raw


def test_pydantic_objects_in_kwargs_come_back_as_json() -> None:
    message = ChatMessage(
        role="assistant", content="x", additional_kwargs={"block": TextBlock(text="t")}
    )
    back = to_chat_message(from_chat_message(message))
    assert back.additional_kwargs["block"] == {"block_type": "text", "text": "t"}


def test_blocks_become_neutral_parts() -> None:
    message = ChatMessage(
        role="user",
        blocks=[
            TextBlock(text="look"),
            ImageBlock(image=PNG, detail="low"),
            ThinkingBlock(content="hm"),
        ],
    )
    core = from_chat_message(message)
    assert isinstance(core.content, tuple)
    kinds = [p.type for p in core.content]
    assert kinds == ["text", "image", "thinking"]
    image = core.content[1].data
    assert image["type"] == "image_url"
    assert image["image_url"]["url"].startswith("data:image/png;base64,")
    assert image["image_url"]["detail"] == "low"
    assert core.content[2].data == {"type": "thinking", "thinking": "hm"}
    # the inline image bytes are kept once, in the part (not again in the layout)
    assert "iVBOR" not in json.dumps(core.extra[LLAMAINDEX_KEY])


def test_roles_without_a_core_equivalent_are_kept() -> None:
    for role, core_role in [
        ("developer", "system"),
        ("chatbot", "assistant"),
        ("model", "assistant"),
    ]:
        message = ChatMessage(role=role, content="x")
        core = from_chat_message(message)
        assert core.role == core_role
        assert to_chat_message(core).role == MessageRole(role)
    function = from_chat_message(
        ChatMessage(role="function", content="42", additional_kwargs={"name": "f"})
    )
    assert (function.role, function.name) == ("tool", "f")
    assert to_chat_message(function).additional_kwargs == {"name": "f"}


def test_foreign_messages_convert_to_the_closest_chat_messages() -> None:
    core = messages_from_openai(
        [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "see"},
                    {"type": "image_url", "image_url": {"url": "https://x.org/a.png"}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"q": 2}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "4"},
            {"role": "assistant", "content": "Four.", "response_metadata": {"x": 1}},
        ]
    )
    chat = to_chat_messages(core)
    assert [m.role.value for m in chat] == ["system", "user", "assistant", "tool", "assistant"]
    assert isinstance(chat[1].blocks[1], ImageBlock)
    assert str(chat[1].blocks[1].url) == "https://x.org/a.png"
    assert chat[2].blocks == [ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs={"q": 2})]
    assert chat[3].additional_kwargs == {"tool_call_id": "c1"}
    # another framework's fields stay out of what is sent to the LLM
    assert chat[4].additional_kwargs == {}
    back = from_chat_messages(chat)
    assert [m.tool_calls for m in back] == [m.tool_calls for m in core]
    assert [m.text for m in back] == [m.text for m in core]


def test_a_changed_neutral_view_wins_over_the_kept_layout() -> None:
    message = ChatMessage(role="user", blocks=[TextBlock(text="a"), ThinkingBlock(content="t")])
    core = from_chat_message(message)
    edited = core.replace(content="edited by another framework")
    assert to_chat_message(edited) == ChatMessage(
        role="user", content="edited by another framework"
    )


@pytest.mark.parametrize(
    "message",
    [
        ChatMessage(),
        ChatMessage(role="assistant", blocks=[]),
        ChatMessage(role="tool", content="orphan"),
        ChatMessage(role="user", blocks=[ToolCallBlock(tool_name="odd")]),
        ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_name="f", tool_kwargs='{"x": 1')]),
    ],
    ids=["empty", "no-blocks", "tool-without-id", "call-on-user", "raw-arguments"],
)
def test_edge_cases_round_trip(message: ChatMessage) -> None:
    core = from_chat_message(message, id="m")
    assert to_chat_message(core) == message
    assert message_from_json(message_to_json(core)) == core


def test_ids_are_new_unless_given() -> None:
    message = ChatMessage(role="user", content="x")
    assert from_chat_message(message).id != from_chat_message(message).id
    assert from_chat_message(message, id="fixed").id == "fixed"
