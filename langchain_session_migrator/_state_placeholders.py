"""The agent's own scissors in a LangChain v1 agent: ``compress_context``, ``list_placeholders``
and ``restore_context`` as tools of ``FitToModelMiddleware(placeholder_tools=True)``.

A ``create_agent`` graph has no session store: the placeholders are kept in the graph's state,
under :data:`STATE_KEY` (a list of placeholder records, checkpointed with the thread), and the
tools update it with a ``Command``. The messages in the state are never changed: each model
call's fit sends a compressed range as one line carrying its id
(:func:`session_migrator.context_tools.apply_placeholders`), and a restored one whole again. The
rules and answers are the core's, as on every surface (a call that cannot be done is answered
with what to do instead).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware.types import AgentState
from langchain.tools import InjectedState
from langchain_core.messages import AnyMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.types import Command

from langchain_session_migrator._convert import messages_from_core, messages_to_core
from session_migrator.context_tools import (
    COMPRESS_DESCRIPTION,
    LIST_DESCRIPTION,
    RESTORE_DESCRIPTION,
    Placeholder,
    apply_placeholders,
    compressed_answer,
    error_answer,
    listing_answer,
    new_placeholder,
    restored,
    restored_answer,
)

__all__ = ["STATE_KEY", "PlaceholderState", "placeholder_tools", "with_placeholders"]

#: Where the placeholders are kept in the agent's state.
STATE_KEY = "session_migrator_placeholders"


class PlaceholderState(AgentState[Any]):
    """The agent state with the placeholders the agent put (see the module docstring)."""

    session_migrator_placeholders: NotRequired[list[dict[str, Any]]]


def _records(state: Mapping[str, Any]) -> list[Placeholder]:
    rows = state.get(STATE_KEY) or []
    return [Placeholder.from_dict(r) for r in rows if isinstance(r, Mapping)]


def with_placeholders(messages: Sequence[BaseMessage], state: Any) -> list[BaseMessage] | None:
    """``messages`` as the fit sends them under the placeholders in force in ``state``
    (``None``: none in force, send them as they are)."""
    found = [p for p in _records(state if isinstance(state, Mapping) else {}) if p.in_force]
    if not found:
        return None
    sent = apply_placeholders(messages_to_core(list(messages)), found)
    # a compressed output is sent under an id of its own: the guard's counts and stable cut,
    # kept by id, never take the line for the output (or the output, restored, for the line)
    return messages_from_core(
        [
            m.replace(id=f"{m.id}~{m.marker['placeholder_id']}")
            if m.marker is not None and m.marker.get("kind") == "placeholder" and m.role == "tool"
            else m
            for m in sent
        ]
    )


def _answer(text: str, call_id: str, rows: list[Placeholder] | None = None) -> Command[Any]:
    update: dict[str, Any] = {"messages": [ToolMessage(text, tool_call_id=call_id)]}
    if rows is not None:
        update[STATE_KEY] = [p.as_dict() for p in rows]
    return Command(update=update)


def placeholder_tools() -> list[BaseTool]:
    """The three tools, reading and updating the agent's state (injected, never shown to the
    model)."""

    def compress_context(
        state: Annotated[dict[str, Any], InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
        first_id: str | None = None,
        last_id: str | None = None,
        summary: str | None = None,
        tool: str | None = None,
    ) -> Command[Any]:
        existing = _records(state)
        messages: list[AnyMessage] = list(state.get("messages") or [])
        try:
            p = new_placeholder(
                messages_to_core(messages),
                existing,
                first_id=first_id,
                last_id=last_id,
                summary=summary,
                tool=tool,
            )
        except ValueError as exc:  # (PlaceholderError is one)
            return _answer(error_answer("compress_context", exc), tool_call_id)
        return _answer(compressed_answer(p), tool_call_id, [*existing, p])

    def list_placeholders(
        state: Annotated[dict[str, Any], InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> Command[Any]:
        live = [p for p in _records(state) if p.in_force]
        return _answer(listing_answer(live), tool_call_id)

    def restore_context(
        id: str,
        state: Annotated[dict[str, Any], InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> Command[Any]:
        try:
            rows, done = restored(_records(state), id)
        except ValueError as exc:  # (PlaceholderNotFoundError is one)
            return _answer(error_answer("restore_context", exc), tool_call_id)
        return _answer(restored_answer(done), tool_call_id, rows)

    return [
        StructuredTool.from_function(fn, name=fn.__name__, description=description)
        for fn, description in (
            (compress_context, COMPRESS_DESCRIPTION),
            (list_placeholders, LIST_DESCRIPTION),
            (restore_context, RESTORE_DESCRIPTION),
        )
    ]
