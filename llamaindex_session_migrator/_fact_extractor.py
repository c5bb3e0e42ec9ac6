"""A core ``FactExtractor`` backed by a LlamaIndex LLM: a user's facts read in the background
(``SessionFitter(..., user_facts=True, fact_extractor=LlamaIndexFactExtractor(llm))``)."""

from __future__ import annotations

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM

from session_migrator import (
    FactExtractor,
    ModelFactExtractor,
    RulesFactExtractor,
    SummarizerError,
    redact_secrets,
)

__all__ = ["LlamaIndexFactExtractor"]


class LlamaIndexFactExtractor(ModelFactExtractor):
    """The facts a user stated, read with ``llm.chat`` (asked for JSON, as every model extractor
    asks); an LLM that fails or answers no JSON leaves the rules' facts (``fallback``, default
    the rules).

    >>> from llama_index.core.llms import MockLLM
    >>> from session_migrator import Message
    >>> extractor = LlamaIndexFactExtractor(MockLLM())  # (it echoes: no JSON, so the rules)
    >>> extractor.extract([Message("user", "I'm vegan.", id="u1")])
    [Fact(key='i am vegan', text="I'm vegan.", source_id='u1')]
    """

    def __init__(self, llm: LLM, *, fallback: FactExtractor | None = None) -> None:
        super().__init__(fallback=RulesFactExtractor() if fallback is None else fallback)
        self.llm = llm

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"llamaindex:{self.llm.metadata.model_name}"

    def ask(self, system: str, user: str) -> str:
        request = [
            ChatMessage(role=MessageRole.SYSTEM, content=system),
            ChatMessage(role=MessageRole.USER, content=user),
        ]
        try:
            response = self.llm.chat(request)
        except Exception as exc:
            raise SummarizerError(
                redact_secrets(f"{self.name} failed: {type(exc).__name__}: {exc}", self.llm)
            ) from exc
        content = response.message.content
        if not content or not content.strip():
            raise SummarizerError(f"{self.name} returned no text")
        return content
