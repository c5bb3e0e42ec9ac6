"""Anthropic's prompt cache over a whole conversation through the LlamaIndex guard:
``FitToModelLLM`` around the real ``llama_index.llms.anthropic.Anthropic``, against the emulator
of the Messages API, which reads and writes its cache as the service does (breakpoints, a
20-block look-back, 1,024 tokens at least).

Past the budget the guard keeps the conversation's stable cut and marks its end with a
``CachePoint`` (sent as ``cache_control``); without the mark nothing is read. (The LlamaIndex
Anthropic class cannot build a request with anthropic 2.x, an upstream defect: these run on the
lowest versions the extras allow, ``make test-lowest``.)
"""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.llms import ChatMessage
from llama_index.llms.anthropic import Anthropic

from llamaindex_session_migrator import FitToModelLLM
from tests.conformance._anthropic_api import AnthropicEmulator
from tests.conformance._http import Text
from tests.conformance._li import ANTHROPIC_UPSTREAM

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

MODEL = "claude-3-7-sonnet-20250219"
TURNS = 90


def _converse(api: AnthropicEmulator, marks: bool) -> list[Any]:
    llm = Anthropic(model=MODEL, base_url=api.url, api_key="test", max_tokens=1_000)
    # a small budget, so that the conversation goes past it within the test
    window = llm.metadata.context_window
    guard = FitToModelLLM(llm, reserve_tokens=window - 5_000)
    conversation = [ChatMessage(role="system", content="You are a logistics assistant.")]
    for n in range(TURNS):
        api.script(Text(f"Order {n} leaves the north warehouse on day {n % 7}; dock {n % 5}. " * 3))
        conversation.append(ChatMessage(role="user", content=f"Where is order {n} now?"))
        if marks:
            answer = guard.chat(conversation)
        else:
            fitted = guard._fitter.fit(conversation, guard.model_window, provider="example")
            answer = llm.chat(fitted or conversation)
        conversation.append(ChatMessage(role="assistant", content=answer.message.content))
    assert not api.refusals
    assert guard.last_report is not None
    assert guard.last_report.decision == "compressed"  # (past the budget)
    return api.accepted


def _marked(request: Any) -> bool:
    return any(
        isinstance(b, dict) and b.get("cache_control")
        for m in request.body["messages"]
        for b in (m["content"] if isinstance(m["content"], list) else [])
    )


def _read_share(requests: list[Any]) -> float:
    """The share of the prompt tokens read from the cache, over the requests past the budget
    (a request that fits goes out untouched: ``Anthropic(cache_idx=...)`` marks those)."""
    past = requests[-(len(requests) // 2) :]
    return sum(r.cache_read for r in past) / sum(r.prompt_tokens for r in past)


@ANTHROPIC_UPSTREAM
def test_the_guard_marks_where_the_cache_can_read(anthropic_api: AnthropicEmulator) -> None:
    requests = _converse(anthropic_api, marks=True)
    assert all(_marked(r) for r in requests[-(len(requests) // 2) :])  # (past the budget)
    read = _read_share(requests)
    assert read >= 0.6, f"only {read:.2f} of the prompt read from the cache"


@ANTHROPIC_UPSTREAM
def test_without_the_mark_nothing_is_read(anthropic_api: AnthropicEmulator) -> None:
    assert _read_share(_converse(anthropic_api, marks=False)) == 0.0
