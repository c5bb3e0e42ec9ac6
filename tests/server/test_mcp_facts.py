"""A user's facts over MCP (stdio, the ``mcp`` SDK's client): listed, set and deleted with
``user_facts_list``, ``user_fact_set`` and ``user_fact_delete`` (issue 43)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

from session_migrator import Message, SessionFitter
from session_migrator.store import open_store, user_facts
from tests.server.test_mcp_stdio import Connect, _error, _ok, _text


async def test_the_facts_a_user_stated_are_listed_edited_and_deleted(
    connect: Connect, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    with open_store(url) as store:
        fitter = SessionFitter("mon", store=store, metadata={"user_id": "ann"}, user_facts=True)
        fitter.append([Message("user", "I'm vegetarian, and my daughter is allergic to peanuts.")])
    async with connect("--store", url) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        listed = await session.call_tool("user_facts_list", {"user_id": "ann"})
        kept = _ok(
            await session.call_tool(
                "user_fact_set",
                {"user_id": "ann", "key": "i am vegetarian", "text": "I eat fish now."},
            )
        )
        gone = await session.call_tool(
            "user_fact_delete", {"user_id": "ann", "key": "daughter allergic to peanuts"}
        )
        again = _ok(
            await session.call_tool(
                "user_fact_delete", {"user_id": "ann", "key": "daughter allergic to peanuts"}
            )
        )
        other = _ok(await session.call_tool("user_facts_list", {"user_id": "bob"}))
        empty = _error(await session.call_tool("user_fact_set", {"user_id": "ann", "key": "k"}))
    data = _ok(listed)
    line, body = _text(listed).split("\n", 1)
    assert line == "2 fact(s) of user 'ann'"
    assert json.loads(body) == data  # the answer's JSON, for clients that read only text
    assert data["count"] == 2
    assert {f["key"] for f in data["facts"]} == {
        "i am vegetarian",
        "daughter allergic to peanuts",
    }
    assert all(f["source_id"] and f["stated_at"] for f in data["facts"])
    assert kept["fact"]["text"] == "I eat fish now."
    assert kept["fact"]["source_id"] is None
    assert _ok(gone)["deleted"] is True
    assert again["deleted"] is False
    assert other == {"user_id": "bob", "count": 0, "facts": []}
    assert "text" in empty
    annotations = {name: tools[name].annotations for name in tools if "fact" in name}
    assert annotations["user_facts_list"].read_only_hint is True  # type: ignore[union-attr]
    assert annotations["user_fact_delete"].destructive_hint is True  # type: ignore[union-attr]
    assert annotations["user_fact_set"].destructive_hint is False  # type: ignore[union-attr]
    with open_store(url) as store:
        assert [(f.key, f.text) for f in user_facts(store, "ann")] == [
            ("i am vegetarian", "I eat fish now.")
        ]
