"""The output a request asks for, and how its provider counts it against the window.

- :func:`requested_output`: where the request says it (``max_tokens`` and its other names).
- :func:`output_rule`: how the provider counts it. **OpenAI** (and the OpenAI-compatible APIs)
  and **Anthropic since Claude 3.7**: input + ``max_tokens`` ≤ the window (``"shared"``).
  **Claude before 3.7**: the service shortens ``max_tokens`` itself (``"clamped"``).
  **Gemini**: separate input and output caps (``"separate"``).
- :func:`output_reserve`: the tokens a fit holds back for it; when the request does not say,
  :func:`default_reserve` (the model's output cap, at most a quarter of the window, at least a
  short reply's room).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from session_migrator.models._windows import DEFAULT_OUTPUT_FRACTION, ModelWindow

__all__ = [
    "MIN_REPLY_TOKENS",
    "OUTPUT_SETTINGS",
    "OutputRule",
    "check_tokens",
    "default_reserve",
    "output_reserve",
    "output_rule",
    "requested_output",
]

#: How the output a request asks for shares the window with its input (see the module docstring).
OutputRule = Literal["shared", "clamped", "separate"]
#: The fewest output tokens held back when a request says nothing: room for a short reply.
MIN_REPLY_TOKENS = 256
_OLD_CLAUDE = re.compile(r"claude-(instant|2|3-(opus|sonnet|haiku)|3-5)", re.IGNORECASE)
_GEMINI_PROVIDERS = frozenset({"google", "gemini", "vertex", "vertex_ai", "google_genai"})
_ANTHROPIC_PROVIDERS = frozenset({"anthropic", "bedrock_anthropic"})


#: Where provider classes and their request kwargs keep the output a request asks for, most
#: specific first: OpenAI's ``max_completion_tokens``, the common ``max_tokens``, Gemini's
#: ``max_output_tokens``, Ollama's ``num_predict``, Hugging Face's ``max_new_tokens``.
OUTPUT_SETTINGS = (
    "max_completion_tokens",
    "max_tokens",
    "max_output_tokens",
    "num_predict",
    "max_new_tokens",
)


def requested_output(
    *sources: Mapping[str, Any] | None, model: Any = None
) -> tuple[int | None, str]:
    """The output tokens a request asks for, and the setting's name: the first positive whole
    number under one of :data:`OUTPUT_SETTINGS` in ``sources`` (a call's kwargs, bound kwargs,
    a class's extra kwargs: most specific first), then among ``model``'s attributes;
    ``(None, "max_tokens")`` when none says.

    >>> requested_output({"temperature": 0}, {"max_completion_tokens": 3000})
    (3000, 'max_completion_tokens')
    """
    for source in sources:
        if isinstance(source, Mapping):
            for key in OUTPUT_SETTINGS:
                found = _positive(source.get(key))
                if found is not None:
                    return found, key
    if model is not None:
        for key in OUTPUT_SETTINGS:
            found = _positive(getattr(model, key, None))
            if found is not None:
                return found, key
    return None, "max_tokens"


def _positive(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def output_rule(window: ModelWindow, provider: str | None = None) -> OutputRule:
    """How ``window``'s provider counts the output a request asks for.

    ``provider`` (e.g. ``"anthropic"``, as a framework names it) wins over the window's own.

    >>> from session_migrator import lookup_model
    >>> output_rule(lookup_model("gpt-4o")), output_rule(lookup_model("claude-sonnet-4"))
    ('shared', 'shared')
    >>> output_rule(lookup_model("claude-3-haiku-20240307"))
    'clamped'
    >>> output_rule(lookup_model("gemini-2.5-pro"))
    'separate'
    """
    name = (provider or window.provider or "").lower().replace("-", "_")
    if name in _GEMINI_PROVIDERS or (not provider and window.tokenizer == "gemini"):
        return "separate"
    if name in _ANTHROPIC_PROVIDERS or "claude" in window.name.lower():
        return "clamped" if _OLD_CLAUDE.search(window.name) else "shared"
    return "shared"


def default_reserve(window: ModelWindow) -> int:
    """The output held back when a request does not say: the model's output cap, at most a
    quarter of the window, at least a short reply's room (and never the whole window)."""
    quarter = int(window.context_window * DEFAULT_OUTPUT_FRACTION)
    cap = window.max_output_tokens if window.max_output_tokens is not None else quarter
    floor = min(MIN_REPLY_TOKENS, cap, window.context_window // 2)
    return max(min(cap, quarter), floor)


def output_reserve(
    window: ModelWindow, requested: int | None = None, *, provider: str | None = None
) -> tuple[int, str]:
    """The output tokens to hold back from ``window``'s input for a request that asks for
    ``requested`` (``None``: it does not say), and where the number came from: ``"request"`` or
    ``"default"`` (see :func:`default_reserve`).

    Under the ``separate`` rule (Gemini) the output takes no input room: the reserve is 0,
    ``"separate"``. Under ``clamped`` (Claude before 3.7) the service shortens the output
    itself: the reserve is the smaller of ``requested`` and the default.
    """
    requested = check_tokens("max_tokens", requested)
    rule = output_rule(window, provider)
    if rule == "separate":
        return 0, "separate"
    if requested is None:
        return default_reserve(window), "default"
    if rule == "clamped":
        return min(requested, default_reserve(window)), "request"
    return requested, "request"


def check_tokens(label: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{label} must be a whole number of tokens, got {value!r}")
    if value < 0:
        raise ValueError(f"{label} must not be negative, got {value}")
    return value
