"""What the placeholder tools tell the model, on every surface: their names, short descriptions,
and their answers as text within :data:`~session_migrator.store._placeholders.ANSWER_LIMIT`
characters (about 500 tokens). A call that cannot be done is answered with what to do instead
(not raised), so the agent goes on. The LangChain and LlamaIndex adapters build their tools on
these; the MCP server and the HTTP API answer JSON (:mod:`session_migrator.mcp._placeholders`)
with the same descriptions.
"""

from __future__ import annotations

from collections.abc import Sequence

from session_migrator._errors import SessionMigratorError
from session_migrator.store._placeholders import (
    ANSWER_LIMIT,
    Placeholder,
    compress_context,
    list_placeholders,
    restore_context,
)
from session_migrator.store._protocol import SyncSessionStore

__all__ = [
    "COMPRESS_DESCRIPTION",
    "LIST_DESCRIPTION",
    "RESTORE_DESCRIPTION",
    "compress_text",
    "compressed_answer",
    "error_answer",
    "listing_answer",
    "placeholders_text",
    "restore_text",
    "restored_answer",
]

#: What the model is told each tool does (kept short: they are sent with every request).
COMPRESS_DESCRIPTION = (
    "Compress messages first_id..last_id of your context (or every output of one tool) into "
    "a summary placeholder, to free room; restore_context brings them back. "
    "Answers in under 500 tokens."
)
LIST_DESCRIPTION = (
    "List the placeholders in force (what you compressed): id, range, summary. "
    "Answers in under 500 tokens."
)
RESTORE_DESCRIPTION = (
    "Restore a placeholder by its id: its messages are sent whole again when they fit. "
    "Answers in under 500 tokens."
)


def _capped(text: str) -> str:
    return text if len(text) <= ANSWER_LIMIT else text[: ANSWER_LIMIT - 6].rstrip() + " [...]"


def _line(p: Placeholder, summary_chars: int) -> str:
    what = f"{p.covered} output(s) of {p.tool}" if p.tool else f"{p.covered} message(s)"
    summary = p.summary
    if len(summary) > summary_chars:
        summary = summary[: max(summary_chars - 6, 0)].rstrip() + " [...]"
    return f"{p.id}: {what}, {p.first_message_id}..{p.last_message_id}: {summary}"


def compress_text(
    store: SyncSessionStore,
    session_id: str,
    first_id: str | None = None,
    last_id: str | None = None,
    summary: str | None = None,
    tool: str | None = None,
) -> str:
    """The ``compress_context`` tool's answer (the placeholder put, or what to do instead)."""
    try:
        p = compress_context(
            store, session_id, first_id=first_id, last_id=last_id, summary=summary, tool=tool
        )
    except (SessionMigratorError, ValueError) as exc:
        return _capped(f"compress_context: {exc}")
    return compressed_answer(p)


def compressed_answer(p: Placeholder) -> str:
    """What ``compress_context`` answers once placeholder ``p`` is put."""
    return _capped(
        f'compressed as {_line(p, ANSWER_LIMIT // 2)}\nrestore_context(id="{p.id}") brings '
        "them back"
    )


def placeholders_text(store: SyncSessionStore, session_id: str) -> str:
    """The ``list_placeholders`` tool's answer: one line per placeholder in force (the newest
    kept when not all fit; their summaries shortened first)."""
    try:
        found = list_placeholders(store, session_id)
    except (SessionMigratorError, ValueError) as exc:
        return _capped(f"list_placeholders: {exc}")
    return listing_answer(found)


def listing_answer(found: Sequence[Placeholder]) -> str:
    """What ``list_placeholders`` answers for the placeholders in force ``found``."""
    if not found:
        return "no placeholders in force"
    share = max(ANSWER_LIMIT // len(found) - 60, 40)
    lines = [_line(p, share) for p in found]
    while len("\n".join(lines)) > ANSWER_LIMIT - 60 and len(lines) > 1:
        lines = lines[1:]
    omitted = len(found) - len(lines)
    head = f"{len(found)} placeholder(s) in force" + (
        f" (the {omitted} oldest left out here)" if omitted else ""
    )
    return _capped("\n".join([head, *lines]))


def restore_text(store: SyncSessionStore, session_id: str, placeholder_id: str) -> str:
    """The ``restore_context`` tool's answer."""
    try:
        p = restore_context(store, session_id, placeholder_id)
    except (SessionMigratorError, ValueError) as exc:
        return _capped(f"restore_context: {exc}")
    return restored_answer(p)


def restored_answer(p: Placeholder) -> str:
    """What ``restore_context`` answers once placeholder ``p`` is restored."""
    return f"{p.id} restored: its {p.covered} message(s) are sent whole again when they fit"


def error_answer(tool: str, exc: Exception) -> str:
    """What a placeholder tool answers when the call cannot be done."""
    return _capped(f"{tool}: {exc}")
