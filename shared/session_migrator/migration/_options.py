"""How one fit is made, as one value: :class:`FitOptions`.

``migrate()`` takes its options as keywords (the public signature), and the fitters
(:class:`~session_migrator.SessionFitter`, the request fit) have their own; each builds one
frozen :class:`FitOptions`, checked here once, and passes it down the layers instead of a dozen
parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._fits import PendingToolCalls, check_pending
from session_migrator.migration._gap import check_gap_note
from session_migrator.migration._strategies import Compressor
from session_migrator.recall._related import RelatedSession, RelatedSessions
from session_migrator.summaries._summarizers import Summarizer, Summary

__all__ = ["FitOptions"]


@dataclass(frozen=True, slots=True)
class FitOptions:
    """The options of one fit (see :func:`~session_migrator.migrate` for each).

    ``budget_cap`` caps the budget (a fitter's ``token_limit``); the others are ``migrate()``'s
    keywords of the same names. Wrong types raise :class:`TypeError` when it is made.
    """

    strategy: str | Compressor = "auto"
    query: str | None = None
    summarizer: Summarizer | None = None
    reserve_output: int | None = None
    counter: TokenCounter | None = None
    previous_summary: Summary | None = None
    extra_reserved: int = 0
    source_model: str | None = None
    pending_tool_calls: PendingToolCalls = "drop"
    related: RelatedSessions | Sequence[RelatedSession] | None = None
    budget_cap: int | None = None
    #: an embedding model recall fuses with bm25 (see :mod:`session_migrator.recall._hybrid`)
    embeddings: Any = None
    #: the note of the gap before the newest user message: ``True`` (past 30 minutes), ``False``
    #: (none) or the threshold (see :mod:`session_migrator.migration._gap`)
    gap_note: bool | timedelta = True
    #: when the messages without a ``timestamp`` were stored, by id (a fitter's own appends,
    #: which it keeps as given): the gap note reads them
    times: Mapping[str, datetime] | None = None

    def __post_init__(self) -> None:
        counter = self.counter
        if counter is not None and not callable(getattr(counter, "count_message", None)):
            raise TypeError(
                f"counter must be a TokenCounter (e.g. counter_for('o200k_base')), got "
                f"{type(counter).__name__}"
            )
        if self.query is not None and not isinstance(self.query, str):
            raise TypeError(f"query must be a string, got {type(self.query).__name__}")
        summarizer = self.summarizer
        if summarizer is not None and not callable(getattr(summarizer, "summarize", None)):
            raise TypeError(
                "summarizer must be a Summarizer (an object with summarize(...), e.g. "
                f"OpenAISummarizer()), got {type(summarizer).__name__}"
            )
        check_pending(self.pending_tool_calls)
        check_gap_note(self.gap_note)

    @property
    def gap_threshold(self) -> timedelta | None:
        """The gap past which a note of it is sent (``None``: never)."""
        return check_gap_note(self.gap_note)

    @property
    def keep_pending(self) -> bool:
        """Whether the newest tool call waiting for its results is kept (``"keep"``)."""
        return self.pending_tool_calls == "keep"
