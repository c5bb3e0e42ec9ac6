"""LlamaIndex on the emulators: every surface x the provider LLMs as users configure them.

Surfaces (``_li.SURFACES``): SimpleChatEngine (chat, stream_chat, achat), ContextChatEngine and
CondensePlusContextChatEngine over a tiny ``VectorStoreIndex`` with ``MockEmbedding``,
FunctionAgent (a tool loop), ReActAgent, an AgentWorkflow with a handoff, ``structured_predict``
and ``complete``. LLMs (``_li.LLMS``): ``OpenAI(model="gpt-4")`` with ``max_tokens`` unset (the
default) and with ``max_tokens=512``, ``OpenAI(model="gpt-3.5-turbo-0613")`` (4,096 tokens)
unset, and ``Anthropic(model="claude-3-7-sonnet-20250219")`` with its defaults.

The guard as docs/llamaindex-guard.md shows it: the LLM wrapped in ``FitToModelLLM``, the thread
in a ``SessionMigratorMemory`` built on that LLM (120 turns: over gpt-4's window; for Claude,
over 200,000 tokens). A cell passes when every request is accepted and the user gets the
answer; its unguarded half (the bare LLM, a memory that hands the whole thread out, or the whole
thread in the prompt) must be refused.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance._anthropic_api import AnthropicEmulator
from tests.conformance._http import Emulator
from tests.conformance._li import (
    ANTHROPIC_UPSTREAM,
    LLMS,
    SURFACES,
    VERDICT,
    fitted_memory,
    fitted_memory_api,
    guarded,
    lookup,
    whole_memory,
)
from tests.conformance._openai_api import OpenAIEmulator
from tests.conformance.conftest import assert_conforms, assert_refused_without_guard, guard_note

# stream_chat runs the request in a thread of LlamaIndex's: a refusal there is reported by the
# emulator's record (the cell's assertions), not as pytest's thread-exception warning. llama-index
# workflows inspect agents with inspect.getmembers, which reads pydantic's deprecated instance
# attributes: exactly those warnings, raised in ``inspect``, are ignored (as tests/adapters do).
pytestmark = [
    # the older anthropic SDKs (make test-lowest) warn that the dated Claude models retire
    pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20:inspect"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211:inspect"),
    # ReActAgent's own step (llama-index-core) calls ctx.is_running
    pytest.mark.filterwarnings("ignore:is_running called from within a step:DeprecationWarning"),
]


def _api(provider: str, openai_api: OpenAIEmulator, anthropic_api: AnthropicEmulator) -> Emulator:
    return openai_api if provider == "openai" else anthropic_api


def _url(api: Emulator) -> str:
    return api.base_url if isinstance(api, OpenAIEmulator | AnthropicEmulator) else api.url


def _cells() -> list[Any]:
    cells = []
    for llm_name in LLMS:
        for surface in SURFACES:
            marks = []
            if llm_name.startswith("anthropic"):
                marks.append(ANTHROPIC_UPSTREAM)
            cells.append(pytest.param(llm_name, surface, marks=marks, id=f"{llm_name}-{surface}"))
    return cells


@pytest.mark.parametrize(("llm_name", "surface"), _cells())
def test_guarded_surface(
    openai_api: OpenAIEmulator,
    anthropic_api: AnthropicEmulator,
    long_thread: Any,
    claude_thread: Any,
    llm_name: str,
    surface: str,
) -> None:
    provider, build = LLMS[llm_name]
    run, replies, takes_memory = SURFACES[surface]
    api = _api(provider, openai_api, anthropic_api)
    turns = claude_thread if provider == "anthropic" else long_thread
    url = _url(api)

    bare = build(url)
    api.script(*replies)
    failure = ""
    try:
        run(bare, whole_memory(bare, turns) if takes_memory else None, turns)
    except Exception as exc:  # the provider's 400 as the LLM class raises it, or LlamaIndex's own
        failure = f"{type(exc).__name__}: {exc}"
    # ContextChatEngine's response synthesis refuses to start on an overflowing history itself
    if "available context size" not in failure:
        assert api.refusals, f"{failure}\n{api.report()}"
        assert_refused_without_guard(api)
    api.clear()

    api.script(*replies)
    llm = guarded(build(url))
    try:
        memory = fitted_memory(llm, turns) if takes_memory else None
        answer = run(llm, memory, turns)
    except Exception as exc:
        note = f"{guard_note(llm)}\n{api.report()}"
        raise AssertionError(f"{type(exc).__name__}: {exc}\n{note}") from exc
    assert_conforms(api, at_least=len(replies))
    expected = VERDICT["next_step"] if surface == "structured_predict" else "Order 42 shipped."
    assert expected in answer, f"{answer!r}\n{api.report()}"
    if takes_memory and memory is not None:
        assert len(memory.get_all()) >= len(turns) + 2, "the memory lost the thread"


@pytest.mark.parametrize("llm_name", ["openai gpt-4 defaults", "openai gpt-4 max_tokens=512"])
def test_function_agent_with_fitted_memory(
    openai_api: OpenAIEmulator, long_thread: Any, llm_name: str
) -> None:
    """The ``Memory``-API drop-in (``FittedMemory``) under a FunctionAgent's tool loop."""
    import asyncio

    from llama_index.core.agent.workflow import FunctionAgent

    _, build = LLMS[llm_name]
    replies = SURFACES["FunctionAgent"][1]
    openai_api.script(*replies)
    llm = guarded(build(openai_api.base_url))

    async def main() -> str:
        memory = await fitted_memory_api(llm, long_thread)
        agent = FunctionAgent(tools=[lookup], llm=llm)
        return str(await agent.run(user_msg="Where is order 42?", memory=memory))

    try:
        answer = asyncio.run(main())
    except Exception as exc:
        note = f"{guard_note(llm)}\n{openai_api.report()}"
        raise AssertionError(f"{type(exc).__name__}: {exc}\n{note}") from exc
    assert_conforms(openai_api, at_least=2)
    assert "Order 42 shipped." in answer


def test_what_llamaindex_llms_send(
    openai_api: OpenAIEmulator, anthropic_api: AnthropicEmulator
) -> None:
    """The fields each LLM class puts in the body (``_li``'s docstring)."""
    from llama_index.core.llms import ChatMessage

    hello = [
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(role="user", content="Hi"),
    ]
    for name in ("openai gpt-4 defaults", "openai gpt-4 max_tokens=512"):
        LLMS[name][1](openai_api.base_url).chat(hello)
    "".join(
        r.delta or ""
        for r in LLMS["openai gpt-4 defaults"][1](openai_api.base_url).stream_chat(hello)
    )
    unset, set512, streamed = (r.body for r in openai_api.requests)
    assert "max_tokens" not in unset
    assert "max_completion_tokens" not in unset
    assert set512["max_tokens"] == 512
    assert streamed["stream"] is True
    assert "stream_options" not in streamed
    assert_conforms(openai_api, at_least=3)


@ANTHROPIC_UPSTREAM
def test_what_llamaindex_anthropic_sends(anthropic_api: AnthropicEmulator) -> None:
    """The Anthropic LLM sends its default ``max_tokens`` (512) and the system prompt apart."""
    from llama_index.core.llms import ChatMessage

    hello = [
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(role="user", content="Hi"),
    ]
    LLMS["anthropic claude-3-7 defaults"][1](anthropic_api.base_url).chat(hello)
    body = anthropic_api.requests[-1].body
    assert body["max_tokens"] == 512
    assert body["system"] in ("Be brief.", [{"type": "text", "text": "Be brief."}])
