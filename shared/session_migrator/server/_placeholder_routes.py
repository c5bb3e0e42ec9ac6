"""The HTTP routes of the agent's placeholders (issue 44), owner-checked like the others:

- ``POST /v1/sessions/{session_id}/compress`` (body ``first_id``, ``last_id``, ``summary``,
  ``tool``): put a placeholder on a range of the session, or on one tool's outputs;
- ``GET /v1/sessions/{session_id}/placeholders``: the placeholders in force;
- ``POST /v1/sessions/{session_id}/placeholders/{placeholder_id}/restore``: restore one.

Each answer is at most 2,000 characters (:mod:`session_migrator.mcp._placeholders`); bad
input is a problem document saying what to do (400; an unknown placeholder, 404).
"""

from __future__ import annotations

from typing import Any

from session_migrator.mcp._placeholders import compress_answer, list_answer, restore_answer
from session_migrator.mcp._tools import SessionTools
from session_migrator.store._placeholders import PlaceholderError

__all__ = ["PlaceholderRoutes"]


def _text(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None or (isinstance(value, str) and value):
        return value
    raise PlaceholderError(f"{name} is a non-empty string when given, got {value!r}")


class PlaceholderRoutes:
    """The handlers, mixed into the API (which gives :attr:`tools` and :meth:`owned`)."""

    tools: SessionTools

    def owned(self, scope: Any, session_id: str) -> Any:
        raise NotImplementedError

    def compress_context(self, call: Any, scope: Any) -> dict[str, Any]:
        self.owned(scope, call.session_id)
        body = call.body
        return compress_answer(
            self.tools.store,
            call.session_id,
            first_id=_text(body, "first_id"),
            last_id=_text(body, "last_id"),
            summary=_text(body, "summary"),
            tool=_text(body, "tool"),
        )

    def list_placeholders(self, call: Any, scope: Any) -> dict[str, Any]:
        self.owned(scope, call.session_id)
        return list_answer(self.tools.store, call.session_id)

    def restore_context(self, call: Any, scope: Any) -> dict[str, Any]:
        self.owned(scope, call.session_id)
        placeholder_id = str(call.request.path_params["placeholder_id"])
        return restore_answer(self.tools.store, call.session_id, placeholder_id)
