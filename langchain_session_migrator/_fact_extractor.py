"""A core ``FactExtractor`` backed by any LangChain chat model: a user's facts read in the
background (``SessionFitter(..., user_facts=True, fact_extractor=LangChainFactExtractor(model))``
or ``FittedChatMessageHistory(..., fact_extractor=...)``)."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig

from langchain_session_migrator._models import model_name
from langchain_session_migrator._summarizer import SUMMARIZER_TAG
from session_migrator import FactExtractor, ModelFactExtractor, SummarizerError, redact_secrets

__all__ = ["LangChainFactExtractor"]


class LangChainFactExtractor(ModelFactExtractor):
    """The facts a user stated, read by a LangChain chat model (asked for JSON, as every model
    extractor asks); a model that fails leaves the rules' facts (``fallback``, default the
    rules). The model runs with the summarizer's tag (:data:`SUMMARIZER_TAG`), so a
    :class:`ModelWatcher` and an agent's message stream leave it out.

    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> from session_migrator import Message
    >>> model = FakeListChatModel(responses=['{"facts": [{"key": "home", "text": "I live in Lyon."}]}'])
    >>> LangChainFactExtractor(model).extract([Message("user", "Lyon is home.", id="u1")])
    [Fact(key='home', text='I live in Lyon.', source_id='u1')]
    """  # noqa: E501

    def __init__(
        self,
        model: BaseChatModel | Runnable[Any, Any],
        *,
        fallback: FactExtractor | None = None,
        name: str | None = None,
    ) -> None:
        from session_migrator import RulesFactExtractor

        super().__init__(fallback=RulesFactExtractor() if fallback is None else fallback)
        self.model = model
        self._name = name or f"langchain:{model_name(model) or type(model).__name__}"

    @property
    def name(self) -> str:  # type: ignore[override]
        return self._name

    def ask(self, system: str, user: str) -> str:
        config: RunnableConfig = {
            "tags": [SUMMARIZER_TAG, "nostream"],
            "run_name": "session_migrator_facts",
        }
        try:
            reply = self.model.invoke([SystemMessage(system), HumanMessage(user)], config=config)
        except Exception as exc:
            raise SummarizerError(
                redact_secrets(f"{self.name} failed: {type(exc).__name__}: {exc}", self.model)
            ) from exc
        text = str(reply.text) if isinstance(reply, BaseMessage) else reply
        if not isinstance(text, str) or not text.strip():
            raise SummarizerError(f"{self.name} returned no text")
        return text

    def __repr__(self) -> str:
        return f"LangChainFactExtractor({self.name!r})"
