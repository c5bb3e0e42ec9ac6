"""What a :class:`~session_migrator.SessionFitter`'s cached fit is keyed by."""

from __future__ import annotations

from dataclasses import dataclass

from session_migrator.models._windows import ModelWindow
from session_migrator.recall._related import RelatedSessions

__all__ = ["FitKey", "related_key"]


@dataclass(frozen=True)
class FitKey:
    """What a fit's cached result is keyed by: the log's length and newest id, the target
    and the options, the other sessions recall reads, and the summaries written ahead."""

    count: int
    last_id: str | None
    window: ModelWindow
    strategy: str
    reserve_output: int | None
    extra_reserved: int
    query: str | None
    counter: str
    budget_cap: int | None
    pending_tool_calls: str
    related: tuple[object, ...] = ()
    compacted: int = 0


def related_key(related: RelatedSessions | None) -> tuple[object, ...]:
    """What a fit's cache is keyed by of the other sessions: each one's count and last
    activity."""
    if related is None:
        return ()
    return (*related.notes, *((s.id, s.message_count, s.updated_at) for s in related.sessions))
