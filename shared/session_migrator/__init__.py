"""session-migrator: move a conversation between models without losing anything.

If the whole conversation fits the target model's input budget it moves as is; if not, a strategy
keeps the most valuable context (system prompt, newest turns, a summary of what was cut, the older
turns that matter for the current question) and never exceeds the budget. The full conversation
stays in the session store.

>>> from session_migrator import Message, migrate
>>> result = migrate([Message("user", "Hello!")], "gpt-4o")
>>> result.report.decision
'fits'
"""

from session_migrator._calibration import recalibrate_from_exact, reset_calibration
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
from session_migrator._fitter import SessionFitter
from session_migrator._live import is_stale as models_cache_is_stale
from session_migrator._live import refresh as refresh_models
from session_migrator._messages import (
    ContentPart,
    Message,
    Session,
    ToolCall,
    messages_from_openai,
    messages_to_openai,
)
from session_migrator._migrate import MigrationReport, MigrationResult, Plan, migrate, plan
from session_migrator._model_names import infer_tokenizer
from session_migrator._models import (
    known_models,
    load_overrides,
    lookup_model,
    normalize_model_name,
    register_model,
    unregister_model,
)
from session_migrator._online_counters import AnthropicCounter, GeminiCounter
from session_migrator._rules import chat_rule_violations
from session_migrator._strategies import (
    AutoStrategy,
    CompressionResult,
    Compressor,
    RecallStrategy,
    SummarizeStrategy,
    TrimStrategy,
    check_strategy,
)
from session_migrator._summarizers import (
    ExtractiveSummarizer,
    OpenAISummarizer,
    Summarizer,
    Summary,
)
from session_migrator._tokens import (
    EstimateWarning,
    EstimatingCounter,
    TiktokenCounter,
    TokenCount,
    TokenCounter,
    calibrate,
    counter_for,
)
from session_migrator._version import __version__
from session_migrator._windows import Budget, ModelWindow
from session_migrator.store import open_store

__all__ = [
    "AnthropicCounter",
    "AutoStrategy",
    "Budget",
    "BudgetError",
    "CompressionResult",
    "Compressor",
    "ConflictError",
    "ContentPart",
    "EstimateWarning",
    "EstimatingCounter",
    "ExtractiveSummarizer",
    "GeminiCounter",
    "ImportFormatError",
    "InvalidMessageError",
    "Message",
    "MigrationReport",
    "MigrationResult",
    "MissingDependencyError",
    "ModelWindow",
    "OpenAISummarizer",
    "Plan",
    "RecallStrategy",
    "Session",
    "SessionFitter",
    "SessionMigratorError",
    "SessionNotFoundError",
    "StoreError",
    "SummarizeStrategy",
    "Summarizer",
    "SummarizerError",
    "Summary",
    "TiktokenCounter",
    "TokenCount",
    "TokenCounter",
    "ToolCall",
    "TrimStrategy",
    "UnknownModelError",
    "__version__",
    "calibrate",
    "chat_rule_violations",
    "check_strategy",
    "counter_for",
    "infer_tokenizer",
    "known_models",
    "load_overrides",
    "lookup_model",
    "messages_from_openai",
    "messages_to_openai",
    "migrate",
    "models_cache_is_stale",
    "normalize_model_name",
    "open_store",
    "plan",
    "recalibrate_from_exact",
    "refresh_models",
    "register_model",
    "reset_calibration",
    "unregister_model",
]
