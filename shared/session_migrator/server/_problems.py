"""The HTTP API's errors: every one is answered as a problem document (RFC 9457,
``application/problem+json``) with its status, a title, what to do, and the library's error kind
(:class:`Problem`); the library's errors map to their statuses in :data:`_STATUS`.
"""

from __future__ import annotations

import json

from starlette.responses import Response

from session_migrator._errors import (
    BudgetError,
    SessionMigratorError,
    SessionNotFoundError,
    UnknownModelError,
)
from session_migrator.server._fact_routes import FactNotFoundError
from session_migrator.store._placeholders import PlaceholderNotFoundError

__all__ = ["Problem", "problem_of"]


class Problem(Exception):
    """An error answered as a problem document."""

    def __init__(self, status: int, title: str, detail: str, kind: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail, self.kind = status, title, detail, kind

    def response(self) -> Response:
        body = {
            "type": f"https://session-migrator.dev/problems/{self.title.lower().replace(' ', '-')}",
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }
        if self.kind is not None:
            body["kind"] = self.kind
        return Response(
            json.dumps(body, ensure_ascii=False),
            status_code=self.status,
            media_type="application/problem+json",
        )


_STATUS: tuple[tuple[type[Exception], int, str], ...] = (
    (SessionNotFoundError, 404, "Session not found"),
    (PlaceholderNotFoundError, 404, "Placeholder not found"),
    (FactNotFoundError, 404, "Fact not found"),
    (UnknownModelError, 422, "Unknown model"),
    (BudgetError, 422, "Over the budget"),
    (SessionMigratorError, 400, "Bad request"),
)


def problem_of(exc: Exception) -> Problem:
    for kind, status, title in _STATUS:
        if isinstance(exc, kind):
            return Problem(status, title, str(exc), type(exc).__name__)
    return Problem(500, "Internal error", f"{type(exc).__name__}: the server failed", None)
