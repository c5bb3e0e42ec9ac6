"""Real LlamaIndex chat engines with the memory and a fake model: what the model receives always
fits its window; a smaller model receives less on the next turn, and back restores it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core import Settings
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.chat_engine import (
    CondensePlusContextChatEngine,
    ContextChatEngine,
    SimpleChatEngine,
)
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llamaindex_session_migrator import SessionMigratorMemory, from_chat_messages
from session_migrator.messages._rules import is_valid_chat

MemoryFactory = Callable[..., SessionMigratorMemory]
LLMFactory = Callable[..., Any]

LONG = "Tell me more about the history of the place, with as many details as you can. " * 3


class FixedRetriever(BaseRetriever):
    """Always retrieves the same two short passages."""

    def __init__(self) -> None:
        super().__init__()
        self._nodes = [
            NodeWithScore(node=TextNode(text="Oslo is the capital of Norway."), score=1.0),
            NodeWithScore(node=TextNode(text="Bergen is known for its rain."), score=0.9),
        ]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return list(self._nodes)


def _check_fits(llm: Any, since: int) -> None:
    for i in range(since, len(llm.received)):
        assert llm.sent_tokens(i) <= llm.input_budget, f"call {i} overflowed the window"


def _build(kind: str, llm: Any, memory: SessionMigratorMemory) -> Any:
    if kind == "simple":
        return SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="Be helpful.")
    if kind == "context":
        return ContextChatEngine.from_defaults(
            FixedRetriever(), llm=llm, memory=memory, system_prompt="Be helpful."
        )
    return CondensePlusContextChatEngine.from_defaults(
        FixedRetriever(), llm=llm, memory=memory, system_prompt="Be helpful."
    )


ENGINES = ["simple", "context", "condense_plus_context"]
#: Context engines keep room for the retrieved passages and their synthesizer's 500-token padding.
RESERVE = {"simple": 100, "context": 800, "condense_plus_context": 800}


@pytest.mark.parametrize("kind", ENGINES)
def test_sync_engine_fits_and_follows_a_model_change(
    kind: str, make_memory: MemoryFactory, make_llm: LLMFactory
) -> None:
    llm = make_llm(model_name="gpt-4o", context_window=2500, num_output=150)
    # trim: what comes back on the large model does not depend on the query (recall would)
    memory = make_memory(llm=llm, reserve_input=RESERVE[kind], strategy="trim")
    engine = _build(kind, llm, memory)
    for turn in range(25):
        engine.chat(f"Question {turn}. {LONG}")
    _check_fits(llm, 0)
    assert memory.last_report is not None
    assert memory.last_report.decision == "compressed"
    large = len(llm.received[-1])

    llm.model_name, llm.context_window = "gpt-4o-mini", 1500
    mark = len(llm.received)
    engine.chat("And now, on the smaller model?")
    _check_fits(llm, mark)
    small = len(llm.received[-1])
    assert small < large
    assert memory.model_window is not None
    assert memory.model_window.context_window == 1500

    llm.model_name, llm.context_window = "gpt-4o", 2500
    mark = len(llm.received)
    engine.chat("Back on the large model.")
    _check_fits(llm, mark)
    # the larger budget again (the cut moves in steps: between the low and high watermarks)
    assert len(llm.received[-1]) > small
    assert len(memory.get_all()) == 2 * 27
    moves = [(r.from_model, r.to_model) for r in memory.store.migrations("s1")]
    assert moves[-2:] == [("gpt-4o", "gpt-4o-mini"), ("gpt-4o-mini", "gpt-4o")]
    assert is_valid_chat(from_chat_messages(memory.get()))


@pytest.mark.parametrize("kind", ENGINES)
async def test_async_engine_fits_and_follows_a_model_change(
    kind: str, make_memory: MemoryFactory, make_llm: LLMFactory
) -> None:
    llm = make_llm(model_name="gpt-4o", context_window=2500, num_output=150)
    memory = make_memory(llm=llm, reserve_input=RESERVE[kind])
    engine = _build(kind, llm, memory)
    for turn in range(20):
        await engine.achat(f"Question {turn}. {LONG}")
    _check_fits(llm, 0)
    large = len(llm.received[-1])
    llm.model_name, llm.context_window = "gpt-4o-mini", 1500
    mark = len(llm.received)
    await engine.achat("Smaller now.")
    _check_fits(llm, mark)
    assert len(llm.received[-1]) < large
    llm.model_name, llm.context_window = "gpt-4o", 2500
    mark = len(llm.received)
    await engine.achat("Large again.")
    _check_fits(llm, mark)
    assert llm.sent_tokens(-1) > llm.sent_tokens(mark - 1)
    assert len(memory.get_all()) == 2 * 22


def test_streaming_simple_engine(make_memory: MemoryFactory, make_llm: LLMFactory) -> None:
    llm = make_llm(context_window=1500)
    memory = make_memory(llm=llm)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    for turn in range(15):
        response = engine.stream_chat(f"Question {turn}. {LONG}")
        assert "".join(response.response_gen).startswith("reply")
    _check_fits(llm, 0)
    assert len(memory.get_all()) == 30


def test_swapping_settings_llm_refits_for_engines_built_from_settings(
    make_memory: MemoryFactory, make_llm: LLMFactory
) -> None:
    memory = make_memory()  # no llm: Settings.llm is the model
    large = make_llm(model_name="gpt-4o", context_window=3000)
    small = make_llm(model_name="gpt-4o-mini", context_window=1000)
    Settings.llm = large
    for turn in range(20):
        SimpleChatEngine.from_defaults(memory=memory).chat(f"Question {turn}. {LONG}")
    _check_fits(large, 0)
    before = len(large.received[-1])
    Settings.llm = small
    SimpleChatEngine.from_defaults(memory=memory).chat("Smaller?")
    _check_fits(small, 0)
    assert len(small.received[-1]) < before
    assert memory.model_source == "settings"
    Settings.llm = large
    SimpleChatEngine.from_defaults(memory=memory).chat("Larger again.")
    assert len(large.received[-1]) > len(small.received[-1])


def test_swapping_the_engines_llm_object_is_observed(
    make_memory: MemoryFactory, make_llm: LLMFactory
) -> None:
    large = make_llm(model_name="gpt-4o", context_window=3000)
    memory = make_memory(llm=large)
    engine = SimpleChatEngine.from_defaults(llm=large, memory=memory)
    for turn in range(20):
        engine.chat(f"Question {turn}. {LONG}")
    small = make_llm(model_name="gpt-4o-mini", context_window=1000)
    engine._llm = small  # the memory is not told: the first call shows which model ran
    engine.chat("First call on the small model.")
    engine.chat("Second call on the small model.")
    assert memory.model_source == "observed"
    assert small.sent_tokens(-1) <= small.input_budget
    assert len(small.received[-1]) < len(large.received[-1])


def test_mock_llm_engine_long_conversation(make_memory: MemoryFactory) -> None:
    llm = MockLLM(max_tokens=30)
    memory = make_memory(llm=llm)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    for turn in range(40):
        engine.chat(f"Question {turn}. {LONG}")
    report = memory.last_report
    assert report is not None
    assert report.decision == "compressed"
    assert report.tokens_after <= report.budget
    assert report.context_window == 3900
    assert len(memory.get_all()) == 80
