"""One LLM call asks one memory, whatever the number of live memories; close() withdraws."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage

from llamaindex_session_migrator import SessionMigratorMemory
from llamaindex_session_migrator._instrumentation import lookup
from tests.adapters.llamaindex._recording import RecordingLLM

MemoryFactory = Callable[..., SessionMigratorMemory]


def _filled(make_memory: MemoryFactory, i: int, llm: Any) -> SessionMigratorMemory:
    memory = make_memory(f"s{i}", llm=llm, strategy="trim")
    memory.put_messages(
        [
            ChatMessage(role="user", content=f"hello {i}"),
            ChatMessage(role="assistant", content="hi"),  # alike in every session
            ChatMessage(role="user", content="what now?"),  # alike in every session
        ]
    )
    memory.get()
    return memory


def test_a_call_asks_only_the_memory_it_carried(
    make_memory: MemoryFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = RecordingLLM()
    memories = [_filled(make_memory, i, llm) for i in range(200)]
    asked: list[int] = []
    original = SessionMigratorMemory._observe

    def observe(self: SessionMigratorMemory, *args: Any) -> bool:
        asked.append(id(self))
        return original(self, *args)

    monkeypatch.setattr(SessionMigratorMemory, "_observe", observe)
    target = memories[123]
    llm.chat(target.get())
    assert asked == [id(target)]


def test_the_observed_model_is_recorded_on_the_memory_that_was_read(
    make_memory: MemoryFactory,
) -> None:
    small = RecordingLLM(model_name="gpt-4o-mini", context_window=4096)
    other = RecordingLLM(model_name="gpt-4o", context_window=8192)
    memories = [_filled(make_memory, i, None) for i in range(3)]
    other.chat(memories[1].get())
    small.chat(memories[2].get())
    memories[0].get()
    memories[1].get()
    memories[2].get()
    assert memories[1].model_source == "observed"
    assert memories[1].model_window is not None
    assert memories[1].model_window.context_window == 8192
    assert memories[2].model_window is not None
    assert memories[2].model_window.context_window == 4096
    assert memories[0].model_source != "observed"


def test_close_withdraws_what_the_memory_handed_out(make_memory: MemoryFactory) -> None:
    memory = _filled(make_memory, 0, RecordingLLM())
    handed = memory.get()
    assert all(lookup(m) is not None for m in handed)
    memory.close()
    assert all(lookup(m) is None for m in handed)
