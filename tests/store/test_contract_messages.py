"""The store contract for messages, run against every backend: append, load, delete."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Sequence

import pytest

from session_migrator import ContentPart, Message, SessionNotFoundError, StoreError, ToolCall
from session_migrator.store import BaseSessionStore, MessageNotFoundError


def _user(i: int | str, text: str | None = None) -> Message:
    return Message("user", text if text is not None else f"question {i}", id=f"u{i}")


def _ids(messages: Sequence[Message]) -> list[str]:
    return [m.id for m in messages]


RICH = [
    Message("system", "You are terse.", id="sys", extra={"openai_role": "developer"}),
    Message(
        "user",
        (
            ContentPart("text", "What is on this picture?", {"type": "text", "text": "What?"}),
            ContentPart(
                "image",
                None,
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ),
            ContentPart("input_audio", None, {"type": "input_audio", "nested": [1, 2.5, None]}),
        ),
        name="ann",
        id="pic",
    ),
    Message(
        "assistant",
        "",
        tool_calls=(ToolCall("call_1", "search", '{"q": "caf\\u00e9"}'), ToolCall("c2", "t", "")),
        id="a1",
        extra={
            "openai_null_content": True,
            "response_metadata": {"model": "gpt-4o", "usage": {"in": 10}, "flags": [True]},
        },
    ),
    Message(
        "tool",
        "result with NUL \x00 and \u2028 and emoji \U0001f600",
        tool_call_id="call_1",
        id="t1",
    ),
    Message("tool", "lone surrogate \ud800 kept", tool_call_id="c2", name="t", id="t2"),
    Message("assistant", "Voilà — 東京 ∑ \\ \" ' `", id="a2", extra={"": "empty key", "n": 1e300}),
]


def test_append_and_load_are_lossless(store: BaseSessionStore) -> None:
    assert store.append("s1", RICH) == len(RICH)
    loaded = store.load("s1")
    assert loaded == RICH
    for got, want in zip(loaded, RICH, strict=True):
        assert got.fingerprint() == want.fingerprint()
        assert dict(got.extra) == dict(want.extra)
        assert got.to_openai() == want.to_openai()


def test_loaded_messages_copy_and_pickle_like_the_appended_ones(store: BaseSessionStore) -> None:
    store.append("s1", [*RICH, _user(1)])
    loaded = store.load("s1")
    for message in (copy.deepcopy(loaded), pickle.loads(pickle.dumps(loaded))):
        assert message == [*RICH, _user(1)]
    again = copy.deepcopy(loaded[-1])
    again.extra["mine"] = True  # type: ignore[index]  # a copy's metadata is its own
    assert store.load("s1")[-1].extra == {}


def test_unknown_session_loads_empty(store: BaseSessionStore) -> None:
    assert store.load("nobody") == []
    assert store.get_session("nobody") is None


def test_append_is_idempotent_by_message_id(store: BaseSessionStore) -> None:
    first = [_user(1), _user(2)]
    assert store.append("s", first) == 2
    assert store.append("s", first) == 0
    assert store.append("s", [_user(2), _user(3), _user(3)]) == 1
    assert _ids(store.load("s")) == ["u1", "u2", "u3"]
    info = store.get_session("s")
    assert info is not None
    assert info.message_count == 3


def test_same_id_in_two_sessions_is_two_messages(store: BaseSessionStore) -> None:
    store.append("a", [_user(1, "for a")])
    store.append("b", [_user(1, "for b")])
    assert [m.text for m in store.load("a")] == ["for a"]
    assert [m.text for m in store.load("b")] == ["for b"]


def test_first_write_of_an_id_wins(store: BaseSessionStore) -> None:
    store.append("s", [_user(1, "original")])
    store.append("s", [_user(1, "changed")])
    assert [m.text for m in store.load("s")] == ["original"]


def test_order_is_kept_across_calls(store: BaseSessionStore) -> None:
    ids = [f"m{i:03d}" for i in range(60)][::-1]  # ids that do not sort in append order
    for chunk in range(0, 60, 7):
        store.append("s", [Message("user", i, id=i) for i in ids[chunk : chunk + 7]])
    assert _ids(store.load("s")) == ids


def test_load_after(store: BaseSessionStore) -> None:
    store.append("s", [_user(i) for i in range(5)])
    assert _ids(store.load("s", after="u2")) == ["u3", "u4"]
    assert store.load("s", after="u4") == []
    with pytest.raises(MessageNotFoundError) as info:
        store.load("s", after="nope")
    assert info.value.message_id == "nope"
    assert store.load("unknown-session", after="u1") == []


def test_load_since_gives_the_count_that_shows_deletions(store: BaseSessionStore) -> None:
    store.append("s", [_user(i) for i in range(5)])
    new, count = store.load_since("s", None)
    assert (_ids(new), count) == (["u0", "u1", "u2", "u3", "u4"], 5)
    new, count = store.load_since("s", "u2")
    assert (_ids(new), count) == (["u3", "u4"], 5)
    assert store.load_since("s", "u4") == ([], 5)
    # a reader holding u0..u4 sees that one of its older messages went: 3 + 0 new < 5
    store.delete_messages("s", ["u1", "u3"])
    assert store.load_since("s", "u4") == ([], 3)
    store.append("s", [_user(5)])
    new, count = store.load_since("s", "u4")
    assert (_ids(new), count) == (["u5"], 4)
    with pytest.raises(MessageNotFoundError):
        store.load_since("s", "u1")
    store.delete_session("s")
    assert store.load_since("s", "u4") == ([], 0)
    assert store.load_since("s", None) == ([], 0)


def test_empty_append_creates_the_session(store: BaseSessionStore) -> None:
    assert store.append("empty", [], workspace="w", metadata={"user_id": "u"}) == 0
    info = store.get_session("empty")
    assert info is not None
    assert (info.workspace, info.message_count, dict(info.metadata)) == ("w", 0, {"user_id": "u"})


def test_invalid_input_is_refused_and_nothing_is_stored(store: BaseSessionStore) -> None:
    with pytest.raises(StoreError, match="session_id"):
        store.append("", [_user(1)])
    with pytest.raises(StoreError, match="Message"):
        store.append("s", [{"role": "user", "content": "hi"}])  # type: ignore[list-item]
    with pytest.raises(StoreError, match="JSON"):
        store.append("s", [_user(1), Message("user", "x", id="bad", extra={"o": object()})])
    assert store.get_session("s") is None
    with pytest.raises(StoreError, match="JSON"):
        store.append("s", [_user(1)], metadata={"when": object()})


def test_delete_messages(store: BaseSessionStore) -> None:
    store.append("s", [_user(i) for i in range(5)])
    assert store.delete_messages("s", ["u1", "u3", "missing", "u1"]) == 2
    assert _ids(store.load("s")) == ["u0", "u2", "u4"]
    info = store.get_session("s")
    assert info is not None
    assert info.message_count == 3
    assert store.delete_messages("s", []) == 0
    assert store.delete_messages("other", ["u0"]) == 0


def test_deleted_id_can_be_appended_again_at_the_end(store: BaseSessionStore) -> None:
    store.append("s", [_user(i) for i in range(3)])
    store.delete_messages("s", ["u2"])
    store.append("s", [_user(2, "again"), _user(3)])
    assert _ids(store.load("s")) == ["u0", "u1", "u2", "u3"]
    store.delete_messages("s", ["u0"])
    store.append("s", [_user(0)])
    assert _ids(store.load("s")) == ["u1", "u2", "u3", "u0"]


def test_delete_range_is_inclusive_in_store_order(store: BaseSessionStore) -> None:
    store.append("s", [_user(i) for i in (5, 1, 4, 2, 3)])
    assert store.delete_range("s", "u1", "u2") == 3
    assert _ids(store.load("s")) == ["u5", "u3"]
    assert store.delete_range("s", "u3", "u3") == 1
    with pytest.raises(MessageNotFoundError):
        store.delete_range("s", "u5", "u9")
    store.append("s", [_user(6)])
    with pytest.raises(StoreError, match="comes after"):
        store.delete_range("s", "u6", "u5")
    assert _ids(store.load("s")) == ["u5", "u6"]


def _tool_session() -> list[Message]:
    return [
        Message("user", "find and fetch", id="q"),
        Message("assistant", "", tool_calls=(ToolCall("s1", "search", "{}"),), id="a-search"),
        Message("tool", "search hits", tool_call_id="s1", id="r-search"),
        Message(
            "assistant",
            "both",
            tool_calls=(ToolCall("s2", "search", "{}"), ToolCall("f1", "fetch", "{}")),
            id="a-mixed",
        ),
        Message("tool", "more hits", tool_call_id="s2", id="r-s2"),
        Message("tool", "page", tool_call_id="f1", id="r-f1"),
        Message("assistant", "", tool_calls=(ToolCall("f2", "fetch", "{}"),), id="a-fetch"),
        Message("tool", "page 2", tool_call_id="f2", id="r-f2"),
        Message("tool", "stray search output", tool_call_id="gone", name="search", id="stray"),
        Message("assistant", "done", id="end"),
    ]


def _orphans(messages: Sequence[Message]) -> list[str]:
    calls = {c.id for m in messages for c in m.tool_calls}
    answered = {m.tool_call_id or "" for m in messages if m.role == "tool"}
    return sorted((answered - calls) | (calls - answered))


def test_delete_by_tool_leaves_no_orphan(store: BaseSessionStore) -> None:
    store.append("s", _tool_session())
    deleted = store.delete_by_tool("s", "search")
    left = store.load("s")
    # the mixed message goes whole with both its results; the stray named result goes too
    assert _ids(left) == ["q", "a-fetch", "r-f2", "end"]
    assert deleted == 6
    assert _orphans(left) == []
    assert store.delete_by_tool("s", "search") == 0
    assert store.delete_by_tool("s", "fetch") == 2
    assert _ids(store.load("s")) == ["q", "end"]


def test_delete_session(store: BaseSessionStore) -> None:
    store.append("s", [_user(1)], metadata={"user_id": "u"})
    store.append("t", [_user(1)])
    assert store.delete_session("s") is True
    assert store.delete_session("s") is False
    assert store.get_session("s") is None
    assert store.load("s") == []
    assert [i.id for i in store.list_sessions()] == ["t"]
    assert store.erase_user("u") == 0


def test_erase_workspace(store: BaseSessionStore) -> None:
    for sid in ("a", "b"):
        store.append(sid, [_user(1)], workspace="doomed")
    store.append("c", [_user(1)], workspace="kept")
    assert store.erase_workspace("doomed") == 2
    assert store.list_sessions("doomed") == []
    assert [i.id for i in store.list_sessions(None)] == ["c"]
    assert store.erase_workspace("doomed") == 0


def test_erase_user_follows_metadata(store: BaseSessionStore) -> None:
    store.append("a", [_user(1)], metadata={"user_id": "alice", "x": 1})
    store.append("b", [_user(1)], workspace="w2", metadata={"user_id": "alice"})
    store.append("c", [_user(1)], metadata={"user_id": "bob"})
    store.append("d", [_user(1)], metadata={"user_id": 7})  # not a string: not a user id
    store.set_metadata("c", {"user_id": "alice"})
    store.set_metadata("a", {"owner": "someone else"})
    assert store.erase_user("alice") == 2
    assert sorted(i.id for i in store.list_sessions(None)) == ["a", "d"]
    assert store.erase_user("bob") == 0


def test_set_metadata_replaces_and_append_does_not(store: BaseSessionStore) -> None:
    store.append("s", [_user(1)], metadata={"user_id": "u", "topic": "cats"})
    store.append("s", [_user(2)], workspace="ignored", metadata={"topic": "dogs"})
    info = store.get_session("s")
    assert info is not None
    assert dict(info.metadata) == {"user_id": "u", "topic": "cats"}
    assert info.workspace == "default"
    store.set_metadata("s", {"topic": "birds", "nested": {"a": [1, None]}})
    info = store.get_session("s")
    assert info is not None
    assert dict(info.metadata) == {
        "topic": "birds",
        "nested": {"a": [1, None]},
    }
    with pytest.raises(SessionNotFoundError) as info:
        store.set_metadata("nobody", {})
    assert "store.list_sessions(None)" in str(info.value)  # the Python API's advice
    again = pickle.loads(pickle.dumps(info.value.with_remedy("Look elsewhere.")))
    assert str(again) == "No session 'nobody' in this store. Look elsewhere."


def test_batches_of_openai_messages_are_stored_as_sent(store: BaseSessionStore) -> None:
    """Appending ``messages_from_openai`` batches one at a time (ids derived from each batch's
    positions, not the caller's): every batch is stored, the same words said again included; a
    batch sent again is a no-op only under its idempotency key.
    """
    from session_migrator import messages_from_openai

    turns = [
        [("user", "Run the tests."), ("assistant", "3 failed.")],
        [("user", "continue"), ("assistant", "Fixed test_a.")],
        [("user", "continue"), ("assistant", "Fixed test_b.")],
    ]
    for k, turn in enumerate(turns):
        batch = messages_from_openai([{"role": r, "content": c} for r, c in turn])
        assert store.append("s", batch, idempotency_key=f"turn-{k}") == 2
        assert store.append("s", batch, idempotency_key=f"turn-{k}") == 0  # a retry
    log = [(m.role, m.text) for m in store.load("s")]
    assert log == [pair for turn in turns for pair in turn]
