"""LlamaIndex adapter for session-migrator."""
