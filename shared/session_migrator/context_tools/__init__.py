"""Reading back what a fit cut or shrunk: :func:`read_context` pages the original text of a
message by its id (from a list of the original messages), :func:`list_placeholders` lists
the ids a fit's report says were dropped, summarized or cut inside. Each page is capped
(``limit`` characters) and says how to get the next one.

Sub-agents: :func:`parent_note` is what a child session is told of its parent (a fit of a
session whose metadata names a ``parent_session_id`` sends it on its own), :func:`parent_summary`
the same from the parent's messages (no store: an agent framework's sub-agent call),
:func:`child_result` what a parent is given of a child's run.

The agent's own scissors: :func:`compress_context` puts a placeholder (a summary) on a range of
a stored session, or on the outputs of one tool; :func:`list_placeholders` with a store lists
the placeholders in force and :func:`restore_context` restores one (see
:mod:`session_migrator.store._placeholders`). Fits of the session honour them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

from session_migrator.context_tools._placeholder_tools import (
    COMPRESS_DESCRIPTION,
    LIST_DESCRIPTION,
    RESTORE_DESCRIPTION,
    compress_text,
    compressed_answer,
    error_answer,
    listing_answer,
    placeholders_text,
    restore_text,
    restored_answer,
)
from session_migrator.fitting._truncate import RANGE_SEPARATOR
from session_migrator.messages._messages import Message
from session_migrator.migration._report import MigrationReport
from session_migrator.sessions._parent import parent_note, parent_summary
from session_migrator.sessions._placeholder_view import apply_placeholders
from session_migrator.store._placeholders import (
    ANSWER_LIMIT,
    Placeholder,
    PlaceholderError,
    PlaceholderNotFoundError,
    compress_context,
    new_placeholder,
    placeholders_in_force,
    restore_context,
    restored,
)
from session_migrator.store._placeholders import list_placeholders as _stored_placeholders

if TYPE_CHECKING:
    from session_migrator.store._protocol import SyncSessionStore

__all__ = [
    "ANSWER_LIMIT",
    "COMPRESS_DESCRIPTION",
    "DEFAULT_LIMIT",
    "LIST_DESCRIPTION",
    "RESTORE_DESCRIPTION",
    "Placeholder",
    "PlaceholderError",
    "PlaceholderNotFoundError",
    "apply_placeholders",
    "child_result",
    "compress_context",
    "compress_text",
    "compressed_answer",
    "error_answer",
    "list_placeholders",
    "listing_answer",
    "new_placeholder",
    "parent_note",
    "parent_summary",
    "placeholders_in_force",
    "placeholders_text",
    "read_context",
    "restore_context",
    "restore_text",
    "restored",
    "restored_answer",
]

#: The most characters one page holds unless told (about 1,000 tokens).
DEFAULT_LIMIT = 4_000


def read_context(
    messages: Sequence[Message], id: str, offset: int = 0, limit: int = DEFAULT_LIMIT
) -> str:
    """A page of the text of the message ``id`` in ``messages`` (the originals), from
    ``offset`` for at most ``limit`` characters, ending with how to read the next page."""
    if offset < 0 or limit <= 0:
        raise ValueError("offset must be >= 0 and limit > 0; pass offset=0 to start at the top")
    found = next((m for m in messages if m.id == id), None)
    text = found.text if found is not None else _run_text(messages, id)
    if text is None:
        raise KeyError(
            f"no message with id {id!r}; pass the id a read_context(...) marker names (one "
            'message\'s id, or "<first id>..<last id>" for the messages a note covers)'
        )
    page = text[offset : offset + limit]
    end = offset + len(page)
    if end < len(text):
        more = len(text) - end
        return f'{page}\n[... {more:,} more characters; read_context(id="{id}", offset={end})]'
    return page


def _run_text(messages: Sequence[Message], id: str) -> str | None:
    """The messages ``"<first id>..<last id>"`` names, one block each (``None``: no such run)."""
    first, separator, last = id.partition(RANGE_SEPARATOR)
    ids = [m.id for m in messages]
    if not separator or first not in ids or last not in ids:
        return None
    start, end = ids.index(first), ids.index(last)
    if start > end:
        return None
    blocks = []
    for m in messages[start : end + 1]:
        calls = "".join(f"\ncalled {c.name}({c.arguments})" for c in m.tool_calls)
        blocks.append(f"[{m.id}] {m.role}: {m.text}{calls}")
    return "\n\n".join(blocks)


@overload
def list_placeholders(report: MigrationReport) -> list[dict[str, str]]: ...


@overload
def list_placeholders(
    report: SyncSessionStore, session_id: str, *, include_restored: bool = False
) -> list[Placeholder]: ...


def list_placeholders(
    report: Any, session_id: str | None = None, *, include_restored: bool = False
) -> list[dict[str, str]] | list[Placeholder]:
    """With a fit's ``report``: what it dropped, summarized or cut inside, one
    ``{"id", "kind"}`` each. With a store and ``session_id``: the placeholders the agent put
    on that session and has not restored (``include_restored``: those too), oldest first."""
    if not isinstance(report, MigrationReport):
        if session_id is None:
            raise TypeError("list_placeholders(store, session_id): pass the session's id")
        return _stored_placeholders(report, session_id, include_restored=include_restored)
    rows = [{"id": i, "kind": "dropped"} for i in report.dropped_ids]
    rows += [{"id": i, "kind": "summarized"} for i in report.summarized_ids]
    rows += [{"id": i, "kind": "truncated"} for i in report.truncated_ids]
    return rows


def child_result(messages: Sequence[Message], limit: int = DEFAULT_LIMIT // 2) -> str:
    """What a parent agent is given of a sub-agent's run (its ``messages``): the sub-agent's
    final answer (cut to ``limit`` characters, its head and tail kept) and one line on the work
    behind it, not the whole transcript (it stays in the sub-agent's session)."""
    answers = [m for m in messages if m.role == "assistant" and not m.tool_calls and m.text]
    calls = sum(len(m.tool_calls) for m in messages)
    answer = answers[-1].text if answers else ""
    if len(answer) > limit:
        half = max(limit // 2 - 10, 1)
        answer = (
            f"{answer[:half]}\n[... {len(answer) - 2 * half:,} characters ...]\n{answer[-half:]}"
        )
    work = f"[sub-agent: {len(messages)} messages, {calls} tool call(s); its transcript is kept]"
    return f"{answer}\n{work}" if answer else f"(the sub-agent gave no answer)\n{work}"
