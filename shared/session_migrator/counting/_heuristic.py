"""The no-tokenizer estimate: a conservative token count from characters alone.

Used by the counters (``_tokens``) when no local copy of an OpenAI encoding can be found.

>>> heuristic_tokens("hello world")
4
"""

from __future__ import annotations

import math
import re

__all__ = ["heuristic_tokens"]

_PIECES = re.compile(r"[A-Za-z0-9+/=_-]{24,}|[A-Za-z]+|[0-9]+|\s+|[^\sA-Za-z0-9]")


def heuristic_tokens(text: str) -> int:
    """A conservative estimate without any tokenizer.

    Long unbroken runs of letters, digits and ``+/=_-`` (base64, hashes, ids) count one token
    per character; other letter runs one per 2.5 letters (rounded up), digit runs one per 2, every
    other ASCII character one, a non-ASCII character one per two bytes of UTF-8 (CJK: two), and
    whitespace nothing when it is one space, else one. Over-counts o200k and cl100k on prose,
    code, JSON, base64 and Chinese.
    """
    total = 0
    for piece in _PIECES.findall(text):
        first = piece[0]
        if len(piece) >= 24 and not first.isspace():
            total += len(piece)
        elif first.isascii() and first.isalpha():
            total += math.ceil(len(piece) / 2.5)
        elif first.isdigit() and first.isascii():
            total += math.ceil(len(piece) / 2)
        elif first.isspace():
            total += 0 if piece == " " else 1
        elif first.isascii():
            total += 1
        else:
            total += (len(first.encode("utf-8", "surrogatepass")) + 1) // 2
    return total
