"""A user's facts read by a model in the background (issue 43): an OpenAI-compatible model on a
loopback emulator names what the rules miss, a later statement replaces an earlier one about
the same key (kept with its source message and date), a fit never waits for the extractor, and
a model that fails, hangs or answers no JSON leaves the rules' facts."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from session_migrator import (
    FactLearner,
    Message,
    OpenAIFactExtractor,
    RulesFactExtractor,
    SessionFitter,
    SummarizerError,
)
from session_migrator.store import open_store, set_user_fact, user_facts
from session_migrator.summaries._fact_extractors import facts_request, parse_facts
from tests.conformance._http import Text
from tests.conformance._openai_api import OpenAIEmulator

ANN = {"user_id": "ann"}


@pytest.fixture
def api() -> Iterator[OpenAIEmulator]:
    emulator = OpenAIEmulator().start()
    yield emulator
    emulator.stop()


@pytest.fixture(autouse=True)
def learner() -> Iterator[FactLearner]:
    """A fresh shared learner per test (what the fitters submit to)."""
    FactLearner._default = FactLearner(timeout=5)
    yield FactLearner._default
    FactLearner._default.close()
    FactLearner._default = None


def _extractor(api: OpenAIEmulator, **kwargs: Any) -> OpenAIFactExtractor:
    return OpenAIFactExtractor(
        "gpt-4o-mini", base_url=api.base_url, api_key="test", timeout=5, **kwargs
    )


def _facts(value: list[dict[str, Any]]) -> Text:
    return Text(json.dumps({"facts": value}))


def _note(fitter: SessionFitter) -> str:
    sent = fitter.fit("gpt-4o").messages
    return next((m.text for m in sent if (m.marker or {}).get("kind") == "user_facts"), "")


def test_a_model_reads_what_the_rules_miss_in_the_background(
    api: OpenAIEmulator, learner: FactLearner
) -> None:
    store = open_store("memory://")
    fitter = SessionFitter(
        "mon", store=store, metadata=ANN, user_facts=True, fact_extractor=_extractor(api)
    )
    api.script(
        _facts(
            [
                {"key": "diet", "text": "I don't eat meat.", "message": 1},
                {
                    "key": "daughter allergy",
                    "text": "My daughter can't have peanuts.",
                    "message": 1,
                },
            ]
        )
    )
    fitter.append([Message("user", "We never cook meat at home; peanuts are off limits for Mia.",
                           id="u1", timestamp=datetime(2026, 11, 2, 9, tzinfo=UTC))])  # fmt: skip
    assert learner.wait(10)
    facts = {f.key: f for f in user_facts(store, "ann")}
    assert facts["diet"].text == "I don't eat meat."
    assert facts["diet"].source_id == "u1"
    assert facts["diet"].stated_at == datetime(2026, 11, 2, 9, tzinfo=UTC)
    assert "My daughter can't have peanuts." in _note(fitter)
    (request,) = api.accepted
    system, user = (m["content"] for m in request.body["messages"])
    assert "JSON" in system
    assert "[1] user: We never cook meat" in user

    # a correction, told the facts known already, reuses the key: the later statement wins
    api.script(_facts([{"key": "diet", "text": "I eat fish now.", "message": 1}]))
    fitter.append([Message("user", "Actually, fish is fine for me these days.", id="u2")])
    assert learner.wait(10)
    assert "- diet: I don't eat meat." in api.accepted[-1].body["messages"][1]["content"]
    facts = {f.key: f for f in user_facts(store, "ann")}
    assert facts["diet"].text == "I eat fish now."
    assert facts["diet"].source_id == "u2"
    assert learner.status()["failed"] == 0


def test_the_models_facts_of_a_message_take_the_place_of_the_rules(api: OpenAIEmulator) -> None:
    store = open_store("memory://")
    fitter = SessionFitter(
        "mon", store=store, metadata=ANN, user_facts=True, fact_extractor=_extractor(api)
    )
    api.script(_facts([{"key": "diet", "text": "I'm vegetarian.", "message": 1}]))
    fitter.append([Message("user", "I'm vegetarian.", id="u1")])
    assert FactLearner.default().wait(10)  # ("i am vegetarian", the rules', is gone)
    assert [(f.key, f.text) for f in user_facts(store, "ann")] == [("diet", "I'm vegetarian.")]


def test_a_fit_never_waits_for_a_slow_extractor() -> None:
    release = threading.Event()

    class Slow:
        def extract(self, messages: Sequence[Message]) -> list[tuple[str, str]]:
            release.wait(10)
            return [("pet", "I have a cat named Tom.")]

    store = open_store("memory://")
    fitter = SessionFitter("mon", store=store, metadata=ANN, user_facts=True, fact_extractor=Slow())
    started = time.monotonic()
    fitter.append([Message("user", "I'm vegan. Tom the cat sleeps all day.")])
    note = _note(fitter)
    assert time.monotonic() - started < 2
    assert "I'm vegan." in note  # (the rules' facts, at once)
    assert "cat" not in note
    release.set()
    assert FactLearner.default().wait(10)
    assert "I have a cat named Tom." in _note(fitter)  # the next fit sends the model's


@pytest.mark.parametrize("failure", ["raises", "no json", "hangs", "http 404"])
def test_a_failing_model_leaves_the_rules_facts(api: OpenAIEmulator, failure: str) -> None:
    FactLearner._default = FactLearner(timeout=1)
    release = threading.Event()

    class Broken:
        def extract(self, messages: Sequence[Message]) -> list[tuple[str, str]]:
            if failure == "hangs":
                release.wait(10)
            raise RuntimeError("the model is down")

    extractor: Any = Broken()
    if failure == "no json":
        api.script(Text("Sure! The user is vegetarian."))
        extractor = _extractor(api)
    elif failure == "http 404":  # (a model the server does not serve)
        extractor = OpenAIFactExtractor("no-such-model", base_url=api.base_url, api_key="t")
    store = open_store("memory://")
    fitter = SessionFitter(
        "mon", store=store, metadata=ANN, user_facts=True, fact_extractor=extractor
    )
    fitter.append([Message("user", "I'm vegetarian, and my daughter is allergic to peanuts.")])
    assert FactLearner.default().wait(5)
    release.set()
    assert {f.key for f in user_facts(store, "ann")} == {
        "i am vegetarian",
        "daughter allergic to peanuts",
    }
    status = FactLearner.default().status()
    assert status["failed"] == 1
    assert FactLearner.default().last_error


def test_a_late_extraction_never_undoes_a_newer_statement() -> None:
    release = threading.Event()

    class Slow:
        def extract(self, messages: Sequence[Message]) -> list[tuple[str, str]]:
            release.wait(10)
            return [("i am vegetarian", "I'm strictly vegetarian.")]

    store = open_store("memory://")
    fitter = SessionFitter("mon", store=store, metadata=ANN, user_facts=True, fact_extractor=Slow())
    then = datetime.now(UTC) - timedelta(hours=1)
    fitter.append([Message("user", "I'm vegetarian.", id="u1", timestamp=then)])
    set_user_fact(store, "ann", "i am vegetarian", "I eat fish now.")  # stated since
    release.set()
    assert FactLearner.default().wait(10)
    assert [f.text for f in user_facts(store, "ann")] == ["I eat fish now."]


def test_the_learner_is_bounded_and_cancellable() -> None:
    release = threading.Event()

    class Slow:
        def extract(self, messages: Sequence[Message]) -> list[tuple[str, str]]:
            release.wait(10)
            return [("pet", "I have a cat.")]

    learner = FactLearner(workers=1, timeout=5, max_pending=2)
    store = open_store("memory://")
    now = datetime.now(UTC)
    batch = [Message("user", "hello", id="u1")]
    assert learner.submit(store, "ann", batch, Slow(), said=now)
    assert learner.submit(store, "ann", batch, Slow(), said=now)
    assert not learner.submit(store, "ann", batch, Slow(), said=now)  # full: dropped
    assert learner.status()["dropped"] == 1
    learner.cancel()
    release.set()
    assert learner.wait(10)
    assert user_facts(store, "ann") == []  # what was under way is discarded
    learner.close()
    assert not learner.submit(store, "ann", batch, Slow(), said=now)


def test_the_extractor_is_checked_when_the_fitter_is_made() -> None:
    with pytest.raises(ValueError, match="user_facts=True"):
        SessionFitter("s", store="memory://", fact_extractor=RulesFactExtractor())
    with pytest.raises(TypeError, match="extract"):
        SessionFitter("s", store="memory://", user_facts=True, fact_extractor=object())


def test_the_reply_is_read_leniently_and_secrets_are_dropped() -> None:
    messages = [Message("assistant", "Hi!", id="a"), Message("user", "...", id="u")]
    reply = (
        '```json\n{"facts": [{"key": "Home", "text": "I live in Lyon.", "message": 2},'
        ' {"key": "card", "text": "My card is 4111 1111 1111 1111."},'
        ' {"key": "x", "text": "said by the assistant", "message": 1}, "junk"]}\n```'
    )
    facts = parse_facts(reply, messages)
    assert [(f.key, f.text, f.source_id) for f in facts] == [
        ("home", "I live in Lyon.", "u"),
        ("x", "said by the assistant", "u"),  # (a number that is not the user's: the newest)
    ]
    with pytest.raises(SummarizerError):
        parse_facts("I could not find any facts.", messages)
    system, user = facts_request(messages, {"diet": "I'm vegan."})
    assert user.startswith("Facts known already (key: text):\n- diet: I'm vegan.")
    assert "[2] user: ..." in user
    assert "JSON" in system


def test_an_extractor_without_a_fallback_raises(api: OpenAIEmulator) -> None:
    api.script(Text("no facts here"))
    extractor = _extractor(api)
    extractor.fallback = None
    with pytest.raises(SummarizerError, match="JSON"):
        extractor.extract([Message("user", "I'm vegan.")])
    assert extractor.failures == 1
