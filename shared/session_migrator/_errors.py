"""The exception tree. Every error the library raises on purpose derives from one root.

    SessionMigratorError
    ├── InvalidMessageError      a message is malformed (index and field named)
    ├── UnknownModelError        a model name has no known window (close matches attached)
    ├── BudgetError              the budget cannot hold even the minimum result
    │   └── OutputReserveError   the output a request asks for leaves its input too little room
    ├── SummarizerError          a summarizer failed (callers fall back to trim)
    ├── StoreError               a store operation failed (the backend's own error attached)
    │   ├── InvalidIdError       a session, workspace or user id is not a non-empty string
    │   ├── SessionNotFoundError
    │   └── ConflictError        a write lost a race (e.g. a summary revision changed)
    ├── ImportFormatError        a session file cannot be read
    └── MissingDependencyError   an optional extra is not installed (install command attached)

Each carries structured fields and a message that says what happened and how to fix it.

Warnings: :class:`StoreDurabilityWarning` (a store opened on a server that keeps nothing across
a restart).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "BudgetError",
    "ConflictError",
    "ImportFormatError",
    "InvalidIdError",
    "InvalidMessageError",
    "MissingDependencyError",
    "OutputReserveError",
    "SessionMigratorError",
    "SessionNotFoundError",
    "StoreDurabilityWarning",
    "StoreError",
    "SummarizerError",
    "UnknownModelError",
]


class SessionMigratorError(Exception):
    """Root of every error this library raises on purpose."""


class InvalidMessageError(SessionMigratorError, ValueError):
    """A message is malformed. ``index`` and ``field`` point at the offending spot."""

    def __init__(self, reason: str, *, index: int | None = None, field: str | None = None) -> None:
        self.reason = reason
        self.index = index
        self.field = field
        where = []
        if index is not None:
            where.append(f"message {index}")
        if field is not None:
            where.append(f"field {field!r}")
        prefix = f"{', '.join(where)}: " if where else ""
        super().__init__(f"{prefix}{reason}")


class UnknownModelError(SessionMigratorError, LookupError):
    """No context window is known for ``model``. ``suggestions`` holds close known names;
    ``remedy`` says how to describe the model where it was named (each entry point gives its
    own: the Python API, the CLI, the MCP server, the adapters); ``reason`` replaces the first
    sentence (e.g. for a model object that reports no name).
    """

    def __init__(
        self,
        model: str,
        suggestions: Sequence[str] = (),
        remedy: str | None = None,
        reason: str | None = None,
    ) -> None:
        self.model = model
        self.suggestions = tuple(suggestions)
        self.remedy = remedy if remedy is not None else python_remedy(model)
        self.reason = (
            reason
            if reason is not None
            else f"Unknown model {model!r}: no context window is known for it."
        )
        hint = (
            f" Did you mean {', '.join(repr(s) for s in self.suggestions)}?" if suggestions else ""
        )
        super().__init__(f"{self.reason}{hint} {self.remedy}")

    def with_remedy(self, remedy: str) -> UnknownModelError:
        """The same error with the remedy of the entry point that raises it."""
        return type(self)(self.model, self.suggestions, remedy, self.reason)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.model, self.suggestions, self.remedy, self.reason))


def python_remedy(model: str) -> str:
    """How a caller of the Python API describes a model the table does not know."""
    return (
        f"Describe it where you name it, e.g. lookup_model({model!r}, context_window=N) or a "
        "session_migrator.ModelWindow in place of the name; register it once with "
        f"session_migrator.register_model({model!r}, context_window=N, max_output_tokens=M); "
        "or add it to the JSON/TOML file named by SESSION_MIGRATOR_MODELS."
    )


class BudgetError(SessionMigratorError, ValueError):
    """The token budget is too small to hold even the minimum valid result."""

    def __init__(self, message: str, *, budget: int, needed: int) -> None:
        self.budget = budget
        self.needed = needed
        super().__init__(message)

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_budget_error, (str(self), self.budget, self.needed))


def _rebuild_budget_error(message: str, budget: int, needed: int) -> BudgetError:
    return BudgetError(message, budget=budget, needed=needed)


class OutputReserveError(BudgetError):
    """The output a request asks for leaves too little of the window for its input.

    ``requested`` is the output asked for, ``most`` the largest value that leaves room for the
    input that must be sent (0 when none does), ``parameter`` the name to lower.
    """

    def __init__(
        self, message: str, *, budget: int, needed: int, requested: int, most: int, parameter: str
    ) -> None:
        super().__init__(message, budget=budget, needed=needed)
        self.requested = requested
        self.most = most
        self.parameter = parameter

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild_reserve_error,
            (str(self), self.budget, self.needed, self.requested, self.most, self.parameter),
        )


def _rebuild_reserve_error(
    message: str, budget: int, needed: int, requested: int, most: int, parameter: str
) -> OutputReserveError:
    return OutputReserveError(
        message, budget=budget, needed=needed, requested=requested, most=most, parameter=parameter
    )


class SummarizerError(SessionMigratorError, RuntimeError):
    """A summarizer failed: network error, HTTP error, timeout, malformed or over-long reply."""


class StoreError(SessionMigratorError, RuntimeError):
    """A session store operation failed. A backend's own error (``redis.exceptions.*``,
    ``psycopg.Error``, ``sqlite3.Error``) is its ``__cause__``."""


class InvalidIdError(StoreError, ValueError):
    """``what`` (``session_id``, ``workspace``, ``user_id``, ...) is not a non-empty string;
    ``value`` is what was given. Ids are data: any non-empty string is stored as given."""

    def __init__(self, what: str, value: object) -> None:
        self.what = what
        self.value = value
        super().__init__(
            f"{what} must be a non-empty string, got {value!r} ({type(value).__name__}); "
            f"pass the id as text, e.g. {what}='chat-1'"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.what, self.value))


class StoreDurabilityWarning(UserWarning):
    """The store's server keeps nothing across a restart (e.g. Redis with ``save ""`` and
    ``appendonly no``): every acknowledged message is lost when it restarts."""


class SessionNotFoundError(StoreError, LookupError):
    """No session with ``session_id`` exists in the store. ``remedy`` says how to find the
    sessions there (each entry point gives its own: the Python API, the CLI, the MCP server).
    """

    def __init__(self, session_id: str, remedy: str | None = None) -> None:
        self.session_id = session_id
        self.remedy = (
            remedy
            if remedy is not None
            else "Check the store and the id (store.list_sessions(None) lists the sessions of "
            "every workspace), or append messages to create it."
        )
        super().__init__(f"No session {session_id!r} in this store. {self.remedy}")

    def with_remedy(self, remedy: str) -> SessionNotFoundError:
        """The same error with the remedy of the entry point that raises it."""
        return type(self)(self.session_id, remedy)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.session_id, self.remedy))


class ConflictError(StoreError):
    """A concurrent writer changed the record first (e.g. a summary revision moved on)."""


class ImportFormatError(SessionMigratorError, ValueError):
    """A session file (Codex, Claude Code, OpenAI JSON) cannot be read."""


class MissingDependencyError(SessionMigratorError, ImportError):
    """An optional extra is needed. ``install`` is the command that fixes it (by default
    ``pip install 'session-migrator[extra]'``); ``why``, when given, says why it is so."""

    def __init__(
        self, feature: str, extra: str, *, install: str | None = None, why: str | None = None
    ) -> None:
        self.feature = feature
        self.extra = extra
        self.install = f"pip install 'session-migrator[{extra}]'" if install is None else install
        self.why = why
        reason = f" ({why})" if why else ""
        super().__init__(f"{feature} needs the optional extra [{extra}]: {self.install}{reason}")

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_missing, (self.feature, self.extra, self.install, self.why))


def _rebuild_missing(
    feature: str, extra: str, install: str, why: str | None
) -> MissingDependencyError:
    return MissingDependencyError(feature, extra, install=install, why=why)
