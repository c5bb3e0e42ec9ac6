"""What a fit returns: the :class:`Plan` of ``plan()``, and the :class:`MigrationResult` of
``migrate()`` with its :class:`MigrationReport` (what was decided and done, JSON-ready)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from session_migrator.messages._messages import Message
from session_migrator.models._windows import Budget, ModelWindow
from session_migrator.summaries._summarizers import Summary

__all__ = ["MigrationReport", "MigrationResult", "Plan"]


@dataclass(frozen=True)
class Plan:
    """The fit decision for one session and one target."""

    window: ModelWindow
    budget: Budget
    tokens: int
    exact: bool
    counter: str

    @property
    def fits(self) -> bool:
        return self.tokens <= self.budget.tokens

    @property
    def share(self) -> float:
        """Share of the input budget the session uses (may exceed 1.0)."""
        return self.tokens / self.budget.tokens if self.budget.tokens else float("inf")


@dataclass
class MigrationReport:
    """What a migration decided and did. ``to_dict()`` is JSON-serialisable.

    ``tokens_before`` is the whole session's count. A cold migration that compresses counts
    only the newest messages (until they are over the budget); the rest are counted the first
    time ``tokens_before`` is read, so a caller who never reads it never pays for it.
    """

    target: str
    decision: Literal["fits", "compressed"]
    strategy: str
    _tokens_before: int | None = field(repr=False)
    tokens_after: int
    budget: int
    context_window: int
    max_input_tokens: int
    reserved_output: int
    safety_margin: int
    exact: bool
    counter: str
    window_source: str
    messages_before: int
    messages_after: int
    source_model: str | None = None
    dropped_ids: list[str] = field(default_factory=list)
    summarized_ids: list[str] = field(default_factory=list)
    recalled_ids: list[str] = field(default_factory=list)
    #: the messages of other sessions sent as excerpts (``migrate(..., related=...)``), by
    #: session id
    related_ids: dict[str, list[str]] = field(default_factory=dict)
    truncated_ids: list[str] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    fallbacks: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: the id of the last message sent that the next request sends again, byte for byte, while
    #: the conversation only grows: the whole request when it fits, the end of the kept turns
    #: past the budget with a kept state (an Anthropic ``cache_control`` breakpoint goes there;
    #: see docs/cost.md); ``None`` when no part is known to stay
    stable_through: str | None = None
    _count_before: Callable[[], int] | None = field(default=None, repr=False, compare=False)

    @property
    def tokens_before(self) -> int:
        """The whole session's token count (with the reply priming)."""
        if self._tokens_before is None:
            assert self._count_before is not None
            self._tokens_before = self._count_before()
            self._count_before = None
        return self._tokens_before

    @tokens_before.setter
    def tokens_before(self, value: int) -> None:
        self._tokens_before, self._count_before = value, None

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
        return f"MigrationReport(tokens_before={self.tokens_before!r}, {shown})"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "_count_before":
                continue
            if f.name == "_tokens_before":
                out["tokens_before"] = self.tokens_before
            else:
                out[f.name] = copy.deepcopy(getattr(self, f.name))
        return out

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kwargs)


@dataclass(frozen=True)
class MigrationResult:
    """The messages to send to the target, the report, and the summary (if one was made)."""

    messages: list[Message]
    report: MigrationReport
    summary: Summary | None = None
