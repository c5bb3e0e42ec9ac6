"""Message ids: the ones :func:`~session_migrator.messages_from_openai` derives, and the ones a
store keeps a batch under.

An OpenAI message dict without an ``id`` gets one derived from its position in its list and its
content (``m000003-<digest>``), so that reading the same file twice gives the same ids and
``migrate`` reports the same dropped ids each time. Such an id is not the caller's: it says
nothing about whether two messages are the same message ("ok" said twice is two messages). So a
store never deduplicates on it: :func:`~session_migrator.messages._storage_ids.storage_ids`
gives each such message a new id, or, with an idempotency key for the batch, one made of the
key, the position and the content, so the same batch sent again under the same key is stored
once. Ids the caller gave are kept as they are.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Mapping
from typing import Any

__all__ = ["DERIVED_ID", "derived_id", "digest", "is_derived", "new_id"]

#: An id :func:`derived_id` made (position in the list, content digest).
DERIVED_ID = re.compile(r"m(\d{6})-([0-9a-f]{16})")


def new_id() -> str:
    """A fresh random id (a message made without one gets it)."""
    return uuid.uuid4().hex


def digest(text: str) -> str:
    """A short digest of ``text`` (16 hex digits)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def derived_id(data: Mapping[str, Any], index: int | None) -> str:
    """The id of an OpenAI message dict without one: its position and a digest of its content."""
    blob = json.dumps(data, sort_keys=True, default=str, ensure_ascii=False)
    return f"m{index if index is not None else 0:06d}-{digest(blob)}"


def is_derived(message_id: str) -> bool:
    """Whether ``message_id`` is one :func:`derived_id` made (not the caller's own)."""
    return DERIVED_ID.fullmatch(message_id) is not None
