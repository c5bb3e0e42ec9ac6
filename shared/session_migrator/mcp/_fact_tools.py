"""The MCP tools ``user_facts_list``, ``user_fact_set`` and ``user_fact_delete``: the facts a
user stated ("I'm vegetarian", "my daughter is allergic to peanuts"), kept per user in the
store (:mod:`session_migrator.store._facts`), listed, edited and deleted by an agent or a
client. Registered on the server :func:`session_migrator.mcp_server.build_server` builds; this
module needs the ``[mcp]`` extra.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from session_migrator.mcp import _schemas as out
from session_migrator.mcp._tools import SessionTools
from session_migrator.store import UserFact, delete_user_fact, set_user_fact, user_facts

__all__ = ["fact_answer", "register_fact_tools"]

UserId = Annotated[
    str, Field(min_length=1, description="The user's id (the user_id of their sessions).")
]
Key = Annotated[
    str,
    Field(
        min_length=1,
        description="What the fact is about, e.g. 'i am vegetarian' or 'my daughter' "
        "(user_facts_list shows the keys kept).",
    ),
]

LIST_DESCRIPTION = (
    "The facts and preferences a user stated in their sessions (kept across sessions and sent "
    "to the model in every fit of them), oldest statement first: each one's key, text, the id "
    "of the message it was read from (null: set by hand) and when it was stated."
)
SET_DESCRIPTION = (
    "Keep a fact of a user, or replace the one with the same key (a correction: 'I eat fish "
    "now'). The user's sessions send it from their next fit."
)
DELETE_DESCRIPTION = (
    "Forget a fact of a user (by its key, see user_facts_list); deleted is false when there "
    "was none."
)


def fact_answer(fact: UserFact) -> dict[str, Any]:
    """A fact as the tools answer it."""
    return {
        "key": fact.key,
        "text": fact.text,
        "source_id": fact.source_id,
        "stated_at": fact.stated_at.isoformat() if fact.stated_at else None,
    }


def register_fact_tools(
    server: Any, call: Callable[..., CallToolResult], tools: SessionTools
) -> None:
    """Add the three user-fact tools to ``server``; ``call`` answers as the others do."""

    def user_facts_list(user_id: UserId) -> Annotated[CallToolResult, out.FactList]:
        return call(_list, user_id)

    def user_fact_set(
        user_id: UserId,
        key: Key,
        text: Annotated[str, Field(min_length=1, description="The fact, in the user's words.")],
    ) -> Annotated[CallToolResult, out.FactAnswer]:
        return call(_set, user_id, key, text)

    def user_fact_delete(user_id: UserId, key: Key) -> Annotated[CallToolResult, out.FactDeleted]:
        return call(_delete, user_id, key)

    def _list(user_id: str) -> dict[str, Any]:
        with tools._lock:
            facts = user_facts(tools.store, user_id)
        return {"user_id": user_id, "count": len(facts), "facts": [fact_answer(f) for f in facts]}

    def _set(user_id: str, key: str, text: str) -> dict[str, Any]:
        with tools._lock:
            fact = set_user_fact(tools.store, user_id, key, text)
        return {"user_id": user_id, "fact": fact_answer(fact)}

    def _delete(user_id: str, key: str) -> dict[str, Any]:
        with tools._lock:
            deleted = delete_user_fact(tools.store, user_id, key)
        return {"user_id": user_id, "key": key, "deleted": deleted}

    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    writes = ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
    deletes = ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
    )
    server.add_tool(user_facts_list, description=LIST_DESCRIPTION, annotations=read_only)
    server.add_tool(user_fact_set, description=SET_DESCRIPTION, annotations=writes)
    server.add_tool(user_fact_delete, description=DELETE_DESCRIPTION, annotations=deletes)
