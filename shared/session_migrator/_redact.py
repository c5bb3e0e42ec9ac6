"""Secrets out of error text: what the library builds from a provider's answer is scrubbed.

A provider's error body may echo the request's ``Authorization`` header or the key itself (a
401 that says "Incorrect API key provided: sk-..."). Every error text the library builds from a
provider's answer (a summarizer's failure, an online counter's, a live refresh's, and so the
report's ``fallbacks``, warnings and exceptions) goes through :func:`redact_secrets`, which
removes the keys it is given and anything shaped like a token:

- ``Bearer <token>`` (an ``Authorization`` header echoed back);
- ``sk-...`` keys (OpenAI, Anthropic ``sk-ant-...``, DeepSeek, OpenRouter ``sk-or-...``);
- Google API keys (``AIza...``) and ``key=`` / ``api_key=`` / ``token=`` URL parameters.

>>> redact_secrets("401: Incorrect API key provided: sk-proj-abc123def456ghi789")
'401: Incorrect API key provided: sk-[redacted]'
>>> redact_secrets("denied for hunter2-hunter2", "hunter2-hunter2")
'denied for [redacted]'
"""

from __future__ import annotations

import contextlib
import re

__all__ = ["REDACTED", "redact_secrets"]

REDACTED = "[redacted]"

#: Shorter given secrets are not replaced (a one-letter "key" would blank the text).
_MIN_SECRET = 6

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=\-]{4,}"), rf"\1\2{REDACTED}"),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"), f"sk-{REDACTED}"),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"), REDACTED),
    (
        re.compile(r"(?i)([?&;\s\"'](?:api[_-]?key|key|token|access_token)=)[^&\s\"']+"),
        rf"\1{REDACTED}",
    ),
)


def redact_secrets(text: str, *secrets: object) -> str:
    """``text`` without the ``secrets`` and without anything shaped like a key or a bearer token.

    A secret is a string; an object with ``get_secret_value()`` (pydantic's ``SecretStr``, as
    LangChain and LlamaIndex models keep their keys); or any other object (a client, a chat
    model), whose ``SecretStr`` attributes and ``api_key`` are taken. ``None`` and values
    shorter than 6 characters are skipped.
    """
    values: list[str] = []
    for secret in secrets:
        value = _value(secret)
        if value is not None:
            values.append(value)
        elif secret is not None:
            values.extend(secrets_of(secret))
    for value in sorted(values, key=len, reverse=True):  # a key containing another goes first
        if len(value) >= _MIN_SECRET:
            text = text.replace(value, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def secrets_of(obj: object) -> list[str]:
    """The secret values an object keeps: its ``SecretStr`` attributes and its ``api_key``."""
    attrs = getattr(obj, "__dict__", None)
    held = [v for v in attrs.values() if hasattr(v, "get_secret_value")] if attrs else []
    with contextlib.suppress(Exception):  # a property that raises keeps no key to echo
        held.append(getattr(obj, "api_key", None))
    return [value for value in map(_value, held) if value]


def _value(secret: object) -> str | None:
    if isinstance(secret, str):
        return secret
    getter = getattr(secret, "get_secret_value", None)
    if callable(getter):
        try:
            value = getter()
        except Exception:  # a secret that cannot be read cannot be echoed either
            return None
        return value if isinstance(value, str) else None
    return None
