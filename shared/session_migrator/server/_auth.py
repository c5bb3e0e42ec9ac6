"""Who may call the HTTP API: bearer tokens, each scoped to a user or a workspace.

Tokens come from ``SESSION_MIGRATOR_API_TOKEN`` (one token; ``TOKEN``, ``TOKEN:user:alice`` or
``TOKEN:workspace:acme``) or a tokens file (JSON: ``{"TOKEN": {"user": "alice"}, "OTHER":
{"workspace": "acme"}}``). A token scoped to a user reaches the sessions whose metadata names
that ``user_id`` (a session it creates is stamped so); one scoped to a workspace reaches that
workspace's sessions (and creates its sessions there); an unscoped token reaches every session.
"""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from session_migrator._errors import SessionMigratorError

__all__ = ["ENV_TOKEN", "Scope", "Tokens", "TokensError"]

ENV_TOKEN = "SESSION_MIGRATOR_API_TOKEN"


class TokensError(SessionMigratorError, ValueError):
    """The tokens given are malformed (the message says which and how to write them)."""


@dataclass(frozen=True)
class Scope:
    """What one token reaches: a user's sessions, a workspace's, or (both ``None``) all."""

    user: str | None = None
    workspace: str | None = None

    def owns(self, workspace: str, metadata: Mapping[str, Any]) -> bool:
        """Whether a session in ``workspace`` with ``metadata`` is this scope's."""
        if self.user is not None and str(metadata.get("user_id")) != self.user:
            return False
        return self.workspace is None or workspace == self.workspace


class Tokens:
    """The tokens the server accepts and their scopes (compared in constant time)."""

    def __init__(self, scopes: Mapping[str, Scope]) -> None:
        for token in scopes:
            if len(token) < 16:
                raise TokensError(
                    "an API token must be at least 16 characters (make one with "
                    "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
                )
        self._scopes = dict(scopes)

    def __len__(self) -> int:
        return len(self._scopes)

    def scope_of(self, token: str) -> Scope | None:
        """The scope of ``token``, or ``None`` when it is not one of these."""
        found: Scope | None = None
        for known, scope in self._scopes.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                found = scope
        return found

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None) -> Tokens:
        """The tokens of ``path`` (a tokens file) and of the environment."""
        scopes: dict[str, Scope] = {}
        if path is not None:
            try:
                data = json.loads(Path(path).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise TokensError(f"cannot read the tokens file {str(path)!r}: {exc}") from None
            if not isinstance(data, dict):
                raise TokensError(_SHAPE)
            for token, value in data.items():
                scopes[str(token)] = _scope(value)
        env = os.environ.get(ENV_TOKEN, "").strip()
        if env:
            token, _, rest = env.partition(":")
            kind, _, name = rest.partition(":")
            if rest and (kind not in ("user", "workspace") or not name):
                raise TokensError(
                    f"{ENV_TOKEN} is TOKEN, TOKEN:user:NAME or TOKEN:workspace:NAME, not {env!r}"
                )
            scopes[token] = Scope(**({kind: name} if rest else {}))
        return cls(scopes)


_SHAPE = (
    'a tokens file is a JSON object of token -> scope: {"TOKEN": {"user": "alice"}, '
    '"OTHER": {"workspace": "acme"}, "ADMIN": {}}'
)


def _scope(value: Any) -> Scope:
    if not isinstance(value, dict) or set(value) - {"user", "workspace"}:
        raise TokensError(_SHAPE)
    user, workspace = value.get("user"), value.get("workspace")
    if (user is not None and not isinstance(user, str)) or (
        workspace is not None and not isinstance(workspace, str)
    ):
        raise TokensError(_SHAPE)
    return Scope(user=user, workspace=workspace)
