"""The output LlamaIndex asks for (``metadata.num_output``, sent as ``max_tokens``) is held back
in full, by the memory on its own and by the guard, however large a share of the window it is."""

from __future__ import annotations

from collections.abc import Callable

from llama_index.core.chat_engine import SimpleChatEngine

from llamaindex_session_migrator import FitToModelLLM, SessionMigratorMemory, window_for
from tests.adapters.llamaindex._recording import RecordingLLM

MemoryFactory = Callable[..., SessionMigratorMemory]
FILLER = "Please explain it at length, with every detail you have, step by step. " * 8


def test_the_memory_alone_keeps_the_whole_num_output_free(make_memory: MemoryFactory) -> None:
    llm = RecordingLLM(context_window=4096, num_output=2048, reply_words=150)
    memory = make_memory(llm=llm)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    for turn in range(20):
        engine.chat(f"Turn {turn}: {FILLER}")
    assert llm.problems() == []
    assert memory.last_report is not None
    assert memory.last_report.decision == "compressed"


def test_the_guard_keeps_the_whole_num_output_free(make_memory: MemoryFactory) -> None:
    llm = RecordingLLM(context_window=4096, num_output=3000, reply_words=150)
    memory = make_memory(llm=llm, reserve_input=0)
    engine = SimpleChatEngine.from_defaults(llm=FitToModelLLM(llm), memory=memory)
    for turn in range(6):
        engine.chat(f"Turn {turn}: {FILLER}")
    assert llm.problems() == []


def test_the_input_cap_is_the_window_less_num_output() -> None:
    window = window_for(RecordingLLM(context_window=4096, num_output=2048))
    assert (window.context_window, window.max_input_tokens, window.max_output_tokens) == (
        4096,
        2048,
        2048,
    )
