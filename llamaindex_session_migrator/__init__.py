"""LlamaIndex adapter for session-migrator: store-backed memories that fit the conversation to
whichever model reads it (``SessionMigratorMemory``, a ``ChatMemoryBuffer``; ``FittedMemory``, a
``Memory``), the ``read_context`` tool that reads back what a fit cut
(:func:`read_context_tool`), the tools that compress a range of the context into a placeholder,
list and restore them (:func:`placeholder_tools`), and lossless ``ChatMessage`` conversion.

>>> from llama_index.core.llms import ChatMessage, MockLLM
>>> from llamaindex_session_migrator import SessionMigratorMemory
>>> memory = SessionMigratorMemory.from_defaults(
...     llm=MockLLM(), chat_store_key="readme", store="memory://")
>>> memory.put(ChatMessage(role="user", content="Hi"))
>>> len(memory.get()), len(memory.get_all())
(1, 1)
"""

from session_migrator import MissingDependencyError

try:
    import llama_index.core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingDependencyError("The LlamaIndex adapter", "llamaindex") from exc

from llamaindex_session_migrator._chat_store import SessionChatStore
from llamaindex_session_migrator._context_tools import placeholder_tools, read_context_tool
from llamaindex_session_migrator._convert import (
    LLAMAINDEX_KEY,
    from_chat_message,
    from_chat_messages,
    to_chat_message,
    to_chat_messages,
)
from llamaindex_session_migrator._fact_extractor import LlamaIndexFactExtractor
from llamaindex_session_migrator._fitted_memory import FittedMemory
from llamaindex_session_migrator._guard import FitToModelLLM
from llamaindex_session_migrator._memory import ModelSource, SessionMigratorMemory
from llamaindex_session_migrator._memory_reference import MemoryNotRestorableError
from llamaindex_session_migrator._models import window_for, window_from_metadata
from llamaindex_session_migrator._subagents import subagent_tool
from llamaindex_session_migrator._summarizer import LlamaIndexSummarizer

__all__ = [
    "LLAMAINDEX_KEY",
    "FitToModelLLM",
    "FittedMemory",
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
