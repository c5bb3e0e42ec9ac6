"""What a :class:`~session_migrator.SessionFitter`'s cached fit is keyed by, and the record of
a change of target model it logs, and the rolling summary it keeps in the store."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from session_migrator.store import BaseSessionStore

from session_migrator._errors import ConflictError
from session_migrator.migration._report import MigrationReport
from session_migrator.models._windows import ModelWindow
from session_migrator.recall._related import RelatedSessions
from session_migrator.summaries._summarizers import Summary

__all__ = ["FitKey", "log_migration", "related_key", "save_summary", "stored_summary"]


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


def save_summary(
    store: BaseSessionStore,
    session_id: str,
    summary: Summary,
    model: str,
    strategy: str,
    previous: tuple[Summary, int] | None,
) -> None:
    """Keep ``summary`` as the session's rolling summary, unless it is ``previous``'s."""
    if previous is not None and previous[0] == summary:
        return
    # on a conflict another writer stored a summary first: theirs stands, ours is recomputable
    with contextlib.suppress(ConflictError):
        store.put_summary(
            session_id,
            summary.text,
            first_id=summary.first_id,
            last_id=summary.last_id,
            covered_count=summary.covered_count,
            model=model,
            strategy=summary.summarizer or strategy,
            expected_revision=previous[1] if previous else 0,
        )


def stored_summary(store: BaseSessionStore, session_id: str) -> tuple[Summary, int] | None:
    """The session's rolling summary in ``store``, and its revision (``None``: none kept)."""
    stored = store.get_summary(session_id)
    if stored is None:
        return None
    summary = Summary(
        stored.text, stored.first_id, stored.last_id, stored.covered_count, stored.strategy
    )
    return summary, stored.revision
