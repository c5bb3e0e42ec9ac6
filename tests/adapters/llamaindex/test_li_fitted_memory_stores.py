"""Where a FittedMemory keeps its messages, as a user of LlamaIndex's Memory expects: a chat
store given is used as is, the SQL arguments build upstream's SQL store, no store is private,
and ``store=`` keeps the whole conversation in the session store."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.storage.chat_store.sql import MessageStatus, SQLAlchemyChatStore

from llamaindex_session_migrator import (
    FittedMemory,
    MemoryNotRestorableError,
    SessionChatStore,
    SessionMigratorMemory,
    from_chat_messages,
)
from session_migrator import StoreError, TiktokenCounter, open_store

COUNTER = TiktokenCounter("o200k_base")


@pytest.fixture
async def sql_stores() -> AsyncIterator[Callable[[str], SQLAlchemyChatStore]]:
    """Upstream's SQL chat stores (in-memory SQLite), their engines disposed after the test."""
    made: list[SQLAlchemyChatStore] = []

    def make(table: str) -> SQLAlchemyChatStore:
        made.append(SQLAlchemyChatStore(table_name=table))
        return made[-1]

    yield make
    await _dispose(*made)


async def _dispose(*stores: Any) -> None:
    for chats in stores:
        engine = chats._async_engine
        if engine is not None:
            await engine.dispose()


def _big_turns() -> list[ChatMessage]:
    return [
        ChatMessage(role=role, content=f"{letter} " * 500)
        for role, letter in (("user", "x"), ("assistant", "y"), ("user", "z"))
    ]


async def test_a_chat_store_given_is_used_as_is_and_archived_into(
    sql_stores: Callable[[str], SQLAlchemyChatStore],
) -> None:
    chats = sql_stores("mine")
    memory = FittedMemory(
        session_id="u", sql_store=chats, token_limit=1000, token_flush_size=700,
        chat_history_token_ratio=0.9,
    )  # fmt: skip
    assert memory.sql_store is chats
    await memory.aput_messages(_big_turns())
    assert [m.content[:2] for m in await memory.aget() if m.content] == ["z "]
    assert len(await chats.get_messages("u", status=MessageStatus.ACTIVE)) == 1
    assert len(await chats.get_messages("u", status=MessageStatus.ARCHIVED)) == 2
    seeded = FittedMemory.from_defaults(session_id="s", chat_store=chats)
    assert seeded.sql_store is chats
    await seeded.aset([ChatMessage(role="user", content="hi")])
    assert [m.content for m in await chats.get_messages("s")] == ["hi"]
    with pytest.raises(StoreError, match="LlamaIndex chat store it was given"):
        _ = memory.store  # its messages are in the chat store, not in a session store
    memory.close()  # leaves the chat store given alone


async def test_a_chat_store_given_still_gets_fitted(
    make_llm: Callable[..., Any], sql_stores: Callable[[str], SQLAlchemyChatStore]
) -> None:
    llm = make_llm(context_window=1_000, num_output=100)
    memory = FittedMemory.from_defaults(
        session_id="f", chat_store=sql_stores("fit"), llm=llm, strategy="trim"
    )
    for i in range(30):
        await memory.aput(ChatMessage(role="user", content=f"question {i}: " + "blah " * 30))
        await memory.aput(ChatMessage(role="assistant", content=f"answer {i}: " + "word " * 30))
    got = await memory.aget()
    assert COUNTER.count_messages(from_chat_messages(got)) <= 900
    assert memory.last_report is not None
    assert memory.last_report.decision == "compressed"
    assert len(await memory.aget_all()) == 60


async def test_the_sql_arguments_build_upstreams_sql_store(tmp_path: Path) -> None:
    named = FittedMemory.from_defaults(token_limit=1000, table_name="test_memory")
    assert isinstance(named.sql_store, SQLAlchemyChatStore)
    assert named.sql_store.table_name == "test_memory"
    uri = f"sqlite+aiosqlite:///{tmp_path / 'chats.db'}"
    first = FittedMemory.from_defaults(session_id="p", async_database_uri=uri)
    assert isinstance(first.sql_store, SQLAlchemyChatStore)
    assert first.sql_store.table_name == "llama_index_memory"  # upstream's default table
    await first.aput(ChatMessage(role="user", content="kept in the database"))
    again = FittedMemory.from_defaults(session_id="p", async_database_uri=uri)
    assert [m.content for m in await again.aget_all()] == ["kept in the database"]
    await _dispose(named.sql_store, first.sql_store, again.sql_store)
    with pytest.raises(ValueError, match="not both"):
        FittedMemory.from_defaults(table_name="t", store="memory://")
    with pytest.raises(ValueError, match="not both"):
        FittedMemory(
            token_limit=1000, sql_store=SQLAlchemyChatStore(table_name="t"), store="memory://"
        )
    with pytest.raises(TypeError, match="AsyncDBChatStore"):
        FittedMemory(token_limit=1000, sql_store="sqlite:///x.db")


async def test_memories_made_without_a_store_are_private() -> None:
    first = FittedMemory(token_limit=1000, session_id="same")
    second = FittedMemory(token_limit=1000, session_id="same")
    await first.aput(ChatMessage(role="user", content="my card ends 4242"))
    assert await second.aget_all() == []
    assert first.store is not second.store
    assert first.store.url == "memory://"
    for memory in (first, second):
        memory.close()


def test_session_migrator_store_names_the_store_of_a_memory_made_without_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SESSION_MIGRATOR_STORE", f"sqlite:///{tmp_path / 'shared.db'}")
    first = FittedMemory.from_defaults(session_id="team")
    first.put(ChatMessage(role="user", content="hello"))
    second = FittedMemory.from_defaults(session_id="team")
    assert [m.content for m in second.get_all()] == ["hello"]
    for memory in (first, second):
        memory.close()


async def test_a_session_store_keeps_the_whole_log(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    memory = FittedMemory.from_defaults(
        session_id="w", store=url, token_limit=1000, token_flush_size=700,
        chat_history_token_ratio=0.9,
    )  # fmt: skip
    assert isinstance(memory.sql_store, SessionChatStore)
    await memory.aput_messages(_big_turns())
    assert len(await memory.aget_all(status=MessageStatus.ACTIVE)) == 1
    assert len(memory.store.load("w")) == 3  # flushed messages archived in place
    memory.close()
    store = open_store(url)
    try:
        assert len(store.load("w")) == 3
        assert len(SessionMigratorMemory(chat_store_key="w", store=store).get_all()) == 3
        reopened = FittedMemory(session_id="w", store=store, token_limit=1000)
        assert len(await reopened.aget_all(status=MessageStatus.ARCHIVED)) == 2
    finally:
        store.close()


def test_a_memory_on_a_chat_store_given_is_a_reference_only_here() -> None:
    memory = FittedMemory(
        session_id="r", token_limit=1000, sql_store=SQLAlchemyChatStore(table_name="r")
    )
    data = memory.to_dict()
    assert data["store_url"] is None
    assert FittedMemory.from_dict(data) is memory  # in the process that made it
    data["process_token"] = None  # as another process sees it
    with pytest.raises(MemoryNotRestorableError, match="LlamaIndex chat store"):
        FittedMemory.from_dict(data)
