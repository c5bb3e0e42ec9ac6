"""Summaries written by a LlamaIndex LLM, behind the core ``Summarizer`` protocol.

Any failure of the LLM (an exception, an empty reply) is raised as
:class:`~session_migrator.SummarizerError`, so the core falls back to its offline extractive
summarizer and says so in the migration report.
"""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM

from session_migrator import Message, SummarizerError, TokenCounter
from session_migrator._summarizers import transcript

__all__ = ["LlamaIndexSummarizer"]

_PROMPT = (
    "You compress the earlier part of a conversation so that another model can continue it "
    "without it. Write a dense summary in the conversation's language. Keep every name, number, "
    "date, amount, decision, stated preference, open task or question, file path, identifier and "
    "error message that a later turn could need. Do not add anything that is not in the text. "
    "Stay under {max_tokens} tokens."
)


class LlamaIndexSummarizer:
    """Summarizes with ``llm.chat`` (``asummarize``: ``llm.achat``).

    The transcript given to the LLM is cut to ``max_input_tokens`` (its newest part kept), so the
    request itself fits a small summarizing model.

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
        keep: list[Message] = []
        used = 0
        for m in reversed(messages):
            cost = counter.count_message(m)
            if keep and used + cost > self.max_input_tokens:
                break
            keep.append(m)
            used += cost
        keep.reverse()
        text = transcript(keep)
        if len(keep) < len(messages):
            text = f"({len(messages) - len(keep)} older messages not shown)\n{text}"
        user = f"Conversation to summarize:\n{text}"
        if previous:
            user = f"Summary so far (fold it in):\n{previous}\n\n{user}"
        return [
            ChatMessage(role=MessageRole.SYSTEM, content=_PROMPT.format(max_tokens=max_tokens)),
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
            raise SummarizerError(f"{self.name} failed: {type(exc).__name__}: {exc}") from exc
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
            raise SummarizerError(f"{self.name} failed: {type(exc).__name__}: {exc}") from exc
        return self._text(response.message.content)
