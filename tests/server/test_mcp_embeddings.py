"""``session-migrator mcp --embeddings local``: the server's fits use the local embedding model
(all-MiniLM-L6-v2 in numpy; ``make test`` installs it), driven by the ``mcp`` SDK's own stdio
client in a subprocess."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from tests._car import NOTE, car_conversation

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

from mcp.client.session import ClientSession
from mcp_types import CallToolResult, TextContent

from session_migrator.mcp_server import SessionTools
from session_migrator.recall._local import local_embeddings

Connect = Callable[..., AbstractAsyncContextManager[ClientSession]]


def _ok(result: CallToolResult) -> dict[str, Any]:
    if result.is_error:
        block = result.content[0]
        raise AssertionError(block.text if isinstance(block, TextContent) else block)
    data = result.structured_content
    assert isinstance(data, dict)
    return data


def _has_car(answer: dict[str, Any]) -> bool:
    return any("automobile" in str(m.get("content") or "") for m in answer["messages"])


# the window: about a quarter of the conversation's 854 tokens (o200k_base)
FIT = {"strategy": "recall", "context_window": 240, "reserve_output_tokens": 0}


async def test_the_server_option_gives_its_fits_hybrid_recall(
    connect: Connect, tmp_path: Path
) -> None:
    messages = json.dumps(car_conversation())
    store = f"sqlite:///{tmp_path / 'mcp.db'}"
    migrate = {"messages_json": messages, "target_model": "gpt-4o", **FIT}
    async with connect("--store", store) as session:
        plain = _ok(await session.call_tool("migrate_session", migrate))
    async with connect("--store", store, "--embeddings", "local") as session:
        hybrid = _ok(await session.call_tool("migrate_session", migrate))
        _ok(
            await session.call_tool(
                "session_append", {"session_id": "car", "messages_json": messages}
            )
        )
        context = _ok(
            await session.call_tool(
                "session_context", {"session_id": "car", "model": "gpt-4o", **FIT}
            )
        )
    assert not _has_car(plain)  # bm25 alone: no word in common with the question
    assert not any(NOTE in n for n in plain["report"]["notes"])
    assert _has_car(hybrid)
    assert NOTE in hybrid["report"]["notes"][-1]
    assert hybrid["report"]["fallbacks"] == []
    assert _has_car(context)
    assert NOTE in context["report"]["notes"][-1]


def test_session_tools_take_the_model_and_keep_the_vectors_in_the_store() -> None:
    tools = SessionTools(store="memory://", embeddings=local_embeddings())
    try:
        tools.session_append("car", car_conversation())
        first = tools.session_context(
            "car", "gpt-4o", "recall", reserve_output_tokens=0, context_window=240
        )
        assert _has_car(first)
        ids = [m.id for m in tools.store.load("car")]
        stored = tools.store.get_vectors("car", "all-MiniLM-L6-v2", ids)
        assert len(stored) >= 20
    finally:
        tools.close()
