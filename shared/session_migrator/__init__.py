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

from session_migrator._errors import (
    BudgetError,
    ConflictError,
    ImportFormatError,
    InvalidIdError,
    InvalidMessageError,
    MissingDependencyError,
    OutputReserveError,
    SessionMigratorError,
    SessionNotFoundError,
    StoreDurabilityWarning,
    StoreError,
    SummarizerError,
    UnknownModelError,
)
from session_migrator._redact import redact_secrets
from session_migrator._version import __version__
from session_migrator.counting._calibration import reset_calibration
from session_migrator.counting._counter import (
    TOKENS_PER_MESSAGE,
    EstimateWarning,
    TokenCount,
    TokenCounter,
)
from session_migrator.counting._online_counters import AnthropicCounter, GeminiCounter
from session_migrator.counting._recalibration import recalibrate_from_exact
from session_migrator.counting._tokens import (
    EstimatingCounter,
    TiktokenCounter,
    calibrate,
    counter_for,
)
from session_migrator.fitting._truncate import truncate_text
from session_migrator.fitting._units import check_slack
from session_migrator.messages._messages import (
    MARKER_KEY,
    ContentPart,
    Message,
    Role,
    Session,
    ToolCall,
    messages_from_openai,
    messages_to_openai,
)
from session_migrator.messages._nesting import check_nesting
from session_migrator.messages._rules import chat_rule_violations
from session_migrator.migration._migrate import default_counter, migrate, plan
from session_migrator.migration._report import MigrationReport, MigrationResult, Plan
from session_migrator.migration._request import (
    TOKENS_PER_TOOL,
    RequestFit,
    RequestFitter,
    fit_request,
    schema_tokens,
)
from session_migrator.migration._strategies import (
    AutoStrategy,
    CompressionResult,
    Compressor,
    RecallStrategy,
    SummarizeStrategy,
    TrimStrategy,
    check_strategy,
    uses_query,
)
from session_migrator.models._live import is_stale as models_cache_is_stale
from session_migrator.models._live import refresh as refresh_models
from session_migrator.models._lookup import (
    infer_tokenizer,
    known_models,
    load_overrides,
    lookup_model,
    normalize_model_name,
    register_model,
    unregister_model,
)
from session_migrator.models._output import (
    OUTPUT_SETTINGS,
    output_reserve,
    output_rule,
    requested_output,
)
from session_migrator.models._runtime import (
    clear_served_cache,
    narrowed,
    note_prompt_read,
    runtime_window,
    served_window,
)
from session_migrator.models._windows import Budget, ModelWindow
from session_migrator.recall._embeddings import Embeddings
from session_migrator.recall._local import local_embeddings
from session_migrator.recall._related import RecallScope, RelatedSession, RelatedSessions
from session_migrator.sessions._compactor import Compactor
from session_migrator.sessions._fact_learner import FactLearner
from session_migrator.sessions._fitter import DEFAULT_SLACK, SessionFitter
from session_migrator.store import arelated_sessions, open_store, related_sessions
from session_migrator.summaries._fact_extractors import (
    FactExtractor,
    ModelFactExtractor,
    OpenAIFactExtractor,
    RulesFactExtractor,
)
from session_migrator.summaries._memory_doc import export_markdown
from session_migrator.summaries._summarizers import (
    SUMMARY_PROMPT,
    ExtractiveSummarizer,
    OpenAISummarizer,
    Summarizer,
    Summary,
    summary_request,
)

__all__ = [
    "DEFAULT_SLACK",
    "MARKER_KEY",
    "OUTPUT_SETTINGS",
    "SUMMARY_PROMPT",
    "TOKENS_PER_MESSAGE",
    "TOKENS_PER_TOOL",
    "AnthropicCounter",
    "AutoStrategy",
    "Budget",
    "BudgetError",
    "Compactor",
    "CompressionResult",
    "Compressor",
    "ConflictError",
    "ContentPart",
    "Embeddings",
    "EstimateWarning",
    "EstimatingCounter",
    "ExtractiveSummarizer",
    "FactExtractor",
    "FactLearner",
    "GeminiCounter",
    "ImportFormatError",
    "InvalidIdError",
    "InvalidMessageError",
    "Message",
    "MigrationReport",
    "MigrationResult",
    "MissingDependencyError",
    "ModelFactExtractor",
    "ModelWindow",
    "OpenAIFactExtractor",
    "OpenAISummarizer",
    "OutputReserveError",
    "Plan",
    "RecallScope",
    "RecallStrategy",
    "RelatedSession",
    "RelatedSessions",
    "RequestFit",
    "RequestFitter",
    "Role",
    "RulesFactExtractor",
    "Session",
    "SessionFitter",
    "SessionMigratorError",
    "SessionNotFoundError",
    "StoreDurabilityWarning",
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
    "arelated_sessions",
    "calibrate",
    "chat_rule_violations",
    "check_nesting",
    "check_slack",
    "check_strategy",
    "clear_served_cache",
    "counter_for",
    "default_counter",
    "export_markdown",
    "fit_request",
    "infer_tokenizer",
    "known_models",
    "load_overrides",
    "local_embeddings",
    "lookup_model",
    "messages_from_openai",
    "messages_to_openai",
    "migrate",
    "models_cache_is_stale",
    "narrowed",
    "normalize_model_name",
    "note_prompt_read",
    "open_store",
    "output_reserve",
    "output_rule",
    "plan",
    "recalibrate_from_exact",
    "redact_secrets",
    "refresh_models",
    "register_model",
    "related_sessions",
    "requested_output",
    "reset_calibration",
    "runtime_window",
    "schema_tokens",
    "served_window",
    "summary_request",
    "truncate_text",
    "unregister_model",
    "uses_query",
]
