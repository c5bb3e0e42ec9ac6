"""LangChain adapter for session-migrator: histories and agent middleware that fit the model.

- :class:`FittedChatMessageHistory`: a ``BaseChatMessageHistory`` backed by a session store,
  whose ``messages`` are the conversation fitted to the current model (the full log stays in
  the store), for ``RunnableWithMessageHistory``;
- :class:`FittedHistoryFactory`: builds those histories per call, with the
  ``history_factory_config`` that lets one configurable ``model`` field select both the chat
  model and the fit, and a :class:`ModelWatcher` callback that records which model ran;
- :class:`FitToModel`: wraps the chat model of a chain, so every request it gets (history,
  prompt, input, bound tools and schemas) fits that model, fallbacks and alternatives each on
  their first call;
- :class:`FitToModelMiddleware`: for ``langchain.agents.create_agent``, fits each model call to
  the model about to run (needs the ``langchain`` package);
- :class:`LangChainSummarizer`: any LangChain chat model as the summarizer;
- lossless ``BaseMessage`` <-> core ``Message`` conversion and :func:`window_for`.

``BaseChatMessageHistory`` and ``RunnableWithMessageHistory`` are deprecated in langchain-core
1.x (removal in 2.0); this adapter supports langchain-core >=1.4,<2. The agent middleware is the
path that stays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from session_migrator import MissingDependencyError

try:
    import langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingDependencyError("The LangChain adapter", "langchain") from exc

from langchain_session_migrator._callbacks import ModelWatcher, Observation
from langchain_session_migrator._convert import (
    message_from_core,
    message_to_core,
    messages_from_core,
    messages_to_core,
)
from langchain_session_migrator._fact_extractor import LangChainFactExtractor
from langchain_session_migrator._factory import FittedHistoryFactory
from langchain_session_migrator._guard import FitToModel
from langchain_session_migrator._history import FittedChatMessageHistory
from langchain_session_migrator._models import window_for
from langchain_session_migrator._summarizer import LangChainSummarizer

if TYPE_CHECKING:
    from langchain_session_migrator._middleware import FitToModelMiddleware
    from langchain_session_migrator._middleware import (
        state_read_context_tool as read_context_tool,
    )
    from langchain_session_migrator._subagents import subagent_tool

__all__ = [
    "FitToModel",
    "FitToModelMiddleware",
    "FittedChatMessageHistory",
    "FittedHistoryFactory",
    "LangChainFactExtractor",
    "LangChainSummarizer",
    "ModelWatcher",
    "Observation",
    "message_from_core",
    "message_to_core",
    "messages_from_core",
    "messages_to_core",
    "read_context_tool",
    "subagent_tool",
    "window_for",
]


def __getattr__(name: str) -> Any:
    if name == "read_context_tool":
        try:
            from langchain_session_migrator._middleware import state_read_context_tool
        except ImportError as exc:  # pragma: no cover - exercised without the extra
            raise MissingDependencyError(
                "read_context_tool (LangChain v1 agents, LangGraph)", "langchain"
            ) from exc
        return state_read_context_tool
    if name == "subagent_tool":
        try:
            from langchain_session_migrator._subagents import subagent_tool
        except ImportError as exc:  # pragma: no cover - exercised without the extra
            raise MissingDependencyError(
                "subagent_tool (LangChain v1 agents)", "langchain"
            ) from exc
        return subagent_tool
    if name == "FitToModelMiddleware":
        try:
            from langchain_session_migrator._middleware import FitToModelMiddleware
        except ImportError as exc:  # pragma: no cover - exercised without the extra
            raise MissingDependencyError(
                "FitToModelMiddleware (LangChain v1 agents)", "langchain"
            ) from exc
        return FitToModelMiddleware
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
