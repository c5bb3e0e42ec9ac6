"""session-migrator: move a conversation between models without losing anything."""

from session_migrator._errors import (
    BudgetError,
    ConflictError,
    ImportFormatError,
    InvalidMessageError,
    MissingDependencyError,
    SessionMigratorError,
    SessionNotFoundError,
    StoreError,
    SummarizerError,
    UnknownModelError,
)
from session_migrator._messages import (
    ContentPart,
    Message,
    Session,
    ToolCall,
    messages_from_openai,
    messages_to_openai,
)
from session_migrator._tokens import (
    EstimateWarning,
    EstimatingCounter,
    TiktokenCounter,
    TokenCount,
    TokenCounter,
    calibrate,
)
from session_migrator._version import __version__
from session_migrator._windows import Budget, ModelWindow

__all__ = [
    "Budget",
    "BudgetError",
    "ConflictError",
    "ContentPart",
    "EstimateWarning",
    "EstimatingCounter",
    "ImportFormatError",
    "InvalidMessageError",
    "Message",
    "MissingDependencyError",
    "ModelWindow",
    "Session",
    "SessionMigratorError",
    "SessionNotFoundError",
    "StoreError",
    "SummarizerError",
    "TiktokenCounter",
    "TokenCount",
    "TokenCounter",
    "ToolCall",
    "UnknownModelError",
    "__version__",
    "calibrate",
    "messages_from_openai",
    "messages_to_openai",
]
