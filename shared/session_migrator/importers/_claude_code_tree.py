"""Which entries of a Claude Code session file form the conversation (:func:`active_entries`).

Entries form a tree through ``parentUuid``: a rewind leaves the abandoned branch in the file.
The conversation is the chain from the last message back to the root (across a ``/compact``
boundary through ``logicalParentUuid``); entries off that chain are skipped as ``off_branch``,
except the blocks of a kept response written on a sibling branch (parallel ``tool_use``
entries) and tool results, found by their ``tool_use_id`` wherever they sit. Files without
``uuid`` fields are read in file order. Used by :mod:`._claude_code`.
"""

from __future__ import annotations

from collections.abc import Mapping

from session_migrator.importers._common import Record, Stats

__all__ = ["active_entries", "entry_uuid"]


def entry_uuid(rec: Record) -> str | None:
    value = rec.data.get("uuid")
    return value if isinstance(value, str) and value else None


def active_entries(
    entries: list[Record], records: list[Record], stats: Stats, *, sub_agent: bool = False
) -> list[Record]:
    """The message entries of the active conversation, in file order (a sub-agent transcript's
    own sidechain entries included)."""
    live: list[Record] = []
    seen: set[str] = set()
    for rec in entries:
        uid = entry_uuid(rec)
        if rec.data.get("isSidechain") is True and not sub_agent:
            stats.skip("sidechain")
        elif uid is not None and uid in seen:
            stats.skip("duplicate_entry")
        else:
            if uid is not None:
                seen.add(uid)
            live.append(rec)
    if not live or any(entry_uuid(r) is None for r in live):
        return live
    by_uuid = {u: r for r in records if (u := entry_uuid(r)) is not None}
    chain: set[str] = set()
    cur: Record | None = live[-1]
    while cur is not None:
        uid = entry_uuid(cur)
        if uid is None or uid in chain:
            break
        chain.add(uid)
        parent = cur.data.get("parentUuid") or cur.data.get("logicalParentUuid")
        if not isinstance(parent, str):
            break
        cur = by_uuid.get(parent)
        if cur is None:
            stats.warnings.append(
                f"entry {uid} names a parent {parent} that is not in the file; the conversation "
                "starts after it"
            )
    response_ids = {_response_id(r) for r in live if entry_uuid(r) in chain} - {None}
    # a response's blocks (parallel tool calls) may sit on sibling branches: all of them belong
    responses = [r for r in live if entry_uuid(r) in chain or _response_id(r) in response_ids]
    calls = {c for r in responses for c in _blocks_of(r, "tool_use", "id")}
    answered = {c for r in responses for c in _blocks_of(r, "tool_result", "tool_use_id")}
    in_responses = {id(r) for r in responses}
    kept: list[Record] = []
    for rec in live:
        if id(rec) in in_responses or _answers_only(rec, calls - answered):
            kept.append(rec)  # results are found by tool_use_id wherever they sit in the tree
        else:
            stats.skip("off_branch")
    if stats.skipped["off_branch"]:
        stats.warnings.append(
            f"{stats.skipped['off_branch']} entries on abandoned branches (rewinds, edits) were "
            "skipped; the conversation follows the last message back to the start"
        )
    return kept


def _response_id(rec: Record) -> str | None:
    if rec.data.get("type") != "assistant":
        return None
    value = rec.data["message"].get("id")
    return value if isinstance(value, str) else None


def _blocks_of(rec: Record, block_type: str, key: str) -> list[str]:
    content = rec.data["message"].get("content")
    if not isinstance(content, list):
        return []
    return [
        b[key]
        for b in content
        if isinstance(b, Mapping) and b.get("type") == block_type and isinstance(b.get(key), str)
    ]


def _answers_only(rec: Record, open_calls: set[str]) -> bool:
    content = rec.data["message"].get("content")
    if rec.data.get("type") != "user" or not isinstance(content, list) or not content:
        return False
    ids = _blocks_of(rec, "tool_result", "tool_use_id")
    return len(ids) == len(content) and all(i in open_calls for i in ids)
