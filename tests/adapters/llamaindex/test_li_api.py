"""The public surface of llamaindex_session_migrator is pinned, and the adapter's imports stay
within the core and LlamaIndex (never the LangChain adapter)."""

from __future__ import annotations

import subprocess
import sys

import llamaindex_session_migrator

PUBLIC = [
    "FitToModelLLM",
    "FittedMemory",
    "LLAMAINDEX_KEY",
    "LlamaIndexFactExtractor",
    "LlamaIndexSummarizer",
    "MemoryNotRestorableError",
    "ModelSource",
    "SessionChatStore",
    "SessionMigratorMemory",
    "from_chat_message",
    "from_chat_messages",
    "placeholder_tools",
    "read_context_tool",
    "subagent_tool",
    "to_chat_message",
    "to_chat_messages",
    "window_for",
    "window_from_metadata",
]


def test_all_is_pinned() -> None:
    assert sorted(llamaindex_session_migrator.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(llamaindex_session_migrator, name) is not None


def test_importing_the_adapter_does_not_import_langchain() -> None:
    code = (
        "import sys, llamaindex_session_migrator; "
        "bad = [m for m in sys.modules if m.startswith('langchain')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
