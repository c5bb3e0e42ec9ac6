"""The public surface of the core, pinned: adding or removing a name is a deliberate change."""

from __future__ import annotations

import importlib

import pytest

PUBLIC = {
    "session_migrator": [
        "AnthropicCounter", "AutoStrategy", "Budget", "BudgetError", "Compactor",
        "CompressionResult",
        "Compressor", "ConflictError", "ContentPart", "EstimateWarning", "EstimatingCounter",
        "ExtractiveSummarizer", "GeminiCounter", "ImportFormatError", "InvalidIdError",
        "InvalidMessageError",
        "Message", "MigrationReport", "MigrationResult", "MissingDependencyError", "ModelWindow",
        "OpenAISummarizer", "Plan", "RecallStrategy", "Session", "SessionFitter",
        "SessionMigratorError", "SessionNotFoundError", "StoreDurabilityWarning",
        "StoreError", "SummarizeStrategy",
        "Summarizer", "SummarizerError", "Summary", "TiktokenCounter", "TokenCount",
        "TokenCounter", "ToolCall", "TrimStrategy", "UnknownModelError", "__version__",
        "calibrate", "chat_rule_violations", "check_nesting", "check_strategy", "counter_for",
        "export_markdown", "known_models",
        "load_overrides",
        "lookup_model", "messages_from_openai", "messages_to_openai", "migrate",
        "models_cache_is_stale",
        "normalize_model_name", "open_store", "plan", "recalibrate_from_exact", "redact_secrets",
        "refresh_models",
        "register_model", "reset_calibration", "unregister_model",
        # the window a local or self-hosted runtime serves (docs/models.md)
        "runtime_window", "served_window", "clear_served_cache", "narrowed", "note_prompt_read",
        # what the framework adapters build on (docs/design.md: the integration API)
        "DEFAULT_SLACK", "MARKER_KEY", "Role", "SUMMARY_PROMPT", "TOKENS_PER_MESSAGE",
        "check_slack", "default_counter", "infer_tokenizer", "summary_request", "truncate_text",
        "uses_query",
        # recall across sessions (docs/strategies.md)
        "RecallScope", "RelatedSession", "RelatedSessions", "arelated_sessions",
        "related_sessions",
        # one whole provider request (docs/requests.md)
        "OutputReserveError", "RequestFit", "RequestFitter", "TOKENS_PER_TOOL", "fit_request",
        "output_reserve", "output_rule", "schema_tokens", "OUTPUT_SETTINGS", "requested_output",
        # hybrid recall with the user's embedding model (docs/embeddings.md)
        "Embeddings", "local_embeddings",
        # a user's facts read by a model, in the background (docs/memory.md)
        "FactExtractor", "FactLearner", "ModelFactExtractor", "OpenAIFactExtractor",
        "RulesFactExtractor",
    ],
    "session_migrator.store": [
        "BaseSessionStore", "MessageNotFoundError", "MigrationRecord", "NotOffloadedError",
        "SessionInfo", "SessionStore", "StoredSummary", "Usage", "arelated_sessions", "open_store",
        "related_sessions", "usage",
        # a user's facts across sessions (docs/memory.md)
        "UserFact", "delete_user_fact", "learn_user_facts", "set_user_fact", "user_facts",
        # all of a user's messages over the last N days (docs/memory.md)
        "user_messages",
    ],
    "session_migrator.importers": [
        "FORMATS", "Handoff", "ImportResult", "PLACEHOLDER_RESULT", "TARGETS",
        "claude_project_dir", "codex_sessions_dir", "find_session_files", "gemini_chats_dir",
        "handoff", "import_claude_code", "import_codex", "import_file", "newest_session",
        "write_claude_code", "write_codex", "write_gemini", "write_opencode",
    ],
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_public_names_are_pinned(module: str) -> None:
    mod = importlib.import_module(module)
    assert sorted(mod.__all__) == sorted(PUBLIC[module])
    for name in mod.__all__:
        assert hasattr(mod, name), name
        assert not name.startswith("_") or name == "__version__"


def test_every_error_derives_from_the_root() -> None:
    import session_migrator as sm

    errors = [getattr(sm, n) for n in sm.__all__ if n.endswith("Error")]
    assert errors
    for error in errors:
        assert issubclass(error, sm.SessionMigratorError), error
