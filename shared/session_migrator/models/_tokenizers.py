"""Tokenizer families: which tokenizer a model name implies and how its counts are estimated.

The counting layer's facts about names, below both the counters (``_tokens``) and the lookup
(``_models``): an OpenAI encoding (``o200k_base``, ``cl100k_base``: counted exactly) or an
estimated family, counted as the o200k count times :data:`FAMILY_MULTIPLIERS`.

>>> infer_tokenizer("openai/gpt-4o-mini"), infer_tokenizer("claude-opus-4-7")
('o200k_base', 'claude-4.7')
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from session_migrator.models._names import route_name

__all__ = ["EXACT_ENCODINGS", "FAMILY_MULTIPLIERS", "check_tokenizer", "infer_tokenizer"]

#: The OpenAI encodings, counted exactly (their files and hashes are the counting layer's:
#: :mod:`session_migrator.counting._encodings`).
EXACT_ENCODINGS = ("o200k_base", "cl100k_base")

#: Conservative o200k multipliers per tokenizer family (the largest measured ratio, rounded up;
#: source: shared tokenizer_ratios.csv, measured with each tokenizer's own package).
FAMILY_MULTIPLIERS: Mapping[str, float] = {
    "claude": 1.43,  # Claude 3 - 4.6 (legacy SDK tokenizer: 0.98-1.43 of o200k)
    "claude-4.7": 1.63,  # Claude Opus 4.7 and later (new tokenizer: 1.46-1.63)
    "gemini": 1.20,  # no public tokenizer; count endpoints show about 1.15
    "mistral": 1.24,  # tekken (0.99-1.24)
    "mistral-spm": 1.42,  # SentencePiece v3 (1.15-1.42)
    "qwen": 1.19,  # Qwen 3.5/3.6 (0.68-1.19)
    "deepseek": 1.09,  # DeepSeek V4 (0.69-1.09)
    "llama": 1.05,  # Llama 3 (0.99-1.05)
    "other": 1.45,  # unknown tokenizer: the most conservative of the above, plus a little
}

_OPENAI_O200K = re.compile(
    r"(?:gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-[5-9]|gpt-(?!35)\d\d|o[1-9]|gpt-oss|codex-mini"
    r"|gpt-audio|gpt-realtime|chatgpt)(?:$|[-.:])"
)
_OPENAI_CL100K = re.compile(r"(?:gpt-4|gpt-3\.5|gpt-35)(?:$|[-.:])")
_CLAUDE_VERSION = re.compile(r"claude-(?:[a-z]+-)?(\d)(?:-(\d{1,2}))?(?!\d)")
#: (pattern searched anywhere in the routed name, family); the first match wins.
_MISTRAL_SPM = r"mixtral|mistral-7b|mistral-tiny|mistral-(?:large|medium|small)-(?:23\d\d|240[1-6])"
_FAMILY_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), family)
    for pattern, family in (
        (r"gemini|gemma|learnlm", "gemini"),
        (_MISTRAL_SPM, "mistral-spm"),  # before the 2407 tekken switch
        (r"mistral|codestral|pixtral|ministral|magistral|devstral|voxtral", "mistral"),
        (r"^deepseek", "deepseek"),
        (r"qwen|qwq|qvq", "qwen"),
        (r"deepseek", "deepseek"),
        (r"llama-?2(?![\d.])|codellama|code-llama|llama-v2", "other"),  # Llama 2: 32k SPM
        (r"llama|^l3[-.]", "llama"),
    )
)  # fmt: skip


def infer_tokenizer(name: str) -> str:
    """The tokenizer a model name implies: an encoding, a key of ``FAMILY_MULTIPLIERS``, or
    ``other`` when the name says nothing (estimated most conservatively).

    >>> infer_tokenizer("gpt-4o-mini"), infer_tokenizer("claude-opus-4-7")
    ('o200k_base', 'claude-4.7')
    """
    s = route_name(name)
    if _OPENAI_O200K.match(s):
        return "o200k_base"
    if _OPENAI_CL100K.match(s):
        return "cl100k_base"
    if "claude" in s:
        match = _CLAUDE_VERSION.search(s)
        if match is None:  # no version: legacy (claude-v2, claude-instant) or a new name
            return "claude" if re.search(r"claude-(?:v\d|instant)", s) else "claude-4.7"
        version = (int(match.group(1)), int(match.group(2) or 0))
        return "claude-4.7" if version >= (4, 7) else "claude"
    for pattern, family in _FAMILY_RULES:
        if pattern.search(s):
            return family
    return "other"


def check_tokenizer(tokenizer: str) -> str:
    """``tokenizer`` if it is an encoding or an estimated family, else :class:`ValueError`."""
    if tokenizer not in EXACT_ENCODINGS and tokenizer not in FAMILY_MULTIPLIERS:
        known = ", ".join(sorted([*EXACT_ENCODINGS, *FAMILY_MULTIPLIERS]))
        raise ValueError(f"unknown tokenizer {tokenizer!r}; use one of: {known}")
    return tokenizer
