"""Offloading large tool outputs: a head + tail preview stays inline, the original is kept apart.

A tool message whose text exceeds the store's ``offload_threshold`` (tokens, counted with
``o200k_base``) is stored as a copy whose content is a preview: the first
:data:`HEAD_CHARS` and last :data:`TAIL_CHARS` characters around a note saying how much was left
out. The copy carries ``extra["session_migrator"] = {"kind": "offloaded", "tokens": N,
"chars": C}`` (N tokens and C characters of the original text). The original message is stored
whole beside it, under the same session and message id, and is deleted with the message.

A message is stored whole when its preview would not be shorter than its text.
"""

from __future__ import annotations

from session_migrator.counting._tokens import counter_for
from session_migrator.messages._messages import MARKER_KEY, Message

__all__ = ["HEAD_CHARS", "OFFLOADED_KIND", "TAIL_CHARS", "is_offloaded", "offload"]

HEAD_CHARS = 600
TAIL_CHARS = 400
OFFLOADED_KIND = "offloaded"


def is_offloaded(message: Message) -> bool:
    """Whether ``message`` is an offloaded preview written by a store."""
    marker = message.marker
    return marker is not None and marker.get("kind") == OFFLOADED_KIND


def preview_text(text: str, tokens: int) -> str:
    """The head and tail of ``text`` around a note on what was left out."""
    head = text[:HEAD_CHARS]
    tail = text[-TAIL_CHARS:] if TAIL_CHARS else ""
    omitted = len(text) - len(head) - len(tail)
    return (
        f"{head}\n[... {omitted:,} characters left out of this {tokens:,}-token tool output; "
        "the full output is kept in the session store ...]\n"
        f"{tail}"
    )


def offload(message: Message, threshold: int) -> Message | None:
    """The preview copy of ``message`` when it is a tool output above ``threshold`` tokens.

    ``None`` when the message is stored whole: not a tool message, not above the threshold, or
    too short for a preview to save anything.
    """
    if message.role != "tool":
        return None
    text = message.text
    if len(text) <= HEAD_CHARS + TAIL_CHARS or len(text) * 4 <= threshold:
        return None  # a token is at least one UTF-8 byte, a character at most four
    tokens = counter_for("o200k_base").count_text(text)
    if tokens <= threshold:
        return None
    preview = preview_text(text, tokens)
    if len(preview) >= len(text):
        return None
    extra = dict(message.extra)
    extra[MARKER_KEY] = {"kind": OFFLOADED_KIND, "tokens": tokens, "chars": len(text)}
    return message.replace(content=preview, extra=extra)
