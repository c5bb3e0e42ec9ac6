"""A fake function-calling LLM that records every request it receives, and an independent check
of a recorded request: its size counted with tiktoken itself (OpenAI's documented chat format:
3 tokens per message, its role and text, 3 to prime the reply; tool calls and tool schemas as
their JSON) plus ``num_output``, against the LLM's own window; and its shape against what the
OpenAI and Anthropic chat APIs accept.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import llama_index.core
import pytest
import tiktoken
from llama_index.core.base.llms.types import (
    ChatMessage,
    CompletionResponse,
    LLMMetadata,
    MessageRole,
    ToolCallBlock,
)
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.mock import MockFunctionCallingLLM
from pydantic import Field, PrivateAttr


def _encoding() -> tiktoken.Encoding:
    cache = Path(llama_index.core.__file__).parent / "_static" / "tiktoken_cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        return tiktoken.get_encoding("o200k_base")


ENCODING = _encoding()


def tokens(text: str) -> int:
    return len(ENCODING.encode(text, disallowed_special=()))


@dataclass
class Request:
    """One request as the model received it."""

    messages: list[ChatMessage] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)  # each tool's schema JSON
    prompt: str | None = None  # a completion request

    def count(self) -> int:
        """Input tokens, counted here without the library."""
        if self.prompt is not None:
            return tokens(self.prompt) + 3
        total = 3  # the reply priming
        for m in self.messages:
            total += 3 + tokens(str(m.role.value))
            for block in m.blocks:
                if isinstance(block, ToolCallBlock):
                    args = block.tool_kwargs
                    text = args if isinstance(args, str) else json.dumps(args)
                    total += tokens(block.tool_name) + tokens(text) + 3
                    total += tokens(block.tool_call_id or "")
                elif hasattr(block, "text"):
                    total += tokens(block.text)
            call_id = m.additional_kwargs.get("tool_call_id")
            if isinstance(call_id, str):
                total += tokens(call_id)
        return total + sum(tokens(t) for t in self.tools)


def tool_schema(tool: Any) -> str:
    if isinstance(tool, dict):
        return json.dumps(tool)
    return json.dumps(tool.metadata.to_openai_tool())


def shape_problems(messages: Sequence[ChatMessage]) -> list[str]:
    """What OpenAI or Anthropic would refuse: system messages only at the start; the first
    message after them from the user; an assistant's tool calls answered right after it, each
    once; no tool result without the call just before it."""
    problems: list[str] = []
    i = 0
    while i < len(messages) and messages[i].role == MessageRole.SYSTEM:
        i += 1
    rest = list(messages[i:])
    if not rest or rest[0].role != MessageRole.USER:
        problems.append("the first message after the system messages is not a user message")
    open_calls: list[str] = []
    for k, m in enumerate(rest):
        if m.role == MessageRole.SYSTEM:
            problems.append(f"system message at {i + k}, after the start")
        if m.role == MessageRole.TOOL:
            call_id = m.additional_kwargs.get("tool_call_id")
            if call_id not in open_calls:
                problems.append(f"tool result {call_id} without its call just before")
            else:
                open_calls.remove(call_id)
            continue
        if open_calls:
            problems.append(f"calls {open_calls} not answered before message {i + k}")
            open_calls = []
        if m.role == MessageRole.ASSISTANT:
            open_calls = [b.tool_call_id or "" for b in m.blocks if isinstance(b, ToolCallBlock)]
    if open_calls:
        problems.append(f"calls {open_calls} never answered")
    return problems


class FakeFunctionLLM(MockFunctionCallingLLM):
    """llama-index-core's mock function-calling LLM with a window of our choosing, answering
    through ``_respond(messages, **kwargs)`` (each fake of the suites defines it)."""

    model_name: str = "gpt-4o-mini"
    context_window: int = 4096
    num_output: int = 256
    _calls: int = PrivateAttr(default=0)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        self.response_generator = self._respond

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.num_output,
            model_name=self.model_name,
            is_chat_model=True,
            is_function_calling_model=True,
        )

    def _respond(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        raise NotImplementedError


class RecordingLLM(FakeFunctionLLM):
    """A fake chat model with tools, of any window: records each request; calls
    ``get_weather`` when the newest user message asks about the weather, hands off to
    ``handoff_to`` when it says "clerk" and a handoff tool is offered; else replies
    ``reply_words`` words."""

    reply_words: int = 30
    handoff_to: str | None = None
    requests: list[Request] = Field(default_factory=list, exclude=True)

    def _respond(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        tools = list(kwargs.get("tools") or [])
        self.requests.append(
            Request([m.model_copy(deep=True) for m in messages], [tool_schema(t) for t in tools])
        )
        self._calls += 1
        last = messages[-1] if messages else None
        text = (last.content or "") if last is not None else ""
        names = {getattr(getattr(t, "metadata", None), "name", None) for t in tools}
        if last is not None and last.role == MessageRole.USER:
            call: tuple[str, dict[str, Any]] | None = None
            if "clerk" in text and self.handoff_to and "handoff" in names:
                call = ("handoff", {"to_agent": self.handoff_to, "reason": "paperwork"})
            elif "weather" in text and "get_weather" in names:
                call = ("get_weather", {"city": text.rsplit(" ", 1)[-1].strip("?") or "Paris"})
            if call is not None:
                block = ToolCallBlock(
                    tool_call_id=f"call-{self.model_name}-{self._calls}",
                    tool_name=call[0],
                    tool_kwargs=call[1],
                )
                return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])
        words = " ".join(["word"] * self.reply_words)
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"reply {self._calls}: {words}")

    def _record_prompt(self, prompt: str) -> CompletionResponse:
        self.requests.append(Request(prompt=prompt))
        return CompletionResponse(text="completed")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return self._record_prompt(prompt)

    @llm_completion_callback()
    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        return self._record_prompt(prompt)

    @llm_completion_callback()
    async def astream_complete(  # type: ignore[override]
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> AsyncGenerator[CompletionResponse, None]:
        response = self._record_prompt(prompt)

        async def gen() -> AsyncGenerator[CompletionResponse, None]:
            yield CompletionResponse(text=response.text, delta=response.text)

        return gen()

    def problems(self) -> list[str]:
        """Every recorded request over the window (with ``num_output``) or of a bad shape."""
        out: list[str] = []
        for k, request in enumerate(self.requests):
            size = request.count() + self.num_output
            if size > self.context_window:
                out.append(
                    f"{self.model_name} request {k}: {request.count()} + {self.num_output} "
                    f"> {self.context_window}"
                )
            if request.prompt is None:
                out.extend(
                    f"{self.model_name} request {k}: {p}" for p in shape_problems(request.messages)
                )
        return out
