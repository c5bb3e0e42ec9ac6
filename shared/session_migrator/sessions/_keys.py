"""What a :class:`~session_migrator.SessionFitter`'s cached fit is keyed by, and the record of
a change of target model it logs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from session_migrator.store import BaseSessionStore

from session_migrator.migration._report import MigrationReport
from session_migrator.models._windows import ModelWindow
from session_migrator.recall._related import RelatedSessions

__all__ = ["FitKey", "log_migration", "related_key"]


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
    facts: tuple[str, ...] = ()
    placeholders: tuple[tuple[str, str], ...] = ()


def related_key(related: RelatedSessions | None) -> tuple[object, ...]:
    """What a fit's cache is keyed by of the other sessions: each one's count and last
    activity."""
    if related is None:
        return ()
    return (*related.notes, *((s.id, s.message_count, s.updated_at) for s in related.sessions))


def log_migration(
    store: BaseSessionStore,
    session_id: str,
    previous: str | None,
    model: str,
    report: MigrationReport,
) -> None:
    """Log in ``store`` that ``session_id`` moved from ``previous`` to ``model``."""
    from session_migrator.store import MigrationRecord

    store.log_migration(
        MigrationRecord(
            session_id=session_id,
            from_model=previous,
            to_model=model,
            tokens_before=report.tokens_before,
            tokens_after=report.tokens_after,
            budget=report.budget,
            strategy=report.strategy,
            decision=report.decision,
        )
    )
