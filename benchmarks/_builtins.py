"""The frameworks' built-ins, and the lower bound, on the same input and tokenizer.

A built-in is stateless: every call is a first call ("cold").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from benchmarks._harness import Context, Record, Samples, repeat, timed
from session_migrator import Message
from session_migrator.counting._counter import (
    REPLY_PRIMING,
    TOKENS_PER_MESSAGE,
    TOKENS_PER_NAME,
    TOKENS_PER_TOOL_CALL,
)
from session_migrator.counting._encodings import get_encoding
from session_migrator.counting._tokens import TiktokenCounter

__all__ = ["llamaindex_buffer", "raw_tiktoken", "trim_messages_cell"]

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def _tiktoken_counter() -> Callable[[list[Any]], int]:
    """A LangChain ``token_counter`` counting the OpenAI chat format with tiktoken (o200k_base),
    as ``ChatOpenAI.get_num_tokens_from_messages`` does and as this project counts (with its
    constants): a fixed cost per message, its role, content, name, tool calls and tool call id,
    and a fixed cost for the reply.
    """
    enc = get_encoding("o200k_base")
    assert enc is not None
    encode = enc.encode_ordinary

    def count(messages: list[Any]) -> int:
        total = REPLY_PRIMING
        for m in messages:
            content = m.content if isinstance(m.content, str) else str(m.content)
            role = _ROLES.get(m.type, m.type)
            total += TOKENS_PER_MESSAGE + len(encode(role)) + len(encode(content))
            if m.name:
                total += TOKENS_PER_NAME + len(encode(m.name))
            for call in getattr(m, "tool_calls", None) or ():
                arguments = json.dumps(call["args"])
                total += TOKENS_PER_TOOL_CALL + len(encode(call["name"])) + len(encode(arguments))
            if getattr(m, "tool_call_id", None):
                total += len(encode(m.tool_call_id))
        return total

    return count


def trim_messages_cell(counter_name: str) -> Callable[[Context], Iterator[Record]]:
    def work(ctx: Context) -> Iterator[Record]:
        from langchain_core.messages import trim_messages
        from langchain_core.messages.utils import count_tokens_approximately

        from langchain_session_migrator import messages_to_core

        counter = _tiktoken_counter() if counter_name == "tiktoken" else count_tokens_approximately

        def call() -> list[Any]:
            return trim_messages(
                ctx.lc,
                max_tokens=ctx.budget,
                token_counter=counter,
                strategy="last",
                start_on="human",
                include_system=True,
            )

        def one(r: int) -> tuple[Samples, Sequence[Message]]:
            del r
            seconds, out = timed(call)
            return {"cold": [seconds]}, messages_to_core(out)

        yield from repeat(ctx, one, memory=call)

    return work


def llamaindex_buffer(summary: bool) -> Callable[[Context], Iterator[Record]]:
    def work(ctx: Context) -> Iterator[Record]:
        from llama_index.core.memory import ChatMemoryBuffer, ChatSummaryMemoryBuffer

        from llamaindex_session_migrator import from_chat_messages

        enc = get_encoding("o200k_base")
        assert enc is not None

        def build() -> Any:
            if summary:
                return ChatSummaryMemoryBuffer.from_defaults(
                    chat_history=list(ctx.li),
                    llm=None,
                    token_limit=ctx.budget,
                    tokenizer_fn=enc.encode,
                )
            return ChatMemoryBuffer.from_defaults(
                chat_history=list(ctx.li), token_limit=ctx.budget, tokenizer_fn=enc.encode
            )

        def one(r: int) -> tuple[Samples, Sequence[Message]]:
            del r
            memory = build()
            seconds, out = timed(memory.get)
            return {"cold": [seconds]}, from_chat_messages(out)

        def whole() -> None:
            build().get()

        yield from repeat(ctx, one, memory=whole)

    return work


def raw_pass(ctx: Context) -> Callable[[], int]:
    """The lower bound: one tiktoken pass over every message's text (and call arguments),
    counted as the core counts a text (:meth:`TiktokenCounter.count_text`: the length of
    tiktoken's buffer of token ids, the cheapest count tiktoken has), uncached.
    """
    count = TiktokenCounter("o200k_base").count_text
    texts = [m.text for m in ctx.messages] + [
        c.arguments for m in ctx.messages for c in m.tool_calls
    ]

    def call() -> int:
        total = 0
        for text in texts:
            total += count(text)
        return total

    return call


def raw_tiktoken(ctx: Context) -> Iterator[Record]:
    call = raw_pass(ctx)

    def one(r: int) -> tuple[Samples, None]:
        del r
        seconds, _ = timed(call)
        return {"cold": [seconds]}, None

    yield from repeat(ctx, one, memory=call)
