"""What a fit sends of a session whose agent compressed parts of it (the placeholders of
:mod:`session_migrator.store._placeholders`): each compressed range as one line carrying the
placeholder's id and what the model can do with it; each compressed tool output as a short
line. Restored placeholders are not applied: their messages are sent whole again (when they
fit). The store's messages are never changed.

:class:`PlaceholderView` keeps the lines it wrote, so that a fit after a new message finds the
same message objects as before (its ledger goes on from where it was).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from session_migrator.fitting._units import stable_id
from session_migrator.messages._messages import MARKER_KEY, Message
from session_migrator.store._placeholders import (
    Placeholder,
    covered_ids,
    placeholders_in_force,
)

if TYPE_CHECKING:
    from session_migrator.store import BaseSessionStore

__all__ = ["PlaceholderView", "apply_placeholders", "placeholder_line"]


def placeholder_line(placeholder: Placeholder, count: int) -> str:
    """The line a compressed range (or the first of a tool's compressed outputs) is sent as."""
    p = placeholder
    what = f"{count} outputs of tool {p.tool}" if p.tool else f"{count} messages"
    return (
        f"[... {what} compressed by the agent: {p.summary}; "
        f'restore_context(id="{p.id}") brings them back whole, '
        "list_placeholders() lists the placeholders in force ...]"
    )


def _marked(placeholder: Placeholder, count: int) -> dict[str, Any]:
    return {
        MARKER_KEY: {
            "kind": "placeholder",
            "placeholder_id": placeholder.id,
            "first_id": placeholder.first_message_id,
            "last_id": placeholder.last_message_id,
            "covered": count,
        }
    }


def apply_placeholders(
    messages: Sequence[Message],
    placeholders: Sequence[Placeholder],
    made: dict[tuple[str, str], Message] | None = None,
) -> list[Message]:
    """``messages`` as a fit sends them under ``placeholders`` (those in force). ``made``
    keeps the lines written, by placeholder and message id, for the next call."""
    made = {} if made is None else made
    replaced: dict[str, Message | None] = {}  # message id -> its line (None: left out)
    for p in placeholders:
        ids = covered_ids(messages, p)
        if not ids:
            continue  # (its messages were deleted)
        if p.tool is None:
            first = next(m for m in messages if m.id == ids[0])
            key = (p.id, ids[0])
            if key not in made:
                made[key] = Message(
                    "assistant" if first.role in ("assistant", "tool") else "user",
                    placeholder_line(p, len(ids)),
                    id=stable_id("sm-placeholder", [p.id, ids[0], ids[-1]]),
                    extra=_marked(p, len(ids)),
                )
            replaced[ids[0]] = made[key]
            replaced.update(dict.fromkeys(ids[1:]))
            continue
        by_id = {m.id: m for m in messages}
        for k, mid in enumerate(ids):
            key = (p.id, mid)
            if key not in made:
                text = (
                    placeholder_line(p, len(ids))
                    if k == 0
                    else f"[... this {p.tool} output is compressed by the agent (placeholder "
                    f'{p.id}, summary above); restore_context(id="{p.id}") brings it back ...]'
                )
                original = by_id[mid]
                extra = {**original.extra, **_marked(p, len(ids))}
                made[key] = original.replace(content=text, extra=extra)
            replaced[mid] = made[key]
    if not replaced:
        return list(messages)
    out: list[Message] = []
    for m in messages:
        if m.id not in replaced:
            out.append(m)
        elif (line := replaced[m.id]) is not None:
            out.append(line)
    return out


class PlaceholderView:
    """A fitter's view of its session under the placeholders in force (see the module)."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, str], Message] = {}
        self.key: tuple[tuple[str, str], ...] = ()

    def view(
        self,
        store: BaseSessionStore,
        session_id: str,
        messages: list[Message],
        metadata: Mapping[str, Any] | None = None,
    ) -> list[Message]:
        """``messages`` (the session's log) as fits send them now; :attr:`key` names the
        placeholders applied (for a fit's cache key)."""
        if metadata is None:
            info = store.get_session(session_id)
            metadata = info.metadata if info is not None else {}
        found = placeholders_in_force(metadata)
        self.key = tuple((p.id, p.summary) for p in found)
        if not found:
            return messages
        return apply_placeholders(messages, found, self._made)
