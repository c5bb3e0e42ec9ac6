"""Summaries written by a LlamaIndex LLM, behind the core ``Summarizer`` protocol.

Any failure of the LLM (an exception, an empty reply) is raised as
:class:`~session_migrator.SummarizerError`, so the core falls back to its offline extractive
summarizer and says so in the migration report.
"""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM

from session_migrator import Message, SummarizerError, TokenCounter, redact_secrets, summary_request

__all__ = ["LlamaIndexSummarizer"]


class LlamaIndexSummarizer:
    """Summarizes with ``llm.chat`` (``asummarize``: ``llm.achat``).

    The request is the core's (:func:`session_migrator.summary_request`): a
    transcript over ``max_input_tokens`` keeps its newest half verbatim and the older part as an
    extractive digest, so the request itself fits a small summarizing model.

    >>> from llama_index.core.llms import MockLLM
    >>> from session_migrator import Message, TiktokenCounter
    >>> s = LlamaIndexSummarizer(MockLLM())
    >>> text = s.summarize([Message("user", "My name is Ada.")], max_tokens=500,
    ...                    counter=TiktokenCounter())
    >>> "Ada" in text
    True
    """

    def __init__(self, llm: LLM, *, max_input_tokens: int = 12_000) -> None:
        self.llm = llm
        self.max_input_tokens = max_input_tokens

    @property
    def name(self) -> str:
        return f"llamaindex:{self.llm.metadata.model_name}"

    def _request(
        self,
        messages: Sequence[Message],
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None,
    ) -> list[ChatMessage]:
        system, user = summary_request(
            messages,
            max_tokens=max_tokens,
            counter=counter,
            previous=previous,
            max_input_tokens=self.max_input_tokens,
        )
        return [
            ChatMessage(role=MessageRole.SYSTEM, content=system),
            ChatMessage(role=MessageRole.USER, content=user),
        ]

    def _text(self, content: str | None) -> str:
        if not content or not content.strip():
            raise SummarizerError(f"{self.name} returned no summary text")
        return content.strip()

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str:
        """A summary of ``messages`` (folding in ``previous``) of at most ``max_tokens``."""
        request = self._request(messages, max_tokens, counter, previous)
        try:
            response = self.llm.chat(request)
        except Exception as exc:
            raise SummarizerError(
                redact_secrets(f"{self.name} failed: {type(exc).__name__}: {exc}", self.llm)
            ) from exc
        return self._text(response.message.content)

    async def asummarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str:
        """:meth:`summarize` with ``llm.achat``."""
        request = self._request(messages, max_tokens, counter, previous)
        try:
            response = await self.llm.achat(request)
        except Exception as exc:
            raise SummarizerError(
                redact_secrets(f"{self.name} failed: {type(exc).__name__}: {exc}", self.llm)
            ) from exc
        return self._text(response.message.content)
