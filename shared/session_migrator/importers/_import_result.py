"""The record of one imported session file, and how it is stored (:meth:`ImportResult.save`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from session_migrator.messages._messages import MARKER_KEY, Message, Session

if TYPE_CHECKING:
    from session_migrator.store import BaseSessionStore

__all__ = ["LAST_ENTRY_KEY", "TIMESTAMPS_KEY", "ImportResult"]

#: Metadata key of the time of the file's last entry (ISO 8601, as the file writes it).
LAST_ENTRY_KEY = "last_entry_at"
#: Session metadata key of the time each message was written in the source file (message id ->
#: ISO 8601 text as the file has it). Message has no time field of its own yet.
TIMESTAMPS_KEY = "source_timestamps"


@dataclass(frozen=True)
class ImportResult:
    """One imported session file.

    ``session`` holds core messages: assistant messages carry ``tool_calls`` and every call is
    answered by a ``role="tool"`` message right after it. ``session.metadata`` names the source
    (``source_format``, ``source_path``, ``source_session_id``, ``source_model``, ``cwd``, and for
    Codex ``observed_input_tokens``: the input the source model really saw on its last request).
    ``skipped`` counts what was not turned into messages, by reason or line type; ``repaired``
    counts what was fixed on the way (placeholder results, moved results, non-UTF-8 lines);
    ``warnings`` says in words what a user should know. ``harness_prompt`` is the source agent's
    own system prompt as the file records it (Codex's ``base_instructions``): not a message of the
    session (a handoff replaces it with the target's own; the source file keeps it).
    """

    session: Session
    path: Path
    skipped: dict[str, int] = field(default_factory=dict)
    repaired: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    lines: int = 0
    harness_prompt: str = ""

    @property
    def source_model(self) -> str | None:
        """The model that last answered in the source session, if the file says."""
        value = self.session.metadata.get("source_model")
        return value if isinstance(value, str) else None

    @property
    def observed_input_tokens(self) -> int | None:
        """The source model's real input token count on its last request, if recorded."""
        value = self.session.metadata.get("observed_input_tokens")
        return value if isinstance(value, int) else None

    def save(self, store: BaseSessionStore) -> int:
        """Store the session; returns how many messages were newly stored. Idempotent.

        A session imported before from a file that has grown since (a session still being
        written) gets what changed: from the first stored message the file now has differently
        (a placeholder result whose real result came, a response that gained tool calls), the
        stored messages of this file are replaced by the file's, in its order. Messages stored
        from elsewhere are kept; the session's metadata is refreshed with the file's.

        An older copy of what is stored (an earlier snapshot of a growing file, imported after a
        later one) adds and replaces nothing, metadata included: each of its messages is stored
        as it is or in a later version (the real result of its placeholder, its response with
        more text or tool calls), and one is a later version or its last entry is older than the
        stored one's. A copy with messages the store lacks is stored as usual: nothing is lost.
        """
        session = self.session
        if not session.messages:
            return 0
        known = store.get_session(session.id)
        older = False
        if known is not None:
            stored = {m.id: m for m in store.load(session.id)}
            forms = [store.stored_form(m) for m in session.messages]
            earlier = [f.id in stored and _earlier_version(f, stored[f.id]) for f in forms]
            pairs = zip(earlier, forms, strict=True)
            covered = all(e or stored.get(f.id) == f for e, f in pairs)
            last, known_last = (
                session.metadata.get(LAST_ENTRY_KEY),
                known.metadata.get(LAST_ENTRY_KEY),
            )
            older = any(earlier) or _is_older(last, known_last)
            if covered and older:
                return 0  # an older copy: nothing of it is new, nothing of it is newer
            # from the first message the file has differently (and not as an earlier version),
            # this file's stored messages are replaced by the file's, in its order
            first = next(
                (
                    k
                    for k, (e, f) in enumerate(zip(earlier, forms, strict=True))
                    if not e and f.id in stored and stored[f.id] != f
                ),
                None,
            )
            if first is not None:
                tail = zip(earlier[first:], forms[first:], strict=True)
                stale = [f.id for e, f in tail if not e and f.id in stored]
                store.delete_messages(session.id, stale)
        added = store.append(
            session.id, session.messages, workspace=session.workspace, metadata=session.metadata
        )
        if known is not None:
            mine, theirs = dict(session.metadata), dict(known.metadata)
            times = {**_mapping(theirs.get(TIMESTAMPS_KEY)), **_mapping(mine.get(TIMESTAMPS_KEY))}
            merged = {**mine, **theirs} if older else {**theirs, **mine}  # the newer one wins
            if times:
                merged[TIMESTAMPS_KEY] = times
            store.set_metadata(session.id, merged)
        return added

    def summary(self) -> dict[str, Any]:
        """A JSON-serialisable digest: ids, counts, skips, repairs and warnings
        (``parent_session_id``: the session a sub-agent transcript belongs to, else ``None``)."""
        msgs = self.session.messages
        return {
            "path": str(self.path),
            "session_id": self.session.id,
            "workspace": self.session.workspace,
            "source_format": self.session.metadata.get("source_format"),
            "source_model": self.source_model,
            "observed_input_tokens": self.observed_input_tokens,
            "lines": self.lines,
            "messages": len(msgs),
            "tool_calls": sum(len(m.tool_calls) for m in msgs),
            "skipped": dict(self.skipped),
            "repaired": dict(self.repaired),
            "warnings": list(self.warnings),
            "parent_session_id": self.session.metadata.get("parent_session_id"),
        }


def _is_older(mine: object, theirs: object) -> bool:
    """Whether the time ``mine`` is before ``theirs`` (``False`` when either is not a time)."""
    times = []
    for value in (mine, theirs):
        if not isinstance(value, str):
            return False
        try:
            times.append(datetime.fromisoformat(value.replace("Z", "+00:00")))
        except ValueError:
            return False
    try:
        return times[0] < times[1]
    except TypeError:  # one with a zone, one without
        return False


def _mapping(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _earlier_version(mine: Message, stored: Message) -> bool:
    """Whether ``mine`` is what ``stored`` was before the source file grew."""
    if mine.id != stored.id or mine.role != stored.role or mine == stored:
        return False
    if mine.role == "tool":
        return _placeholder(mine) and not _placeholder(stored)
    if mine.role != "assistant" or not isinstance(mine.content, str):
        return False
    calls = stored.tool_calls[: len(mine.tool_calls)]
    return calls == mine.tool_calls and stored.text.startswith(mine.text.strip())


def _placeholder(message: Message) -> bool:
    marker = message.extra.get(MARKER_KEY)
    return isinstance(marker, dict) and marker.get("kind") == "placeholder_result"
