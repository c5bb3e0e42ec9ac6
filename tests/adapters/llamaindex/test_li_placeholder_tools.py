"""``placeholder_tools(memory)`` (issue 44): ``FunctionTool``s with which the model compresses a
range of its own context, lists the placeholders and restores one; the memory's fitted
messages honour them (a ``SessionMigratorMemory``, and a ``FittedMemory`` on a session store or on
a LlamaIndex chat store, which keeps them in itself)."""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.llms import ChatMessage, MockLLM

from llamaindex_session_migrator import (
    FittedMemory,
    SessionMigratorMemory,
    placeholder_tools,
    read_context_tool,
)
from session_migrator.context_tools import list_placeholders
from session_migrator.store import open_store


def _memory(index: int) -> Any:
    kind = (SessionMigratorMemory, FittedMemory)[index]
    memory = kind.from_defaults(llm=MockLLM(), store=open_store("memory://"))
    turns = []
    for i in range(3):
        turns += [
            ChatMessage(role="user", content=f"Check service {i}."),
            ChatMessage(role="assistant", content=f"Service {i} is fine."),
        ]
    memory.put_messages([*turns, ChatMessage(role="user", content="Any service down?")])
    return memory


def test_compress_list_restore_through_the_tools() -> None:
    memory = _memory(0)
    compress, listed, restore = placeholder_tools(memory)
    assert [t.metadata.name for t in (compress, listed, restore)] == [
        "compress_context",
        "list_placeholders",
        "restore_context",
    ]
    assert all(len(t.metadata.description) < 250 for t in (compress, listed, restore))
    ids = [m.id for m in memory.store.load(memory.session_id)]
    before = len(memory.get())
    said = compress(first_id=ids[0], last_id=ids[3], summary="services 0 and 1 are fine").content
    assert said.startswith("compressed as p1: 4 message(s)")
    sent = memory.get()
    assert len(sent) == before - 3
    assert any('restore_context(id="p1")' in str(m.content) for m in sent)
    assert "services 0 and 1 are fine" in asyncio.run(listed.acall()).content
    assert "swap them" in compress(first_id=ids[3], last_id=ids[0]).content
    assert "no placeholder 'p5' in force" in restore(id="p5").content
    assert restore(id="p1").content.startswith("p1 restored")
    assert len(memory.get()) == before
    assert len(memory.store.load(memory.session_id)) == len(ids)  # nothing deleted


def test_a_fitted_memory_keeps_them_in_its_store_and_its_get_honours_them() -> None:
    memory = _memory(1)
    compress, listed, restore = placeholder_tools(memory)
    ids = [m.id for m in memory.store.load(memory.session_id)]
    before = [str(m.content) for m in memory.get()]
    assert compress(first_id=ids[0], last_id=ids[1]).content.startswith("compressed as p1")
    assert listed().content.startswith("1 placeholder(s) in force")
    assert [p.id for p in list_placeholders(memory.store, memory.session_id)] == ["p1"]
    sent = [str(m.content) for m in memory.get()]
    assert len(sent) == len(before) - 1
    assert 'restore_context(id="p1")' in sent[0]
    assert sent[1:] == before[2:]
    assert restore(id="p1").content.startswith("p1 restored")
    assert [str(m.content) for m in memory.get()] == before


async def test_a_fitted_memory_on_a_llamaindex_chat_store_keeps_them_in_itself() -> None:
    from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

    chats = SQLAlchemyChatStore(table_name="t")
    memory = FittedMemory.from_defaults(
        llm=MockLLM(), chat_store=chats, token_limit=400, token_flush_size=100
    )
    turns = [
        ChatMessage(role="user" if i % 2 == 0 else "assistant", content=f"step {i} " + "x " * 40)
        for i in range(8)
    ]
    await memory.aput_messages([*turns, ChatMessage(role="user", content="Now?")])
    archived = len(await memory.aget_all()) - len(await chats.get_messages(memory.session_id))
    assert archived > 0  # (upstream's queue archived the oldest: positions go on from them)
    compress, listed, restore = placeholder_tools(memory)
    read = read_context_tool(memory)
    assert memory.held_placeholders is not None

    async def call(tool: Any, **kwargs: Any) -> str:
        return str((await tool.acall(**kwargs)).content)

    async def sent() -> list[str]:
        return [str(m.content) for m in await memory.aget()]

    first, second = f"m{archived}", f"m{archived + 1}"
    said = await call(compress, first_id=first, last_id=second, summary="two steps")
    assert said.startswith(f"compressed as p1: 2 message(s), {first}..{second}")
    now = await sent()
    assert "two steps" in now[0]
    assert 'restore_context(id="p1")' in now[0]
    assert not any(f"step {archived} " in s for s in now)
    assert f"step {archived} " in await call(read, id=first)
    assert "no message with id 'x9'" in await call(read, id="x9")
    assert "reaches the current turn" in await call(compress, first_id="m8", last_id="m8")
    assert (await call(restore, id="p1")).startswith("p1 restored")
    assert any(f"step {archived} " in s for s in await sent())
    assert await call(listed) == "no placeholders in force"
    await chats._async_engine.dispose()
