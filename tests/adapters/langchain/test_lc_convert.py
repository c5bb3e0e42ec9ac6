"""BaseMessage <-> core Message: lossless round trips (property-based), no mutation, storage."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_session_migrator import (
    message_from_core,
    message_to_core,
    messages_from_core,
    messages_to_core,
)
from langchain_session_migrator._convert import LANGCHAIN_KEY, storable
from session_migrator import ContentPart, InvalidMessageError, Message, ToolCall
from session_migrator.messages._messages import MARKER_KEY
from session_migrator.store import open_store

# -- strategies ----------------------------------------------------------------------------------

keys = st.text(min_size=1, max_size=6)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(keys, children, max_size=3),
    max_leaves=8,
)
json_dicts = st.dictionaries(keys, json_values, max_size=3)
ids = st.none() | st.text(min_size=1, max_size=16)
names = st.none() | st.text(max_size=8)
blocks = st.one_of(
    st.text(max_size=20),
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=20)),
    st.builds(
        lambda url, detail: {"type": "image_url", "image_url": {"url": url, "detail": detail}},
        st.text(max_size=10),
        st.sampled_from(["low", "high", "auto"]),
    ),
    st.builds(
        lambda data: {"type": "image", "base64": data, "mime_type": "image/png"},
        st.text(max_size=10),
    ),
    st.builds(lambda extra: {"type": "reasoning", **extra}, json_dicts),
    json_dicts,  # anything a provider may put in a list, even without a type
)
contents = st.text(max_size=40) | st.lists(blocks, max_size=4)
tool_calls = st.lists(
    st.builds(
        lambda name, args, call_id: {"name": name, "args": args, "id": call_id},
        st.text(min_size=1, max_size=8),
        json_dicts,
        st.none() | st.text(min_size=1, max_size=8),
    ),
    max_size=3,
)
invalid_calls = st.lists(
    st.builds(
        lambda name, args, call_id, error: {
            "type": "invalid_tool_call",
            "name": name,
            "args": args,
            "id": call_id,
            "error": error,
        },
        st.none() | st.text(max_size=5),
        st.none() | st.text(max_size=10),
        st.none() | st.text(max_size=5),
        st.none() | st.text(max_size=10),
    ),
    max_size=2,
)
usage = st.none() | st.builds(
    lambda i, o: {"input_tokens": i, "output_tokens": o, "total_tokens": i + o},
    st.integers(0, 10**6),
    st.integers(0, 10**6),
)


def _common(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None or k == "id"}


system_messages = st.builds(
    lambda c, i, n, ak, rm: SystemMessage(
        c, **_common(id=i, name=n, additional_kwargs=ak, response_metadata=rm)
    ),
    contents,
    ids,
    names,
    json_dicts,
    json_dicts,
)
human_messages = st.builds(
    lambda c, i, n, ak: HumanMessage(c, **_common(id=i, name=n, additional_kwargs=ak)),
    contents,
    ids,
    names,
    json_dicts,
)
ai_messages = st.builds(
    lambda c, i, n, ak, rm, tc, itc, u: AIMessage(
        c,
        **_common(
            id=i,
            name=n,
            additional_kwargs=ak,
            response_metadata=rm,
            tool_calls=tc,
            invalid_tool_calls=itc,
            usage_metadata=u,
        ),
    ),
    contents,
    ids,
    names,
    json_dicts,
    json_dicts,
    tool_calls,
    invalid_calls,
    usage,
)
ai_chunks = st.builds(
    lambda c, i, u: AIMessageChunk(content=c, **_common(id=i, usage_metadata=u)),
    contents,
    ids,
    usage,
)
tool_messages = st.builds(
    lambda c, i, tid, status, artifact, ak: ToolMessage(
        c,
        tool_call_id=tid,
        status=status,
        **_common(id=i, artifact=artifact, additional_kwargs=ak),
    ),
    contents,
    ids,
    st.text(min_size=1, max_size=8),
    st.sampled_from(["success", "error"]),
    json_values,
    json_dicts,
)
chat_messages = st.builds(
    lambda c, role, i: ChatMessage(c, role=role, **_common(id=i)),
    contents,
    st.sampled_from(["user", "assistant", "system", "developer", "critic"]),
    ids,
)
lc_messages = st.one_of(
    system_messages, human_messages, ai_messages, ai_chunks, tool_messages, chat_messages
)


# -- properties ----------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(lc_messages)
def test_round_trip_is_lossless(message: BaseMessage) -> None:
    back = message_from_core(message_to_core(message))
    assert type(back) is type(message)
    assert back == message
    assert back.id == message.id


@settings(max_examples=150, deadline=None)
@given(st.lists(lc_messages, max_size=6))
def test_list_round_trip_with_stable_derived_ids(messages: list[BaseMessage]) -> None:
    first = messages_to_core(messages)
    again = messages_to_core(messages)
    assert [m.id for m in first] == [m.id for m in again]
    assert messages_from_core(first) == messages


@settings(max_examples=150, deadline=None)
@given(lc_messages)
def test_conversion_never_mutates_or_shares(message: BaseMessage) -> None:
    snapshot = copy.deepcopy(message)
    core = message_to_core(message)
    assert message == snapshot
    residue = core.extra.get(LANGCHAIN_KEY, {})
    for value in residue.values():  # scribbling on the core copy leaves the original alone
        if isinstance(value, dict):
            value["scribble"] = 1
        elif isinstance(value, list):
            value.append("scribble")
    assert message == snapshot
    core = message_to_core(message)
    back = message_from_core(core)
    if isinstance(back.content, list):
        back.content.append("scribble")
    back.additional_kwargs["scribble"] = 1
    assert message_from_core(core) == message


@settings(max_examples=100, deadline=None)
@given(lc_messages.filter(lambda m: m.id is not None))
def test_round_trip_through_a_store(message: BaseMessage) -> None:
    core = storable(message_to_core(message))
    assert storable(core) is core  # JSON values pass through untouched
    with open_store("memory://") as store:
        store.append("s", [core])
        (loaded,) = store.load("s")
    assert message_from_core(loaded) == message


# -- specific cases ------------------------------------------------------------------------------


def test_roles_and_fields_map_to_the_neutral_view() -> None:
    ai = AIMessage(
        "",
        tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}],
        id="a1",
        name="bot",
    )
    core = message_to_core(ai)
    assert (core.role, core.name, core.id) == ("assistant", "bot", "a1")
    assert core.tool_calls == (ToolCall("c1", "get_weather", '{"city": "Paris"}'),)
    assert core.extra == {}  # nothing the neutral view cannot say
    tool = message_to_core(ToolMessage("18C", tool_call_id="c1", id="t1"))
    assert (tool.role, tool.tool_call_id) == ("tool", "c1")
    image = message_to_core(
        HumanMessage([{"type": "image_url", "image_url": {"url": "https://x/y.png"}}, "look"])
    )
    assert isinstance(image.content, tuple)
    assert [p.type for p in image.content] == ["image", "text"]
    assert message_to_core(ChatMessage("x", role="developer")).role == "system"


def test_missing_id_is_remembered_unless_assigned() -> None:
    human = HumanMessage("hi")
    assert message_from_core(message_to_core(human)).id is None
    assigned = message_to_core(human, id="fixed")
    assert assigned.id == "fixed"
    assert message_from_core(assigned).id == "fixed"
    assert [m.id for m in messages_from_core(messages_to_core([human], assign_ids=True))] != [None]


def test_truncated_core_content_wins_and_langchain_fields_survive() -> None:
    tool = ToolMessage("x" * 500, tool_call_id="c1", id="t1", artifact={"rows": 3}, status="error")
    cut = message_to_core(tool).replace(content="xx [...] xx")
    back = message_from_core(cut)
    assert isinstance(back, ToolMessage)
    assert back.content == "xx [...] xx"
    assert (back.artifact, back.status, back.tool_call_id) == ({"rows": 3}, "error", "c1")


def test_stored_tool_calls_are_used_only_while_they_match_the_core_calls() -> None:
    # an empty-string id is not what the neutral view rebuilds (it gives None)
    ai = AIMessage("", tool_calls=[{"name": "f", "args": {"a": 1}, "id": ""}], id="a1")
    core = message_to_core(ai)
    assert "tool_calls" in core.extra[LANGCHAIN_KEY]
    assert message_from_core(core) == ai
    changed = core.replace(tool_calls=(ToolCall("", "f", '{"a": 2}'),))
    rebuilt = message_from_core(changed)
    assert isinstance(rebuilt, AIMessage)
    assert rebuilt.tool_calls[0]["args"] == {"a": 2}


def test_library_messages_become_marked_system_messages_and_back() -> None:
    note = Message(
        "system", "[summary]", id="sm-1", extra={MARKER_KEY: {"kind": "summary", "covered": 4}}
    )
    back = message_from_core(note)
    assert isinstance(back, SystemMessage)
    assert back.response_metadata[MARKER_KEY] == {"kind": "summary", "covered": 4}
    assert message_to_core(back) == note


def test_foreign_extra_goes_into_additional_kwargs() -> None:
    from_openai = Message.from_openai({"role": "assistant", "content": "hi", "refusal": None})
    back = message_from_core(from_openai)
    assert back.additional_kwargs == {"refusal": None}
    parts = Message("user", (ContentPart("text", "a", {"type": "text", "text": "a"}),), id="u")
    assert message_from_core(parts).content == [{"type": "text", "text": "a"}]


def test_non_json_values_are_stored_as_their_json_form() -> None:
    class Blob:
        def __repr__(self) -> str:
            return "Blob()"

    tool = ToolMessage("ok", tool_call_id="c", id="t", artifact={"blob": Blob(), 1: b"\x00"})
    core = message_to_core(tool)
    stored = storable(core)
    assert stored is not core
    assert stored.extra[LANGCHAIN_KEY]["artifact"] == {"blob": "Blob()", "1": "AA=="}
    with open_store("memory://") as store:
        store.append("s", [stored])
        assert message_from_core(store.load("s")[0]).artifact == {"blob": "Blob()", "1": "AA=="}


@pytest.mark.parametrize(
    "message",
    [FunctionMessage("x", name="f"), RemoveMessage(id="x")],
    ids=["function", "remove"],
)
def test_unsupported_types_are_rejected_with_the_fix(message: BaseMessage) -> None:
    with pytest.raises(InvalidMessageError, match="use SystemMessage"):
        message_to_core(message)
