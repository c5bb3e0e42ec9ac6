"""``placeholder_tools(memory)`` (issue 44): ``FunctionTool``s with which the model compresses a
range of its own context, lists the placeholders and restores one; the memory's fitted
messages honour them (a ``SessionMigratorMemory``; a ``FittedMemory`` keeps the placeholders in
its store, but its fit does not apply them yet)."""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.llms import ChatMessage, MockLLM

from llamaindex_session_migrator import FittedMemory, SessionMigratorMemory, placeholder_tools
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


def test_a_fitted_memory_keeps_them_in_its_store() -> None:
    memory = _memory(1)
    compress, listed, _ = placeholder_tools(memory)
    ids = [m.id for m in memory.store.load(memory.session_id)]
    assert compress(first_id=ids[0], last_id=ids[1]).content.startswith("compressed as p1")
    assert listed().content.startswith("1 placeholder(s) in force")
