"""Placeholders the agent puts on its own context (issue 44): compress a range or a tool's
outputs, list the placeholders in force, restore one; fits honour them; on every backend."""

from __future__ import annotations

import pytest

from session_migrator import Message, ModelWindow, SessionFitter, SessionNotFoundError, ToolCall
from session_migrator.context_tools import (
    PlaceholderError,
    compress_context,
    list_placeholders,
    restore_context,
)
from session_migrator.store import BaseSessionStore
from tests.store.conftest import StoreFactory

LOG = "\n".join(f"{n:05d} INFO heartbeat ok" for n in range(200))
WINDOW = ModelWindow("small", "test", 16_000, 16_000, 0, "o200k_base", "explicit")


def _session(store: BaseSessionStore, sid: str = "s") -> list[Message]:
    messages: list[Message] = [Message("system", "You are an ops agent.", id="sys")]
    for i in range(4):
        messages += [
            Message("user", f"Check service {i}.", id=f"u{i}"),
            Message("assistant", "", tool_calls=(ToolCall(f"c{i}", "read_log", "{}"),), id=f"a{i}"),
            Message("tool", LOG, tool_call_id=f"c{i}", id=f"t{i}"),
            Message("assistant", f"Service {i} is fine.", id=f"r{i}"),
        ]
    messages.append(Message("user", "Any service down?", id="u9"))
    store.append(sid, messages)
    return messages


def _sent(store: BaseSessionStore, sid: str = "s") -> list[Message]:
    return SessionFitter(sid, store=store, strategy="trim").fit(WINDOW).messages


def test_compress_list_restore_and_fits_honour_them(store: BaseSessionStore) -> None:
    _session(store)
    p = compress_context(store, "s", first_id="u0", last_id="r1", summary="0 and 1 are fine")
    assert (p.id, p.first_message_id, p.last_message_id, p.covered) == ("p1", "u0", "r1", 8)
    assert [x.id for x in list_placeholders(store, "s")] == ["p1"]
    sent = _sent(store)
    ids = [m.id for m in sent]
    assert "u0" not in ids
    assert "t1" not in ids
    assert "u2" in ids
    line = next(m for m in sent if 'restore_context(id="p1")' in m.text)
    assert "8 messages compressed by the agent: 0 and 1 are fine" in line.text
    assert len(store.load("s")) == 18  # nothing deleted

    done = restore_context(store, "s", "p1")
    assert done.restored is not None
    assert list_placeholders(store, "s") == []
    assert [x.id for x in list_placeholders(store, "s", include_restored=True)] == ["p1"]
    assert [m.id for m in _sent(store)] == [m.id for m in store.load("s")]  # whole again


def test_a_fitter_picks_up_placeholders_put_by_another_process(make_store: StoreFactory) -> None:
    store = make_store()
    _session(store)
    fitter = SessionFitter("s", store=store, strategy="trim")
    before = fitter.fit(WINDOW).messages
    compress_context(store, "s", first_id="u0", last_id="r0", summary="fine")
    after = fitter.fit(WINDOW).messages
    assert len(after) == len(before) - 3
    restore_context(store, "s", "p1")
    assert [m.id for m in fitter.fit(WINDOW).messages] == [m.id for m in before]


def test_the_summary_is_written_offline_when_none_is_given(store: BaseSessionStore) -> None:
    _session(store)
    p = compress_context(store, "s", first_id="u0", last_id="r0")
    assert p.summary
    assert len(p.summary) <= 1_000


def test_a_tool_call_pair_is_never_split(store: BaseSessionStore) -> None:
    _session(store)
    # from the call to before its result: widened to take the result too
    p = compress_context(store, "s", first_id="a0", last_id="a0")
    assert (p.first_message_id, p.last_message_id) == ("a0", "t0")
    # from a result alone: widened back to its call (overlapping p1 then: refused)
    with pytest.raises(PlaceholderError, match="overlaps placeholder 'p1'"):
        compress_context(store, "s", first_id="t0", last_id="r0")
    q = compress_context(store, "s", first_id="t1", last_id="r1")
    assert (q.first_message_id, q.last_message_id) == ("a1", "r1")
    sent = _sent(store)
    calls = {c.id for m in sent for c in m.tool_calls}
    results = {m.tool_call_id for m in sent if m.role == "tool"}
    assert calls == results == {"c2", "c3"}


def test_the_outputs_of_one_tool(store: BaseSessionStore) -> None:
    _session(store)
    p = compress_context(store, "s", tool="read_log", summary="all heartbeats")
    assert (p.tool, p.covered, p.first_message_id, p.last_message_id) == (
        "read_log",
        4,
        "t0",
        "t3",
    )
    sent = _sent(store)
    outputs = [m for m in sent if m.role == "tool"]
    assert len(outputs) == 4
    assert all('restore_context(id="p1")' in m.text for m in outputs)
    assert "4 outputs of tool read_log compressed by the agent: all heartbeats" in outputs[0].text
    assert {m.tool_call_id for m in outputs} == {"c0", "c1", "c2", "c3"}  # pairs kept
    restore_context(store, "s", "p1")
    assert all(m.text == LOG for m in _sent(store) if m.role == "tool")


def test_bad_input_says_what_to_do(store: BaseSessionStore) -> None:
    _session(store)
    with pytest.raises(PlaceholderError, match="no message with id 'nope'"):
        compress_context(store, "s", first_id="nope", last_id="r0")
    with pytest.raises(PlaceholderError, match="swap them"):
        compress_context(store, "s", first_id="r1", last_id="u0")
    with pytest.raises(PlaceholderError, match="current turn"):
        compress_context(store, "s", first_id="u3", last_id="u9")
    with pytest.raises(PlaceholderError, match="system message"):
        compress_context(store, "s", first_id="sys", last_id="r0")
    with pytest.raises(PlaceholderError, match="first_id and last_id"):
        compress_context(store, "s", first_id="u0")
    with pytest.raises(PlaceholderError, match="no outputs"):
        compress_context(store, "s", tool="search")
    compress_context(store, "s", first_id="u0", last_id="r0")
    with pytest.raises(PlaceholderError, match="overlaps placeholder 'p1'"):
        compress_context(store, "s", first_id="r0", last_id="r1")
    with pytest.raises(PlaceholderError, match=r"no placeholder 'p7' in force .*in force: p1"):
        restore_context(store, "s", "p7")
    with pytest.raises(SessionNotFoundError):
        compress_context(store, "missing", first_id="u0", last_id="r0")
    with pytest.raises(SessionNotFoundError):
        list_placeholders(store, "missing")
    restore_context(store, "s", "p1")
    with pytest.raises(PlaceholderError, match="in force: none"):
        restore_context(store, "s", "p1")
    # a new placeholder after a restored one has an id of its own
    assert compress_context(store, "s", first_id="u0", last_id="r0").id == "p2"


def test_other_metadata_is_kept(store: BaseSessionStore) -> None:
    store.append("s", [Message("user", "a", id="m0")], metadata={"user_id": "ann"})
    store.append("s", [Message("assistant", "b", id="m1"), Message("user", "c", id="m2")])
    compress_context(store, "s", first_id="m0", last_id="m1", summary="x")
    info = store.get_session("s")
    assert info is not None
    assert info.metadata["user_id"] == "ann"


def test_placeholders_hold_when_the_store_is_opened_again(
    make_store: StoreFactory, backend: str
) -> None:
    def reopen(store: BaseSessionStore) -> BaseSessionStore:
        if backend == "memory":  # (a memory store cannot be reopened: the same object checks)
            return store
        store.close()
        return make_store()  # (another process would open it so)

    first = make_store()
    _session(first)
    compress_context(first, "s", first_id="u0", last_id="r0", summary="service 0 is fine")
    again = reopen(first)
    assert [p.summary for p in list_placeholders(again, "s")] == ["service 0 is fine"]
    assert any('restore_context(id="p1")' in m.text for m in _sent(again))
    restore_context(again, "s", "p1")
    assert list_placeholders(reopen(again), "s") == []


def test_a_tools_newer_outputs_are_compressed_beside_the_older_ones(
    store: BaseSessionStore,
) -> None:
    """Compressing a tool's outputs again takes those not compressed yet (an agent that frees
    room turn after turn); once all are, it says so."""
    from session_migrator import Message, ToolCall

    store.append("t", [Message("system", "You check services.", id="sys")])

    def check(k: int) -> None:
        store.append(
            "t",
            [
                Message("user", f"Check service {k}.", id=f"u{k}"),
                Message(
                    "assistant", "", tool_calls=(ToolCall(f"c{k}", "status", "{}"),), id=f"a{k}"
                ),
                Message("tool", f"service {k}: healthy " * 40, tool_call_id=f"c{k}", id=f"t{k}"),
                Message("assistant", f"Service {k} is fine.", id=f"r{k}"),
            ],
        )

    check(0)
    check(1)
    check(2)
    first = compress_context(store, "t", tool="status", summary="services 0-1 healthy")
    assert (first.first_message_id, first.last_message_id) == ("t0", "t1")
    check(3)
    second = compress_context(store, "t", tool="status", summary="service 2 healthy")
    assert (second.id, second.first_message_id, second.last_message_id) == ("p2", "t2", "t2")
    with pytest.raises(PlaceholderError, match="compressed already"):
        compress_context(store, "t", tool="status")


def test_a_long_turn_compresses_its_finished_steps(store: BaseSessionStore) -> None:
    """Deep in a long task the agent compresses its turn's finished steps (between the question
    and the newest step); the question and the newest step stay."""
    _session(store)
    steps: list[Message] = []
    for k in range(3):
        call = ToolCall(f"s{k}", "read_log", "{}")
        steps += [
            Message("assistant", "", tool_calls=(call,), id=f"sa{k}"),
            Message("tool", LOG, tool_call_id=f"s{k}", id=f"st{k}"),
        ]
    store.append("s", steps)
    with pytest.raises(PlaceholderError, match="question or its newest step"):
        compress_context(store, "s", first_id="u9", last_id="st0")  # the question
    with pytest.raises(PlaceholderError, match="question or its newest step"):
        compress_context(store, "s", first_id="sa1", last_id="st2")  # the newest step
    p = compress_context(store, "s", first_id="sa0", last_id="sa1", summary="logs 0-1: ok")
    assert (p.first_message_id, p.last_message_id, p.covered) == ("sa0", "st1", 4)  # widened
    sent = [m.id for m in _sent(store)]
    assert sent[-4:-2] == ["u9", next(i for i in sent if i.startswith("sm-placeholder"))]
    assert sent[-2:] == ["sa2", "st2"]
