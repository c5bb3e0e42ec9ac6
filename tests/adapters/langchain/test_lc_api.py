"""The adapter's public surface, its docstring examples, and its silence about deprecations."""

from __future__ import annotations

import doctest
import importlib
import warnings
from typing import Any

import pytest

import langchain_session_migrator

MODULES = (
    "langchain_session_migrator._callbacks",
    "langchain_session_migrator._convert",
    "langchain_session_migrator._convert_parts",
    "langchain_session_migrator._factory",
    "langchain_session_migrator._guard",
    "langchain_session_migrator._history",
    "langchain_session_migrator._history_model",
    "langchain_session_migrator._history_state",
    "langchain_session_migrator._middleware",
    "langchain_session_migrator._models",
    "langchain_session_migrator._request",
    "langchain_session_migrator._subagents",
    "langchain_session_migrator._summarizer",
)


def test_public_surface_is_pinned() -> None:
    assert langchain_session_migrator.__all__ == [
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
    for name in langchain_session_migrator.__all__:
        assert getattr(langchain_session_migrator, name) is not None
    with pytest.raises(AttributeError):
        _ = langchain_session_migrator.Nope  # type: ignore[attr-defined]


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_public_classes_have_runnable_examples() -> None:
    for name in langchain_session_migrator.__all__:
        obj = getattr(langchain_session_migrator, name)
        if isinstance(obj, type) and name != "Observation":
            assert ">>>" in (obj.__doc__ or ""), name


def test_our_classes_emit_no_warning_of_their_own(kit: Any) -> None:
    from langchain_session_migrator import (
        FittedChatMessageHistory,
        FittedHistoryFactory,
        FitToModelMiddleware,
        LangChainSummarizer,
        ModelWatcher,
    )

    llm = kit.make_model("gpt-4o-mini", 1_500)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = FittedChatMessageHistory("s", model=llm, store="memory://", summarizer=llm)
        history.add_user_message("hi")
        history.add_ai_message("hello")
        _ = history.messages, history.full_messages, str(history)
        history.close()
        with FittedHistoryFactory(store="memory://", models=[llm]) as factory:
            factory("s", "gpt-4o-mini").add_user_message("hi")
        ModelWatcher()
        FitToModelMiddleware(summarizer=llm)
        LangChainSummarizer(llm)
    assert [f"{w.category.__name__}: {w.message}" for w in caught] == []


def test_an_azure_deployment_is_not_a_model_name() -> None:
    from langchain_openai import AzureChatOpenAI

    from langchain_session_migrator import window_for
    from session_migrator import UnknownModelError

    def azure(**kwargs: Any) -> AzureChatOpenAI:
        return AzureChatOpenAI(  # type: ignore[call-arg]
            api_key="test",
            azure_endpoint="https://example.openai.azure.com",
            api_version="2024-10-21",
            azure_deployment="prod-chat",
            **kwargs,
        )

    with pytest.raises(UnknownModelError, match=r"an Azure deployment's name, not a model's"):
        window_for(azure())
    assert window_for(azure(model="gpt-4o")).context_window == 128_000
