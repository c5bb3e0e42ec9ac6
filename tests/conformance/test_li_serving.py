"""LlamaIndex ``OpenAILike`` at self-hosted servers (vLLM, llama.cpp, LM Studio) and ``Ollama``:
the window is the served one, and a memory or a guard built on it sends nothing refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.llms.ollama import Ollama
from llama_index.llms.openai_like import OpenAILike

from llamaindex_session_migrator import FitToModelLLM
from llamaindex_session_migrator._models import window_for
from tests.conformance._ollama_api import OllamaEmulator
from tests.conformance._serving_api import RUNTIMES, ServingEmulator
from tests.conformance.conftest import assert_conforms

MODEL = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.fixture(params=RUNTIMES)
def server(request: pytest.FixtureRequest) -> Iterator[ServingEmulator]:
    emulator = ServingEmulator(request.param, MODEL, 6144).start()
    try:
        yield emulator
    finally:
        emulator.stop()


def _messages(turns: tuple[tuple[str, str], ...]) -> list[ChatMessage]:
    return [ChatMessage(role=r, content=t) for r, t in turns] + [
        ChatMessage(role="user", content="What next?")
    ]


def test_openai_like_takes_the_served_window(
    server: ServingEmulator, long_thread: tuple[tuple[str, str], ...]
) -> None:
    llm = OpenAILike(model=MODEL, api_base=server.base_url, api_key="t", is_chat_model=True)
    found = window_for(llm)
    assert found.context_window == 6144, found
    guard = FitToModelLLM(llm)
    assert guard.chat(_messages(long_thread)).message.content
    assert_conforms(server)


def test_ollama_sends_its_context_window_as_num_ctx(
    long_thread: tuple[tuple[str, str], ...],
) -> None:
    api = OllamaEmulator().start()
    try:
        llm = Ollama(model="llama3.1:8b", base_url=api.url, context_window=4096)
        assert window_for(llm).context_window == 4096
        guard = FitToModelLLM(llm)
        assert guard.chat(_messages(long_thread)).message.content
        assert api.requests, api.report()
        assert not api.refusals, api.report()
        assert api.requests[-1].body["options"]["num_ctx"] == 4096
    finally:
        api.stop()


def test_the_guard_catches_a_silent_cut(long_thread: tuple[tuple[str, str], ...]) -> None:
    """``Ollama(context_window=...)`` larger than the model was trained for: the server caps
    ``num_ctx`` and cuts the prompt silently; the guard sees ``prompt_eval_count`` below what
    it sent, warns once and fits the next calls to what the server read."""
    api = OllamaEmulator(trained=8_192).start()
    try:
        llm = Ollama(model="llama3.1:8b", base_url=api.url, context_window=32_768)
        guard = FitToModelLLM(llm)
        with pytest.warns(RuntimeWarning, match="cut the prompt silently"):
            assert guard.chat(_messages(long_thread)).message.content
        assert api.refusals, "the first request was cut (what the guard detects)"
        assert guard.model_window.max_input_tokens <= 8_192
        api.clear()
        assert guard.chat(_messages(long_thread)).message.content
        assert not api.refusals, api.report()
    finally:
        api.stop()


@pytest.mark.parametrize("memory_kind", ["SessionMigratorMemory", "FittedMemory"])
def test_the_memories_fit_the_served_window(
    server: ServingEmulator, long_thread: tuple[tuple[str, str], ...], memory_kind: str
) -> None:
    """A chat engine with either memory built on the bare ``OpenAILike``: the memory reads the
    window the server serves, so the request it makes is accepted (unguarded, the whole thread
    is refused: ``test_openai_like_takes_the_served_window``'s guard is not in play here)."""
    import asyncio

    from llama_index.core.chat_engine import SimpleChatEngine

    from tests.conformance._li import fitted_memory, fitted_memory_api

    llm = OpenAILike(model=MODEL, api_base=server.base_url, api_key="t", is_chat_model=True)
    memory: Any = (
        fitted_memory(llm, long_thread)
        if memory_kind == "SessionMigratorMemory"
        else asyncio.run(fitted_memory_api(llm, long_thread))
    )
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    assert engine.chat("What did we decide?").response
    assert server.requests, server.report()
    assert not server.refusals, server.report()


def test_a_memory_on_ollama_fits_its_context_window(
    long_thread: tuple[tuple[str, str], ...],
) -> None:
    """``SessionMigratorMemory`` built on ``Ollama(context_window=4096)``: the chat engine's
    request fits the 4,096 tokens the class sends as ``num_ctx``, so nothing is cut silently."""
    from llama_index.core.chat_engine import SimpleChatEngine

    from tests.conformance._li import fitted_memory

    api = OllamaEmulator().start()
    try:
        llm = Ollama(model="llama3.1:8b", base_url=api.url, context_window=4096)
        engine = SimpleChatEngine.from_defaults(llm=llm, memory=fitted_memory(llm, long_thread))
        assert engine.chat("What did we decide?").response
        assert api.requests, api.report()
        assert not api.refusals, api.report()  # (Ollama's "refusal": a silent cut)
    finally:
        api.stop()
