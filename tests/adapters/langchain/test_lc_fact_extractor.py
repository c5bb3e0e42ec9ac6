"""LangChainFactExtractor: a LangChain chat model reads a user's facts in the background of a
SessionFitter; a model that fails leaves the rules' facts (issue 43)."""

from __future__ import annotations

import json

from langchain_core.language_models.fake_chat_models import FakeListChatModel

from langchain_session_migrator import LangChainFactExtractor
from session_migrator import FactLearner, Message, SessionFitter
from session_migrator.store import open_store, user_facts


def test_a_chat_model_reads_the_facts_in_the_background() -> None:
    reply = json.dumps({"facts": [{"key": "pet", "text": "I have a cat, Tom.", "message": 1}]})
    extractor = LangChainFactExtractor(FakeListChatModel(responses=[reply]))
    assert extractor.name.startswith("langchain:")
    store = open_store("memory://")
    fitter = SessionFitter(
        "s", store=store, metadata={"user_id": "ann"}, user_facts=True, fact_extractor=extractor
    )
    fitter.append([Message("user", "Tom, my cat, sleeps all day.", id="u1")])
    assert FactLearner.default().wait(10)
    assert [(f.key, f.text, f.source_id) for f in user_facts(store, "ann")] == [
        ("pet", "I have a cat, Tom.", "u1")
    ]


def test_a_model_that_fails_leaves_the_rules_facts() -> None:
    class Broken(FakeListChatModel):
        def invoke(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
            raise RuntimeError("quota")

    extractor = LangChainFactExtractor(Broken(responses=[]))
    facts = extractor.extract([Message("user", "I'm vegan.", id="u1")])
    assert [(f.key, f.source_id) for f in facts] == [("i am vegan", "u1")]
    assert extractor.failures == 1
    assert "quota" in (extractor.last_error or "")


def test_the_history_takes_a_chat_model_as_its_fact_extractor() -> None:
    from langchain_session_migrator import FittedChatMessageHistory

    reply = json.dumps({"facts": [{"key": "work", "text": "I teach maths.", "message": 1}]})
    store = open_store("memory://")
    history = FittedChatMessageHistory(
        "s",
        model="gpt-4o-mini",
        store=store,
        metadata={"user_id": "bo"},
        user_facts=True,
        fact_extractor=FakeListChatModel(responses=[reply]),
    )
    history.add_user_message("Grading maths homework again tonight.")
    assert FactLearner.default().wait(10)
    assert [f.text for f in user_facts(store, "bo")] == ["I teach maths."]
