"""The HTTP routes of a user's facts (issue 43), scoped like the sessions: a token of the user
``U`` reaches ``U``'s facts only (another user's answer 404, as if they had none), an unscoped
token every user's, a workspace's token none (a user's facts are not in a workspace):

- ``GET /v1/users/{user_id}/facts``: the facts, oldest statement first (key, text, the id of the
  message it was read from, the date);
- ``PUT /v1/users/{user_id}/facts/{key}`` (body ``{"text": ...}``): keep or replace one;
- ``DELETE /v1/users/{user_id}/facts/{key}``: forget one (404 when there is none).

A key with spaces is sent URL-encoded (``/facts/i%20am%20vegetarian``).
"""

from __future__ import annotations

from typing import Any

from session_migrator._errors import SessionMigratorError
from session_migrator.mcp._tools import SessionTools
from session_migrator.store import delete_user_fact, set_user_fact, user_facts

__all__ = ["FACT_ROUTES", "FactError", "FactNotFoundError", "FactRoutes"]

#: (method, path, summary, handler) of each route, added to the API's route table.
FACT_ROUTES: tuple[tuple[str, str, str, str], ...] = (
    ("GET", "/v1/users/{user_id}/facts", "A user's facts, oldest first.", "user_facts_list"),
    (
        "PUT",
        "/v1/users/{user_id}/facts/{key}",
        'Keep (or replace) a user\'s fact: {"text": ...}.',
        "user_fact_set",
    ),
    ("DELETE", "/v1/users/{user_id}/facts/{key}", "Forget a user's fact.", "user_fact_delete"),
)


class FactNotFoundError(SessionMigratorError, LookupError):
    """No such fact, or no facts of a user the token reaches (answered 404)."""


class FactError(SessionMigratorError, ValueError):
    """A fact the request does not give (answered 400)."""


def _fact(fact: Any) -> dict[str, Any]:
    return {
        "key": fact.key,
        "text": fact.text,
        "source_id": fact.source_id,
        "stated_at": fact.stated_at.isoformat() if fact.stated_at else None,
    }


class FactRoutes:
    """The handlers, mixed into the API (which gives :attr:`tools`)."""

    tools: SessionTools

    def _user(self, call: Any, scope: Any) -> str:
        user = str(call.request.path_params["user_id"])
        if scope.workspace is not None or (scope.user is not None and scope.user != user):
            raise FactNotFoundError(
                f"no facts of user {user!r} this token reaches (a user's token reaches their "
                "own facts, an unscoped token every user's)"
            )
        return user

    def user_facts_list(self, call: Any, scope: Any) -> dict[str, Any]:
        user = self._user(call, scope)
        facts = user_facts(self.tools.store, user)
        return {"user_id": user, "count": len(facts), "facts": [_fact(f) for f in facts]}

    def user_fact_set(self, call: Any, scope: Any) -> dict[str, Any]:
        user = self._user(call, scope)
        text = call.body.get("text")
        if not isinstance(text, str) or not text.strip():
            raise FactError('the body names the fact: {"text": "I eat fish now."}')
        fact = set_user_fact(self.tools.store, user, str(call.request.path_params["key"]), text)
        return {"user_id": user, "fact": _fact(fact)}

    def user_fact_delete(self, call: Any, scope: Any) -> dict[str, Any]:
        user = self._user(call, scope)
        key = str(call.request.path_params["key"])
        if not delete_user_fact(self.tools.store, user, key):
            raise FactNotFoundError(
                f"user {user!r} has no fact {key!r}: GET /v1/users/{user}/facts lists them"
            )
        return {"user_id": user, "key": key, "deleted": True}
