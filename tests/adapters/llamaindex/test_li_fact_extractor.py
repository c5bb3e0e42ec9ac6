"""LlamaIndexFactExtractor: a LlamaIndex LLM reads a user's facts; one that answers no JSON
leaves the rules' facts (issue 43)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.llms import MockLLM

from llamaindex_session_migrator import LlamaIndexFactExtractor
from session_migrator import FactLearner, Message, SessionFitter
from session_migrator.store import open_store, user_facts


class Answers(MockLLM):
    """A mock LLM whose chat answers ``REPLY``."""

    def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=REPLY))


REPLY = json.dumps({"facts": [{"key": "home", "text": "I live in Lyon.", "message": 1}]})


def test_an_llm_reads_the_facts_in_the_background() -> None:
    store = open_store("memory://")
    fitter = SessionFitter(
        "s",
        store=store,
        metadata={"user_id": "ann"},
        user_facts=True,
        fact_extractor=LlamaIndexFactExtractor(Answers()),
    )
    fitter.append([Message("user", "Lyon has been home for years.", id="u1")])
    assert FactLearner.default().wait(10)
    assert [(f.key, f.text, f.source_id) for f in user_facts(store, "ann")] == [
        ("home", "I live in Lyon.", "u1")
    ]


def test_an_llm_without_json_leaves_the_rules_facts() -> None:
    extractor = LlamaIndexFactExtractor(MockLLM())
    assert extractor.name.startswith("llamaindex:")
    facts = extractor.extract([Message("user", "I'm vegan.", id="u1")])
    assert [(f.key, f.source_id) for f in facts] == [("i am vegan", "u1")]
    assert extractor.failures == 1


def test_the_memory_takes_an_llm_as_its_fact_extractor() -> None:
    from llama_index.core.llms import ChatMessage as LIMessage

    from llamaindex_session_migrator import FittedMemory, SessionMigratorMemory

    store = open_store("memory://")
    memory = SessionMigratorMemory.from_defaults(
        llm=MockLLM(),
        model="gpt-4o-mini",
        store=store,
        chat_store_key="wed",
        metadata={"user_id": "ann"},
        user_facts=True,
        fact_extractor=Answers(),
    )
    memory.put(LIMessage(role="user", content="Lyon has been home for years."))
    assert FactLearner.default().wait(10)
    assert [f.text for f in user_facts(store, "ann")] == ["I live in Lyon."]
    with pytest.raises(ValueError, match="SessionMigratorMemory"):
        FittedMemory.from_defaults(
            llm=MockLLM(), model="gpt-4o-mini", store="memory://", fact_extractor=Answers()
        )
