"""LangChain adapter for session-migrator."""
