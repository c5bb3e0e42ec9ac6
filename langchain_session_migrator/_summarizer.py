"""A core :class:`~session_migrator.summaries._summarizers.Summarizer` backed by any LangChain chat
model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig

from langchain_session_migrator._models import model_name
from session_migrator import (
    SUMMARY_PROMPT,
    Message,
    Summarizer,
    SummarizerError,
    TokenCounter,
    redact_secrets,
    summary_request,
    truncate_text,
)

__all__ = ["SUMMARIZER_TAG", "LangChainSummarizer", "as_summarizer", "check_store"]

#: Tag on the summarizer's own model runs, so a :class:`ModelWatcher` never takes the
#: summarizing model for the model the conversation runs on.
SUMMARIZER_TAG = "session_migrator:summarizer"

DEFAULT_PROMPT = SUMMARY_PROMPT


class LangChainSummarizer:
    """Summaries of the cut part of a conversation, written by a LangChain chat model.

    Implements the core ``Summarizer`` protocol (``name`` and ``summarize``), plus
    :meth:`asummarize` for async callers. The request is a system prompt (``prompt``, with
    ``{max_tokens}`` filled in) and the transcript of the messages to fold in, after the summary
    so far when there is one. A transcript longer than ``max_input_tokens`` keeps its newest part
    verbatim and the older part as an offline extractive digest, so the request fits the
    summarizing model. A reply over ``max_tokens`` is cut to fit. Every failure (the model
    raising, an empty reply) is raised as :class:`~session_migrator.SummarizerError`, so the
    strategies fall back to the offline summarizer and report it.

    The model runs with the tag :data:`SUMMARIZER_TAG` and ``run_name="session_migrator_summary"``
    so tracing shows it and a :class:`ModelWatcher` ignores it.

    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> from session_migrator import Message, TiktokenCounter
    >>> s = LangChainSummarizer(FakeListChatModel(responses=["The user is Ada."]))
    >>> s.summarize([Message("user", "I'm Ada.")], max_tokens=50, counter=TiktokenCounter())
    'The user is Ada.'
    """

    def __init__(
        self,
        model: BaseChatModel | Runnable[Any, Any],
        *,
        prompt: str = DEFAULT_PROMPT,
        max_input_tokens: int = 60_000,
        name: str | None = None,
    ) -> None:
        self.model = model
        self.prompt = prompt
        self.max_input_tokens = max_input_tokens
        self._name = name or f"langchain:{model_name(model) or type(model).__name__}"

    @property
    def name(self) -> str:
        """``langchain:<model name>`` unless given; recorded with stored summaries."""
        return self._name

    def request(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> list[BaseMessage]:
        """The messages sent to the summarizing model: the core request, as LangChain messages."""
        system, user = summary_request(
            messages,
            max_tokens=max_tokens,
            counter=counter,
            previous=previous,
            max_input_tokens=self.max_input_tokens,
            prompt=self.prompt,
        )
        return [SystemMessage(system), HumanMessage(user)]

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str:
        request = self.request(messages, max_tokens=max_tokens, counter=counter, previous=previous)
        try:
            reply = self.model.invoke(request, config=self._config())
        except Exception as exc:
            raise SummarizerError(
                redact_secrets(f"{self.name} failed: {type(exc).__name__}: {exc}", self.model)
            ) from exc
        return self._text(reply, max_tokens, counter)

    async def asummarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str:
        """:meth:`summarize` with the model's ``ainvoke``."""
        request = self.request(messages, max_tokens=max_tokens, counter=counter, previous=previous)
        try:
            reply = await self.model.ainvoke(request, config=self._config())
        except Exception as exc:
            raise SummarizerError(
                redact_secrets(f"{self.name} failed: {type(exc).__name__}: {exc}", self.model)
            ) from exc
        return self._text(reply, max_tokens, counter)

    def _config(self) -> RunnableConfig:
        # "nostream" (langgraph.constants.TAG_NOSTREAM): an agent's message stream leaves the
        # summary out, so the user sees the agent's answer only
        return {"tags": [SUMMARIZER_TAG, "nostream"], "run_name": "session_migrator_summary"}

    def _text(self, reply: Any, max_tokens: int, counter: TokenCounter) -> str:
        if isinstance(reply, BaseMessage):
            text = str(reply.text)
        elif isinstance(reply, str):
            text = reply
        else:
            raise SummarizerError(f"{self.name} returned {type(reply).__name__}, not a message")
        text = text.strip()
        if not text:
            raise SummarizerError(f"{self.name} returned no summary text")
        if counter.count_text(text) > max_tokens:
            text = truncate_text(text, max_tokens, counter)
        return text

    def __repr__(self) -> str:
        return f"LangChainSummarizer({self.name!r})"


def check_store(store: Any) -> None:
    """Refuse a store that is neither a URL nor a store object now, not at the first read."""
    if store is None or isinstance(store, str):
        return
    if not all(callable(getattr(store, name, None)) for name in ("append", "load", "load_since")):
        raise TypeError(
            f"store must be a store URL ('memory://', 'sqlite:///path', 'redis://...', "
            f"'postgresql://...') or a session store object, got {type(store).__name__}"
        )


def as_summarizer(
    value: Summarizer | BaseChatModel | Runnable[Any, Any] | None,
) -> Summarizer | None:
    if value is None:
        return None
    if isinstance(value, Runnable):
        return LangChainSummarizer(value)
    return value
