"""The ids a store keeps a batch of messages under (see :mod:`session_migrator.messages._ids`):
ids the caller gave are kept; a derived one becomes a new random id, or one made of the batch's
idempotency key, the message's position and its content."""

from __future__ import annotations

from collections.abc import Sequence

from session_migrator.messages._ids import DERIVED_ID, digest, new_id
from session_migrator.messages._messages import Message

__all__ = ["storage_ids"]


def storage_ids(messages: Sequence[Message], idempotency_key: str | None = None) -> list[Message]:
    """``messages`` with the ids a store keeps them under (see the module docstring).

    Ids the caller gave are kept. Each derived id becomes a new random id, or, with
    ``idempotency_key``, ``k<key digest>-<position in the batch>-<content digest>``: the same
    batch (same messages, same order) under the same key gets the same ids, so a retry stores
    nothing twice, while a different batch under a reused key is stored, never dropped. Reads
    nothing: the cost does not grow with the session.
    """
    key = None if idempotency_key is None else digest(idempotency_key)
    out: list[Message] = []
    for position, message in enumerate(messages):
        found = DERIVED_ID.fullmatch(message.id)
        if found is None:
            out.append(message)
        elif key is None:
            out.append(message.replace(id=new_id()))
        else:
            out.append(message.replace(id=f"k{key}-{position:06d}-{found.group(2)}"))
    return out
