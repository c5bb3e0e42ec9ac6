"""``recall_scope`` on the MCP tools: over stdio with the SDK's own client, and on
:class:`SessionTools` directly."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from session_migrator.mcp._tools import ArgumentError, SessionTools
from tests.core.test_related import QUESTION, filled_sqlite

Connect = Callable[..., AbstractAsyncContextManager[Any]]


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return filled_sqlite(tmp_path / "mcp.db")


def _excerpt(answer: dict[str, Any]) -> str:
    found = [
        m["content"]
        for m in answer["messages"]
        if m["role"] == "system" and "from other sessions" in m["content"]
    ]
    assert len(found) == 1, answer["messages"]
    return str(found[0])


async def test_session_context_and_migrate_session_recall_across_sessions(
    connect: Connect, store_url: str
) -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    async with connect("--store", store_url) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        context = await session.call_tool(
            "session_context", {"session_id": "today", "model": "gpt-4o", "recall_scope": "user"}
        )
        plain = await session.call_tool(
            "session_context", {"session_id": "today", "model": "gpt-4o"}
        )
        migrated = await session.call_tool(
            "migrate_session",
            {
                "messages_json": [{"role": "user", "content": QUESTION}],
                "target_model": "gpt-4o",
                "recall_scope": "workspace",
                "session_id": "today",
            },
        )
        refused = await session.call_tool(
            "session_context", {"session_id": "today", "model": "gpt-4o", "recall_scope": "all"}
        )
        unnamed = await session.call_tool(
            "migrate_session",
            {"messages_json": "[]", "target_model": "gpt-4o", "recall_scope": "user"},
        )
    for name in ("session_context", "migrate_session"):
        scope = tools[name].input_schema["properties"]["recall_scope"]
        assert scope["enum"] == ["session", "user", "workspace"]
        assert scope["default"] == "session"
    assert "session_id" in tools["migrate_session"].input_schema["properties"]

    data = context.structured_content
    assert not context.is_error
    assert isinstance(data, dict)
    text = _excerpt(data)
    assert 'From your session "trip-planning" on 2026-11-22 (9 days ago):' in text
    assert "Hotel Bobby" not in text  # another user's
    assert "trip-1" in data["report"]["related_ids"]
    assert data["tokens_after"] <= data["budget"]

    same = plain.structured_content
    assert isinstance(same, dict)
    assert same["report"]["related_ids"] == {}
    assert len(same["messages"]) == 4

    across = migrated.structured_content
    assert not migrated.is_error
    assert isinstance(across, dict)
    assert "ann-work" not in across["report"]["related_ids"]  # another workspace
    assert "Hotel Sakura Kyoto" in _excerpt(across)

    assert refused.is_error
    assert "recall_scope" in refused.content[0].text
    assert unnamed.is_error
    assert "needs session_id" in unnamed.content[0].text


def test_session_tools_keep_one_view_per_scope(store_url: str) -> None:
    tools = SessionTools(store=store_url)
    try:
        user = tools.session_context("today", "gpt-4o", recall_scope="user")
        plain = tools.session_context("today", "gpt-4o")
        again = tools.session_context("today", "gpt-4o", recall_scope="user")
        assert user["report"]["related_ids"]
        assert not plain["report"]["related_ids"]
        assert again == user
        with pytest.raises(ArgumentError, match="unknown recall scope"):
            tools.migrate_session("[]", "gpt-4o", recall_scope="team", session_id="today")
        anon = tools.migrate_session(
            [{"role": "user", "content": QUESTION}],
            "gpt-4o",
            recall_scope="user",
            session_id="bob-trip",
        )
        assert anon["report"]["related_ids"] == {}  # bob's only session: nothing of ann's
    finally:
        tools.close()
