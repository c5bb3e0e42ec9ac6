"""The public surface of the core, pinned: adding or removing a name is a deliberate change."""

from __future__ import annotations

import importlib

import pytest

PUBLIC = {
    "session_migrator": [
        "AnthropicCounter", "AutoStrategy", "Budget", "BudgetError", "CompressionResult",
        "Compressor", "ConflictError", "ContentPart", "EstimateWarning", "EstimatingCounter",
        "ExtractiveSummarizer", "GeminiCounter", "ImportFormatError", "InvalidMessageError",
        "Message", "MigrationReport", "MigrationResult", "MissingDependencyError", "ModelWindow",
        "OpenAISummarizer", "Plan", "RecallStrategy", "Session", "SessionFitter",
        "SessionMigratorError", "SessionNotFoundError", "StoreError", "SummarizeStrategy",
        "Summarizer", "SummarizerError", "Summary", "TiktokenCounter", "TokenCount",
        "TokenCounter", "ToolCall", "TrimStrategy", "UnknownModelError", "__version__",
        "calibrate", "chat_rule_violations", "check_strategy", "counter_for", "infer_tokenizer",
        "known_models",
        "load_overrides",
        "lookup_model", "messages_from_openai", "messages_to_openai", "migrate",
        "models_cache_is_stale",
        "normalize_model_name", "open_store", "plan", "recalibrate_from_exact", "refresh_models",
        "register_model", "reset_calibration", "unregister_model",
    ],
    "session_migrator.store": [
        "BaseSessionStore", "MessageNotFoundError", "MigrationRecord", "NotOffloadedError",
        "SessionInfo", "SessionStore", "StoredSummary", "Usage", "open_store", "usage",
    ],
    "session_migrator.importers": [
        "FORMATS", "ImportResult", "PLACEHOLDER_RESULT", "find_session_files",
        "import_claude_code", "import_codex", "import_file",
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
