"""The store contract for everything beside messages, run against every backend: listing,
summaries, token counts, the migration log, retention, offloading, async twins."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from session_migrator import ConflictError, Message, SessionNotFoundError, StoreError
from session_migrator.store import (
    BaseSessionStore,
    MigrationRecord,
    NotOffloadedError,
    SessionStore,
)

StoreFactory = Callable[..., BaseSessionStore]


def _msgs(prefix: str, n: int) -> list[Message]:
    return [Message("user", f"{prefix} {i}", id=f"{prefix}{i}") for i in range(n)]


def test_every_backend_satisfies_the_protocol(store: BaseSessionStore) -> None:
    assert isinstance(store, SessionStore)


def test_list_sessions_counts_and_activity(make_store: StoreFactory, clock: Any) -> None:
    store = make_store(clock=clock)
    store.append("old", _msgs("o", 3), workspace="w")
    clock.advance(60)
    store.append("new", _msgs("n", 1), workspace="w")
    clock.advance(60)
    store.append("elsewhere", _msgs("e", 2), workspace="x")
    listed = store.list_sessions("w")
    assert [(i.id, i.message_count) for i in listed] == [("new", 1), ("old", 3)]
    assert listed[0].updated_at == datetime.fromtimestamp(clock.now - 60, tz=UTC)
    clock.advance(60)
    store.append("old", _msgs("o", 4))  # one new message: "old" is now the most recent
    listed = store.list_sessions("w")
    assert [i.id for i in listed] == ["old", "new"]
    assert listed[0].created_at < listed[0].updated_at
    assert listed[0].message_count == 4
    assert {i.id for i in store.list_sessions(None)} == {"old", "new", "elsewhere"}
    assert store.list_sessions() == []  # the "default" workspace is empty


def test_summary_revisions(store: BaseSessionStore, clock: Any) -> None:
    store.append("s", _msgs("m", 4))
    assert store.get_summary("s") is None
    common: dict[str, Any] = {"model": "gpt-4o-mini", "strategy": "summarize"}
    first = store.put_summary(
        "s",
        "They talked.",
        first_id="m0",
        last_id="m1",
        covered_count=2,
        expected_revision=0,
        **common,
    )
    assert first.revision == 1
    got = store.get_summary("s")
    assert got is not None
    assert (got.text, got.first_id, got.last_id, got.covered_count) == (
        "They talked.",
        "m0",
        "m1",
        2,
    )
    assert (got.model, got.strategy, got.revision) == ("gpt-4o-mini", "summarize", 1)
    with pytest.raises(ConflictError, match="revision 1"):
        store.put_summary(
            "s",
            "stale",
            first_id="m0",
            last_id="m1",
            covered_count=2,
            expected_revision=0,
            **common,
        )
    second = store.put_summary(
        "s",
        "They talked more.",
        first_id="m0",
        last_id="m2",
        covered_count=3,
        expected_revision=1,
        model=None,
        strategy="extractive",
    )
    got = store.get_summary("s")
    assert got == second
    assert got.revision == 2
    assert got.model is None
    with pytest.raises(SessionNotFoundError):
        store.put_summary(
            "nobody",
            "x",
            first_id="a",
            last_id="b",
            covered_count=1,
            expected_revision=0,
            **common,
        )


def test_two_writers_cannot_both_win_a_revision(store: BaseSessionStore) -> None:
    store.append("s", _msgs("m", 2))
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def writer(n: int) -> None:
        barrier.wait()
        try:
            store.put_summary(
                "s",
                f"writer {n}",
                first_id="m0",
                last_id="m1",
                covered_count=2,
                model=None,
                strategy="trim",
                expected_revision=0,
            )
            outcomes.append(f"won {n}")
        except ConflictError:
            outcomes.append("lost")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [o for o in outcomes if o.startswith("won")]
    assert len(winners) == 1
    assert outcomes.count("lost") == 7
    summary = store.get_summary("s")
    assert summary is not None
    assert summary.revision == 1
    assert summary.text == f"writer {winners[0].split()[1]}"


def test_deleting_a_covered_message_drops_the_summary(store: BaseSessionStore) -> None:
    store.append("s", _msgs("m", 6))
    store.put_summary(
        "s",
        "m1..m3",
        first_id="m1",
        last_id="m3",
        covered_count=3,
        model=None,
        strategy="trim",
        expected_revision=0,
    )
    store.delete_messages("s", ["m5", "m0"])  # outside the covered range
    assert store.get_summary("s") is not None
    store.delete_messages("s", ["m2"])  # inside: the summary may quote it
    assert store.get_summary("s") is None


def test_token_counts(store: BaseSessionStore) -> None:
    store.append("s", _msgs("m", 3))
    assert store.get_token_counts("s", "o200k_base", ["m0", "m1"]) == {}
    store.put_token_counts("s", "o200k_base", {"m0": 7, "m1": 9, "not-a-message": 1})
    store.put_token_counts("s", "estimate:claude", {"m0": 11})
    assert store.get_token_counts("s", "o200k_base", ["m0", "m1", "m2", "not-a-message"]) == {
        "m0": 7,
        "m1": 9,
    }
    assert store.get_token_counts("s", "estimate:claude", ["m0", "m1"]) == {"m0": 11}
    store.put_token_counts("s", "o200k_base", {"m0": 8})
    assert store.get_token_counts("s", "o200k_base", ["m0"]) == {"m0": 8}
    store.delete_messages("s", ["m0"])
    store.append("s", [Message("user", "m0 again", id="m0")])
    assert store.get_token_counts("s", "o200k_base", ["m0", "m1"]) == {"m1": 9}
    assert store.get_token_counts("s", "estimate:claude", ["m0"]) == {}
    assert store.get_token_counts("nobody", "o200k_base", ["m1"]) == {}


def test_migration_log(store: BaseSessionStore, clock: Any) -> None:
    store.append("s", _msgs("m", 1))
    first = MigrationRecord("s", "gpt-4o", "gpt-4o-mini", 1200, 1200, 100_000, "auto", "fits")
    logged = store.log_migration(first)
    assert logged.at is not None
    at = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    second = MigrationRecord(
        "s", None, "claude-3-haiku", 900_000, 150_000, 160_000, "trim", "compressed", at=at
    )
    store.log_migration(second)
    log = store.migrations("s")
    assert [r.to_model for r in log] == ["gpt-4o-mini", "claude-3-haiku"]
    assert log[1] == second
    assert log[0].tokens_before == 1200
    assert log[0].from_model == "gpt-4o"
    assert store.migrations("nobody") == []
    with pytest.raises(SessionNotFoundError):
        store.log_migration(MigrationRecord("nobody", None, "m", 1, 1, 1, "auto", "fits"))
    store.delete_session("s")
    store.append("s", _msgs("m", 1))
    assert store.migrations("s") == []


def test_purge_older_than(make_store: StoreFactory, clock: Any) -> None:
    store = make_store(clock=clock)
    day = 86_400.0
    store.append("ancient", _msgs("a", 2))
    store.append("mixed", _msgs("old", 3))
    store.put_summary(
        "mixed",
        "old stuff",
        first_id="old0",
        last_id="old2",
        covered_count=3,
        model=None,
        strategy="trim",
        expected_revision=0,
    )
    store.put_token_counts("mixed", "o200k_base", {"old0": 5})
    clock.advance(10 * day)
    store.append("mixed", _msgs("new", 2))
    store.append("fresh", _msgs("f", 1))
    clock.advance(1 * day)
    assert store.purge_older_than(30) == 0
    assert store.purge_older_than(5) == 5
    assert store.get_session("ancient") is None  # emptied: deleted
    assert [m.id for m in store.load("mixed")] == ["new0", "new1"]
    assert store.get_summary("mixed") is None
    assert store.get_token_counts("mixed", "o200k_base", ["old0"]) == {}
    assert store.purge_older_than(0.5, now=clock.now + 2 * day) == 3
    assert store.list_sessions(None) == []
    with pytest.raises(StoreError):
        store.purge_older_than(-1)


BIG = "HEAD>" + "".join(f"line {i}: {'x' * 40} {i * i}\n" for i in range(400)) + "<TAIL é\x00"


def test_offload_large_tool_outputs(make_store: StoreFactory) -> None:
    store = make_store(offload_threshold=500)
    call = Message("assistant", "", tool_calls=(), id="a")
    messages = [
        Message("user", "run it", id="q"),
        call,
        Message("tool", BIG, tool_call_id="c1", id="big", extra={"status": "ok"}),
        Message("tool", "small output", tool_call_id="c2", id="small"),
        Message("user", BIG, id="big-user"),  # only tool outputs are offloaded
    ]
    store.append("s", messages)
    loaded = {m.id: m for m in store.load("s")}
    preview = loaded["big"]
    assert preview.text.startswith("HEAD>")
    assert preview.text.endswith("<TAIL é\x00")
    assert "left out" in preview.text
    assert len(preview.text) < 1200
    marker = preview.extra["session_migrator"]
    assert marker["kind"] == "offloaded"
    assert marker["chars"] == len(BIG)
    assert marker["tokens"] > 500
    assert preview.extra["status"] == "ok"
    assert preview.tool_call_id == "c1"
    assert loaded["small"] == messages[3]
    assert loaded["big-user"] == messages[4]
    assert store.load("s", full=True) == messages
    assert store.get_offloaded("s", "big") == BIG
    with pytest.raises(NotOffloadedError):
        store.get_offloaded("s", "small")
    with pytest.raises(NotOffloadedError):
        store.get_offloaded("s", "nope")
    store.delete_messages("s", ["big"])
    with pytest.raises(NotOffloadedError):
        store.get_offloaded("s", "big")


def test_offload_is_off_by_default(store: BaseSessionStore) -> None:
    message = Message("tool", BIG, tool_call_id="c1", id="big")
    store.append("s", [message])
    assert store.load("s") == [message]
    with pytest.raises(NotOffloadedError):
        store.get_offloaded("s", "big")


def test_offloaded_text_goes_with_its_session(make_store: StoreFactory) -> None:
    store = make_store(offload_threshold=100)
    store.append("s", [Message("tool", BIG, tool_call_id="c", id="big")], workspace="w")
    store.erase_workspace("w")
    store.append("s", [Message("tool", "short", tool_call_id="c", id="big")])
    with pytest.raises(NotOffloadedError):
        store.get_offloaded("s", "big")


async def test_async_twins(make_store: StoreFactory) -> None:
    async with make_store() as store:
        assert await store.aappend("s", iter(_msgs("m", 3)), metadata={"user_id": "u"}) == 3
        assert [m.id for m in await store.aload("s", after="m0")] == ["m1", "m2"]
        new, count = await store.aload_since("s", "m0")
        assert ([m.id for m in new], count) == (["m1", "m2"], 3)
        info = await store.aget_session("s")
        assert info is not None
        assert info.message_count == 3
        assert [i.id for i in await store.alist_sessions()] == ["s"]
        await store.aset_metadata("s", {"user_id": "v"})
        summary = await store.aput_summary(
            "s",
            "sum",
            first_id="m0",
            last_id="m0",
            covered_count=1,
            model=None,
            strategy="trim",
            expected_revision=0,
        )
        assert await store.aget_summary("s") == summary
        await store.aput_token_counts("s", "c", {"m1": 3})
        assert await store.aget_token_counts("s", "c", ["m1"]) == {"m1": 3}
        await store.alog_migration(MigrationRecord("s", None, "x", 1, 1, 1, "auto", "fits"))
        assert len(await store.amigrations("s")) == 1
        assert await store.adelete_messages("s", ["m2"]) == 1
        assert await store.adelete_range("s", "m1", "m1") == 1
        assert await store.adelete_by_tool("s", "none") == 0
        assert await store.apurge_older_than(1) == 0
        with pytest.raises(NotOffloadedError):
            await store.aget_offloaded("s", "m0")
        assert await store.aerase_user("v") == 1
        await store.aappend("t", _msgs("m", 1), workspace="w")
        assert await store.aerase_workspace("w") == 1
        await store.aappend("u", _msgs("m", 1))
        assert await store.adelete_session("u") is True
