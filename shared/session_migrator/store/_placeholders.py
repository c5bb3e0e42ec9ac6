"""Placeholders an agent puts on its own context: a range of messages, or the outputs of one
tool, compressed into a summary until the agent restores it.

They are kept in the session's metadata under :data:`PLACEHOLDERS_KEY` (a list of records:
``id``, ``first_message_id``, ``last_message_id``, ``tool``, ``covered``, ``summary``,
``created``, ``restored``), so every backend keeps them across processes, and a
:class:`~session_migrator.SessionFitter` honours them (:func:`apply_placeholders`): a
compressed range is sent as one line carrying its id, a restored one whole again. Nothing is
deleted: the full messages stay in the store. Writes take the session's ``placeholders`` lease,
so two processes never overwrite each other's placeholders.

>>> from session_migrator import Message
>>> from session_migrator.store import open_store
>>> store = open_store("memory://")
>>> _ = store.append("s", [Message("user", f"step {i}", id=f"m{i}") for i in range(5)])
>>> compress_context(store, "s", first_id="m0", last_id="m2", summary="steps 0-2 done").id
'p1'
>>> [p.id for p in list_placeholders(store, "s")]
['p1']
>>> restore_context(store, "s", "p1").restored is not None
True
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from session_migrator._errors import SessionMigratorError, SessionNotFoundError
from session_migrator.counting._tokens import HeuristicCounter
from session_migrator.messages._messages import Message
from session_migrator.store._protocol import SyncSessionStore
from session_migrator.summaries._extractive import ExtractiveSummarizer

__all__ = [
    "ANSWER_LIMIT",
    "PLACEHOLDERS_KEY",
    "SUMMARY_TOKENS",
    "Placeholder",
    "PlaceholderError",
    "PlaceholderNotFoundError",
    "compress_context",
    "covered_ids",
    "list_placeholders",
    "new_placeholder",
    "placeholders_in_force",
    "restore_context",
    "restored",
]

#: The session metadata key the placeholders are kept under.
PLACEHOLDERS_KEY = "session_migrator.placeholders"
#: The most tokens a summary the offline summarizer writes for a placeholder takes.
SUMMARY_TOKENS = 150
#: The most characters a summary given by the agent keeps, and the most a tool's answer
#: (one placeholder, or the list of them) takes: about 500 tokens, 0.4% of a 128k window and
#: under a third of a 1,536-token one.
ANSWER_LIMIT = 2_000
_LEASE = "placeholders"


class PlaceholderError(SessionMigratorError, ValueError):
    """A compress or restore call that cannot be done; the message says what to do instead."""


class PlaceholderNotFoundError(PlaceholderError, LookupError):
    """No placeholder of that id is in force in the session (the message lists those that are)."""


@dataclass(frozen=True)
class Placeholder:
    """One placeholder: messages ``first_message_id`` .. ``last_message_id`` (store order,
    inclusive) compressed to ``summary``; with ``tool``, only that tool's outputs in the range.
    ``restored``: when it was restored (``None``: in force)."""

    id: str
    first_message_id: str
    last_message_id: str
    summary: str
    created: str
    covered: int
    tool: str | None = None
    restored: str | None = None

    @property
    def in_force(self) -> bool:
        return self.restored is None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> Placeholder:
        return cls(
            id=str(row["id"]),
            first_message_id=str(row["first_message_id"]),
            last_message_id=str(row["last_message_id"]),
            summary=str(row.get("summary", "")),
            created=str(row.get("created", "")),
            covered=int(row.get("covered", 0)),
            tool=row.get("tool") if isinstance(row.get("tool"), str) else None,
            restored=row.get("restored") if isinstance(row.get("restored"), str) else None,
        )


def _all(metadata: Mapping[str, Any]) -> list[Placeholder]:
    rows = metadata.get(PLACEHOLDERS_KEY)
    if not isinstance(rows, list):
        return []
    out = []
    for row in rows:
        try:
            out.append(Placeholder.from_dict(row))
        except (KeyError, TypeError, ValueError):
            continue  # (a hand-edited record that is not one: ignored)
    return out


def placeholders_in_force(metadata: Mapping[str, Any] | None) -> tuple[Placeholder, ...]:
    """The placeholders in force in a session's ``metadata``, oldest first."""
    return tuple(p for p in _all(metadata or {}) if p.in_force)


def list_placeholders(
    store: SyncSessionStore, session_id: str, *, include_restored: bool = False
) -> list[Placeholder]:
    """The placeholders in force in ``session_id`` (with ``include_restored``, the restored
    ones too), oldest first. Unknown session: :class:`~session_migrator.SessionNotFoundError`."""
    info = store.get_session(session_id)
    if info is None:
        raise SessionNotFoundError(session_id)
    found = _all(info.metadata)
    return found if include_restored else [p for p in found if p.in_force]


def covered_ids(messages: Sequence[Message], placeholder: Placeholder) -> list[str]:
    """The ids of ``messages`` that ``placeholder`` stands for (none when its range is gone)."""
    ids = [m.id for m in messages]
    try:
        first, last = (
            ids.index(placeholder.first_message_id),
            ids.index(placeholder.last_message_id),
        )
    except ValueError:
        return []
    span = messages[first : last + 1]
    if placeholder.tool is None:
        return [m.id for m in span]
    return [m.id for m in span if m.role == "tool" and _tool_name(messages, m) == placeholder.tool]


def _tool_name(messages: Sequence[Message], result: Message) -> str | None:
    for m in messages:
        for call in m.tool_calls:
            if call.id == result.tool_call_id:
                return call.name
    return None


def _widen(messages: Sequence[Message], first: int, last: int) -> tuple[int, int]:
    """``first`` .. ``last`` widened until no tool call is apart from its results."""
    while True:
        lo, hi = first, last
        span = messages[lo : hi + 1]
        call_ids = {c.id for m in span for c in m.tool_calls}
        result_ids = {m.tool_call_id for m in span if m.role == "tool" and m.tool_call_id}
        for k, m in enumerate(messages):
            if k < lo and (c := {c.id for c in m.tool_calls}) and c & result_ids:
                first = min(first, k)
            if k > hi and m.role == "tool" and m.tool_call_id in call_ids:
                last = max(last, k)
        if (first, last) == (lo, hi):
            return first, last


class _Lease:
    def __init__(self, store: SyncSessionStore, session_id: str) -> None:
        self.store, self.session_id, self.owner = store, session_id, uuid.uuid4().hex

    def __enter__(self) -> None:
        deadline = time.monotonic() + 10
        while not self.store.acquire_lease(self.session_id, _LEASE, self.owner, 30):
            if time.monotonic() > deadline:
                raise PlaceholderError(
                    f"another writer holds the placeholders of session {self.session_id!r}; "
                    "try again in a moment"
                )
            time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        self.store.release_lease(self.session_id, _LEASE, self.owner)


def _write(store: SyncSessionStore, session_id: str, rows: list[Placeholder]) -> None:
    info = store.get_session(session_id)
    if info is None:
        raise SessionNotFoundError(session_id)
    meta = dict(info.metadata)
    meta[PLACEHOLDERS_KEY] = [p.as_dict() for p in rows]
    store.set_metadata(session_id, meta)


def _index(ids: list[str], message_id: str, what: str) -> int:
    try:
        return ids.index(message_id)
    except ValueError:
        raise PlaceholderError(
            f"no message with id {message_id!r} in this session ({what}); pass the ids of "
            "stored messages (a fit's messages and markers show them)"
        ) from None


def compress_context(
    store: SyncSessionStore,
    session_id: str,
    *,
    first_id: str | None = None,
    last_id: str | None = None,
    summary: str | None = None,
    tool: str | None = None,
) -> Placeholder:
    """Compress messages ``first_id`` .. ``last_id`` (store order, inclusive) of
    ``session_id`` into a placeholder carrying ``summary`` (``None``: written by the offline
    summarizer, within :data:`SUMMARY_TOKENS`); with ``tool``, only that tool's outputs there
    (the range defaults to the whole session before the current turn). A range that would part
    a tool call from its results is widened to keep them together. The current turn's question
    (the newest user message) and its newest step (the newest assistant message) are never
    compressed, nor a system message; the turn's finished steps between them may be (an agent
    deep in a long task freeing room for its next steps).

    Bad input raises :class:`PlaceholderError` saying what to do (unknown ids, a reversed
    range, a range overlapping a placeholder in force); an unknown session,
    :class:`~session_migrator.SessionNotFoundError`.
    """
    if tool is None and (first_id is None or last_id is None):
        raise PlaceholderError(
            "pass first_id and last_id (the range to compress), or tool (a tool's outputs)"
        )
    if store.get_session(session_id) is None:
        raise SessionNotFoundError(session_id)
    with _Lease(store, session_id):
        messages = store.load(session_id)
        existing = _all(store.get_session(session_id).metadata)  # type: ignore[union-attr]
        placeholder = new_placeholder(
            messages, existing, first_id=first_id, last_id=last_id, summary=summary, tool=tool
        )
        _write(store, session_id, [*existing, placeholder])
    return placeholder


def new_placeholder(
    messages: Sequence[Message],
    existing: Sequence[Placeholder],
    *,
    first_id: str | None = None,
    last_id: str | None = None,
    summary: str | None = None,
    tool: str | None = None,
) -> Placeholder:
    """The placeholder :func:`compress_context` would add to ``existing`` over ``messages``
    (no store: an agent that keeps its placeholders in its own state). Same rules, same
    errors."""
    if tool is None and (first_id is None or last_id is None):
        raise PlaceholderError(
            "pass first_id and last_id (the range to compress), or tool (a tool's outputs)"
        )
    ids = [m.id for m in messages]
    first = _index(ids, first_id, "first_id") if first_id is not None else 0
    last = _index(ids, last_id, "last_id") if last_id is not None else len(messages) - 1
    if first > last:
        raise PlaceholderError(f"first_id {first_id!r} comes after last_id {last_id!r}; swap them")
    if tool is None:
        first, last = _widen(messages, first, last)
    current = max((k for k, m in enumerate(messages) if m.role == "user"), default=None)
    if current is not None and last >= current:
        # the current turn's question and its newest step (the call in progress, or the
        # answer) stay; its finished steps may go, by a range after the question
        newest = max((k for k, m in enumerate(messages) if m.role == "assistant"), default=-1)
        if tool is not None and last_id is None:
            last = current - 1
        elif first <= current or last >= newest:
            raise PlaceholderError(
                "the range reaches the current turn's question or its newest step (the newest "
                "user message, the newest assistant message), which stay; compress older "
                "messages, or the turn's finished steps between them"
            )
    if any(m.role == "system" for m in messages[first : last + 1]) and tool is None:
        raise PlaceholderError(
            "the range holds a system message, which is always sent; start it after"
        )
    candidate = Placeholder("", ids[first], ids[last], "", "", 0, tool)
    covered = [m for m in messages if m.id in set(covered_ids(messages, candidate))]
    if not covered:
        where = f"tool {tool!r} has no outputs" if tool else "nothing"
        raise PlaceholderError(f"{where} in that range; check list_placeholders and the ids")
    held = {i for p in existing if p.in_force for i in covered_ids(messages, p)}
    if tool is not None:  # (a tool's outputs not compressed yet: the newer ones, say)
        covered = [m for m in covered if m.id not in held]
        if not covered:
            raise PlaceholderError(
                f"every output of tool {tool!r} there is compressed already (list_placeholders "
                "shows them); restore one to compress it again"
            )
    if tool is not None:  # (its span holds no output another placeholder stands for)
        span = Placeholder("", covered[0].id, covered[-1].id, "", "", 0, tool)
        covered = [m for m in messages if m.id in set(covered_ids(messages, span))]
    for p in existing:
        if p.in_force and {m.id for m in covered} & set(covered_ids(messages, p)):
            raise PlaceholderError(
                f"that range overlaps placeholder {p.id!r}, in force; restore it first "
                "(restore_context) or compress another range"
            )
    text = (summary or "").strip()
    if not text:
        text = (
            ExtractiveSummarizer()
            .summarize(covered, max_tokens=SUMMARY_TOKENS, counter=HeuristicCounter("o200k_base"))
            .strip()
            or f"{len(covered)} message(s)"
        )
    if len(text) > ANSWER_LIMIT // 2:
        text = text[: ANSWER_LIMIT // 2 - 5].rstrip() + " [...]"
    return Placeholder(
        id=f"p{len(existing) + 1}",
        first_message_id=covered[0].id if tool else ids[first],
        last_message_id=covered[-1].id if tool else ids[last],
        summary=text,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        covered=len(covered),
        tool=tool,
    )


def restore_context(store: SyncSessionStore, session_id: str, placeholder_id: str) -> Placeholder:
    """Restore placeholder ``placeholder_id`` of ``session_id``: from now on fits send its
    messages whole again (when they fit). Returns it, ``restored`` set. A placeholder not in
    force raises :class:`PlaceholderError` saying which are."""
    if store.get_session(session_id) is None:
        raise SessionNotFoundError(session_id)
    with _Lease(store, session_id):
        existing = _all(store.get_session(session_id).metadata)  # type: ignore[union-attr]
        rows, done = restored(existing, placeholder_id)
        _write(store, session_id, rows)
    return done


def restored(
    existing: Sequence[Placeholder], placeholder_id: str
) -> tuple[list[Placeholder], Placeholder]:
    """``existing`` with placeholder ``placeholder_id`` restored, and it (no store: an agent's
    own state). One not in force raises :class:`PlaceholderNotFoundError` naming those that
    are."""
    found = next((p for p in existing if p.id == placeholder_id and p.in_force), None)
    if found is None:
        live = [p.id for p in existing if p.in_force]
        shown = ", ".join(live) if live else "none"
        raise PlaceholderNotFoundError(
            f"no placeholder {placeholder_id!r} in force (in force: {shown}); call "
            "list_placeholders for their ids"
        )
    done = Placeholder(
        **{**found.as_dict(), "restored": datetime.now(UTC).isoformat(timespec="seconds")}
    )
    return [done if p is found else p for p in existing], done
