"""Which of a Codex rollout's prompts only its events hold (:func:`event_only_prompts`).

Codex CLI writes each prompt twice, as a ``response_item`` user message and then as a
``user_message`` event; Codex Desktop may write only the event. The importer takes the response
items, and the events no item covers, so that no prompt is lost or read twice. Used by
:mod:`._codex`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from typing import Any

from session_migrator.importers._common import Record

__all__ = ["event_only_prompts"]


def event_only_prompts(records: list[Record]) -> set[int]:
    """The lines of ``user_message`` events whose prompt no ``response_item`` user message holds.

    Codex CLI writes a prompt twice (the response item, then the event); Codex Desktop may write
    only the event. An event is covered by a user item between the events before and after it
    whose text is the prompt or holds it on lines of its own (an IDE wraps the prompt in
    context), the nearest first; each item covers one event.
    """
    events: list[tuple[int, str]] = []
    items: list[tuple[int, str]] = []
    for index, rec in enumerate(records):
        payload = rec.data.get("payload")
        if not isinstance(payload, Mapping):
            continue
        kind, ptype = rec.data.get("type"), payload.get("type")
        if kind == "event_msg" and ptype == "user_message":
            if isinstance(payload.get("message"), str):
                events.append((index, payload["message"].strip()))
        elif kind == "response_item" and ptype == "message" and payload.get("role") == "user":
            items.append((index, _plain_text(payload.get("content"))))
    positions = [pos for pos, _ in items]
    used: set[int] = set()
    uncovered: set[int] = set()
    for k, (pos, text) in enumerate(events):
        low = events[k - 1][0] if k else -1
        high = events[k + 1][0] if k + 1 < len(events) else len(records)
        start, end = bisect_right(positions, low), bisect_right(positions, high)
        found = [j for j in range(start, end) if j not in used and _holds(items[j][1], text)]
        if found:
            used.add(min(found, key=lambda j: abs(items[j][0] - pos)))
        else:
            uncovered.add(records[pos].line)
    return uncovered


def _holds(item: str, prompt: str) -> bool:
    """Whether a user item's text is the prompt, or holds it on lines of its own (an IDE puts
    the prompt after its context); a short prompt inside other text ("yes" in a file's
    instructions) is not enough."""
    if item == prompt:
        return True
    return bool(prompt) and (item.endswith("\n" + prompt) or f"\n{prompt}\n" in item)


def _plain_text(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    blocks = content if isinstance(content, list) else ()
    texts = [b["text"] for b in blocks if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
    return "\n".join(texts).strip()
