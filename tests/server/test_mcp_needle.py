"""The needle task over MCP: an agent host keeps its conversation in the MCP server
(``session_append``, ``session_context``), sends the fitted context to the model (the real
``openai`` client on the needle emulator, a 4,096-token window), and offers the model the
server's ``read_context`` tool. The line the fit cut out of a large tool output comes back through
the tool, and the model answers with it; without the tool it cannot (see
:mod:`tests.conformance._needle` for the task and the emulated model).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from openai import OpenAI

from tests.conformance._needle import (
    MODEL,
    NEEDLE,
    QUESTIONS,
    NeedleEmulator,
    build_log,
    status,
)
from tests.server.conftest import Connect

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

SESSION = "needle"
LOCAL_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "fetch_log",
            "description": "Fetch a log by name.",
            "parameters": {"type": "object", "properties": {"log": {"type": "string"}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "service_status",
            "description": "The health of a service.",
            "parameters": {"type": "object", "properties": {"service": {"type": "string"}}},
        },
    },
]


def _sendable(message: dict[str, Any]) -> dict[str, Any]:
    """A fitted message as the chat API takes it (no store id)."""
    return {
        k: v for k, v in message.items() if k in ("role", "content", "tool_calls", "tool_call_id")
    }


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    return data


async def _host(connect: Connect, url: str, offer_read_context: bool) -> list[tuple[int, str]]:
    """Each of :data:`QUESTIONS` through the host loop: (model calls, the answer)."""
    model = OpenAI(base_url=f"{url}/v1", api_key="test")
    out: list[tuple[int, str]] = []
    async with connect() as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        tools = list(LOCAL_TOOLS)
        if offer_read_context:  # the MCP tool as the host offers it (it fills in session_id)
            schema = dict(listed["read_context"].input_schema)
            schema["properties"] = {
                k: v for k, v in schema["properties"].items() if k != "session_id"
            }
            schema["required"] = [r for r in schema.get("required", []) if r != "session_id"]
            tools.append(
                {
                    "type": "function",
                    "function": {
                        "name": "read_context",
                        "description": listed["read_context"].description,
                        "parameters": schema,
                    },
                }
            )

        async def append(*messages: dict[str, Any]) -> None:
            args = {"session_id": SESSION, "messages_json": json.dumps(list(messages))}
            _data(await session.call_tool("session_append", args))

        await append({"role": "system", "content": "You are an on-call engineer's assistant."})
        for question in QUESTIONS:
            await append({"role": "user", "content": question})
            for calls in range(1, 7):
                context = _data(
                    await session.call_tool(
                        "session_context", {"session_id": SESSION, "model": MODEL}
                    )
                )
                reply = (
                    model.chat.completions.create(
                        model=MODEL,
                        messages=[_sendable(m) for m in context["messages"]],  # type: ignore[misc]
                        tools=tools,  # type: ignore[arg-type]
                    )
                    .choices[0]
                    .message
                )
                if not reply.tool_calls:
                    await append({"role": "assistant", "content": reply.content or ""})
                    out.append((calls, reply.content or ""))
                    break
                await append(reply.model_dump(include={"role", "content", "tool_calls"}))
                for call in reply.tool_calls:
                    args = json.loads(call.function.arguments)
                    if call.function.name == "read_context":
                        page = _data(
                            await session.call_tool("read_context", {"session_id": SESSION, **args})
                        )
                        result = page["text"]
                    elif call.function.name == "fetch_log":
                        result = build_log()
                    else:
                        result = status(args["service"])
                    await append({"role": "tool", "tool_call_id": call.id, "content": result})
            else:
                raise AssertionError(f"no answer to {question!r} in 6 model calls")
    return out


def test_the_needle_comes_back_through_mcp(connect: Connect, needle_api: NeedleEmulator) -> None:
    turns = asyncio.run(_host(connect, needle_api.url, offer_read_context=True))
    calls, answer = turns[-1]
    assert NEEDLE in answer, turns
    assert calls == 2  # the question, read_context, the answer: one call more than a direct hit
    assert all(n <= 2 for n, _ in turns), turns
    assert not needle_api.refusals, needle_api.report()


def test_without_the_tool_the_line_never_reaches_the_model(
    connect: Connect, needle_api: NeedleEmulator
) -> None:
    turns = asyncio.run(_host(connect, needle_api.url, offer_read_context=False))
    assert NEEDLE not in turns[-1][1], turns
    assert not any(NEEDLE in sent for sent in needle_api.sent())
