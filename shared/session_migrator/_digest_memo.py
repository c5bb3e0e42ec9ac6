"""A bounded memo of values computed from texts, keyed by a digest of each text.

>>> memo: DigestMemo[int] = DigestMemo()
>>> memo.get("some text", len)
9
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["DigestMemo"]

_V = TypeVar("_V")


class DigestMemo(Generic[_V]):
    """Values computed from texts, remembered by a digest of the text (and of a ``namespace``):
    no text is kept. For the texts a rolling summary brings back at every fit (itself, its
    earlier lines). Bounded: it starts afresh once it holds ``limit`` values.
    """

    def __init__(self, limit: int = 32_768) -> None:
        self._limit = limit
        self._values: dict[bytes, _V] = {}

    def __len__(self) -> int:
        return len(self._values)

    def get(self, text: str, compute: Callable[[str], _V], namespace: str = "") -> _V:
        digest = hashlib.blake2b(namespace.encode() + b"\x00", digest_size=16)
        digest.update(text.encode("utf-8", "surrogatepass"))
        key = digest.digest()
        value = self._values.get(key)
        if value is None:
            if len(self._values) >= self._limit:
                self._values.clear()
            value = self._values[key] = compute(text)
        return value

    def clear(self) -> None:
        self._values.clear()
