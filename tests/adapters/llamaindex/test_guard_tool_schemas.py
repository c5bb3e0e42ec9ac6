"""``FitToModelLLM`` counts the tool schemas the wrapped LLM sends: llama-index-llms-openai's
``_prepare_chat_with_tools`` adds ``strict`` and ``additionalProperties`` to each tool, which the
tool's own ``to_openai_tool()`` leaves out (an AgentWorkflow's handoff went over the window by
them and the call ids)."""

from __future__ import annotations

import json

from llama_index.core.llms import ChatMessage
from llama_index.core.tools import FunctionTool
from llama_index.llms.openai import OpenAI

from llamaindex_session_migrator import FitToModelLLM
from session_migrator import TOKENS_PER_TOOL, TiktokenCounter


def lookup(order: str) -> str:
    """Look an order up."""
    return order


def test_tools_are_counted_as_the_wrapped_llm_prepares_them() -> None:
    llm = OpenAI(model="gpt-4", api_key="test", max_tokens=512)
    guard = FitToModelLLM(llm)
    tools = [FunctionTool.from_defaults(lookup)]
    guard.fit_messages([ChatMessage(role="user", content="Where is order 42?")], tools)
    sent = llm._prepare_chat_with_tools(tools)["tools"]
    assert sent[0]["function"]["parameters"]["additionalProperties"] is False
    c = TiktokenCounter("cl100k_base")
    expected = sum(c.count_text(json.dumps(t, ensure_ascii=False)) + TOKENS_PER_TOOL for t in sent)
    fit = guard._fitter.core.last_fit
    assert fit is not None
    assert fit.schema_tokens == expected
    own = tools[0].metadata.to_openai_tool()
    assert expected > c.count_text(json.dumps(own, ensure_ascii=False)) + TOKENS_PER_TOOL
