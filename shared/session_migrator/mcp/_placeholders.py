"""The placeholder tools' work, without MCP: ``compress_context``, ``list_placeholders`` and
``restore_context`` over a session store, answered as JSON-able dicts of at most
:data:`~session_migrator.store._placeholders.ANSWER_LIMIT` characters (about 500 tokens).

The MCP server (``_placeholder_tools``) and the HTTP API (``server/_placeholder_routes``)
answer with these; errors are :class:`~session_migrator.context_tools.PlaceholderError` (what
to do instead) and :class:`~session_migrator.SessionNotFoundError`.
"""

from __future__ import annotations

import json
from typing import Any

from session_migrator.context_tools._placeholder_tools import (
    COMPRESS_DESCRIPTION,
    LIST_DESCRIPTION,
    RESTORE_DESCRIPTION,
)
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
    "compress_answer",
    "list_answer",
    "restore_answer",
]


def _row(p: Placeholder, summary_chars: int | None = None) -> dict[str, Any]:
    row = p.as_dict()
    if summary_chars is not None and len(p.summary) > summary_chars:
        row["summary"] = p.summary[: max(summary_chars - 5, 0)].rstrip() + " [...]"
    return row


def compress_answer(
    store: SyncSessionStore,
    session_id: str,
    first_id: str | None = None,
    last_id: str | None = None,
    summary: str | None = None,
    tool: str | None = None,
) -> dict[str, Any]:
    """Compress (see :func:`~session_migrator.context_tools.compress_context`)."""
    p = compress_context(
        store, session_id, first_id=first_id, last_id=last_id, summary=summary, tool=tool
    )
    what = f"{p.covered} output(s) of {p.tool}" if p.tool else f"{p.covered} message(s)"
    return {
        "session_id": session_id,
        "placeholder": _row(p, ANSWER_LIMIT // 2),
        "note": f'{what} compressed as {p.id}; restore_context(id="{p.id}") brings them back',
    }


def list_answer(store: SyncSessionStore, session_id: str) -> dict[str, Any]:
    """The placeholders in force, within :data:`ANSWER_LIMIT` characters (summaries shortened,
    then the oldest left out, as ``omitted`` says)."""
    found = list_placeholders(store, session_id)
    answer: dict[str, Any] = {"session_id": session_id, "count": len(found), "omitted": 0}
    rows = [_row(p) for p in found]
    share = ANSWER_LIMIT
    while rows:
        answer["placeholders"] = rows
        if len(json.dumps(answer)) <= ANSWER_LIMIT:
            return answer
        share = max(share // 2, 40)
        rows = [_row(p, share) for p in found[len(found) - len(rows) :]]
        if share == 40 and len(json.dumps({**answer, "placeholders": rows})) > ANSWER_LIMIT:
            rows = rows[1:]
            answer["omitted"] = len(found) - len(rows)
    answer["placeholders"] = []
    return answer


def restore_answer(store: SyncSessionStore, session_id: str, placeholder_id: str) -> dict[str, Any]:
    """Restore (see :func:`~session_migrator.context_tools.restore_context`)."""
    p = restore_context(store, session_id, placeholder_id)
    return {
        "session_id": session_id,
        "placeholder": _row(p, ANSWER_LIMIT // 2),
        "note": f"{p.id} restored: its {p.covered} message(s) are sent whole again when they fit",
    }
