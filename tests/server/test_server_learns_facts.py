"""Servers that learn a user's facts from what they append (issue 43): ``session-migrator serve
--user-facts`` (the HTTP API under uvicorn, called with httpx; a token's user) and ``mcp
--user-facts`` (stdio, the official client; ``session_append(user_id=...)``). A fact stated in
one session reaches the model in a new session of the same user, never another user's; with
``--user-facts openai`` a model reads what the rules miss, in the background."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from benchmarks._served import Served
from session_migrator import FactLearner, OpenAIFactExtractor, OpenAISummarizer
from session_migrator.server import create_app
from session_migrator.store import open_store, user_facts
from tests.conformance._http import Text
from tests.conformance._openai_api import OpenAIEmulator
from tests.server.test_http_api import ALICE, BOB, TOKENS, _as
from tests.server.test_mcp_stdio import Connect, _error, _ok

DIET = "I'm vegetarian, and my daughter is allergic to peanuts."


@pytest.fixture(autouse=True)
def learner() -> Iterator[FactLearner]:
    """A fresh shared learner per test (what the servers submit to)."""
    FactLearner._default = FactLearner(timeout=60)  # (the first call imports the client)
    yield FactLearner._default
    FactLearner._default.close()
    FactLearner._default = None


def _facts_note(answer: dict[str, object]) -> str:
    messages = answer["messages"]
    assert isinstance(messages, list)
    return "\n".join(str(m["content"]) for m in messages if "[session-migrator" in str(m))


def test_the_http_api_learns_a_users_facts_and_sends_them_in_new_sessions() -> None:
    served = Served(create_app("memory://", tokens=TOKENS, user_facts=True))
    try:
        with httpx.Client(base_url=served.url, timeout=30) as client:
            said = client.post(
                "/v1/sessions/monday/append",
                headers=_as(ALICE),
                json={"messages": [{"role": "user", "content": DIET}]},
            )
            assert said.status_code == 200, said.text
            facts = client.get("/v1/users/alice/facts", headers=_as(ALICE)).json()
            client.post(
                "/v1/sessions/tuesday/append",
                headers=_as(ALICE),
                json={"messages": [{"role": "user", "content": "What should I cook tonight?"}]},
            )
            alice = client.post(
                "/v1/sessions/tuesday/build_outbound", headers=_as(ALICE), json={"model": "gpt-4o"}
            ).json()
            client.post(
                "/v1/sessions/bobs/append",
                headers=_as(BOB),
                json={"messages": [{"role": "user", "content": "What should I cook tonight?"}]},
            )
            bob = client.post(
                "/v1/sessions/bobs/build_outbound", headers=_as(BOB), json={"model": "gpt-4o"}
            ).json()
    finally:
        served.stop()
    assert {f["key"] for f in facts["facts"]} == {
        "i am vegetarian",
        "daughter allergic to peanuts",
    }
    assert all(f["source_id"] for f in facts["facts"])
    sent = json.dumps(alice["messages"])
    assert "vegetarian" in sent
    assert "peanuts" in sent
    assert "vegetarian" not in json.dumps(bob["messages"])


def test_without_user_facts_the_http_api_learns_nothing() -> None:
    served = Served(create_app("memory://", tokens=TOKENS))
    try:
        with httpx.Client(base_url=served.url, timeout=30) as client:
            client.post(
                "/v1/sessions/monday/append",
                headers=_as(ALICE),
                json={"messages": [{"role": "user", "content": DIET}]},
            )
            facts = client.get("/v1/users/alice/facts", headers=_as(ALICE)).json()
    finally:
        served.stop()
    assert facts["count"] == 0


def test_a_model_reads_what_the_rules_miss_behind_the_http_api(learner: FactLearner) -> None:
    """``serve --user-facts openai --summarizer openai``: the model (an OpenAI emulator) is asked
    in the background; the append answers before it; its fact is kept with its source."""
    api = OpenAIEmulator().start()
    summarizer = OpenAISummarizer("gpt-4o-mini", base_url=api.base_url, api_key="test")
    served = Served(
        create_app(
            "memory://",
            tokens=TOKENS,
            user_facts=True,
            fact_extractor=OpenAIFactExtractor(summarizer=summarizer),
        )
    )
    try:
        api.script(
            Text(
                json.dumps({"facts": [{"key": "diet", "text": "I don't eat meat.", "message": 1}]})
            )
        )
        with httpx.Client(base_url=served.url, timeout=30) as client:
            said = client.post(
                "/v1/sessions/monday/append",
                headers=_as(ALICE),
                json={"messages": [{"role": "user", "content": "Meat has never been my thing."}]},
            )
            assert said.status_code == 200
            assert learner.wait(90)
            facts = client.get("/v1/users/alice/facts", headers=_as(ALICE)).json()
    finally:
        served.stop()
        api.stop()
    assert [(f["key"], f["text"]) for f in facts["facts"]] == [("diet", "I don't eat meat.")]
    assert facts["facts"][0]["source_id"]
    assert api.requests, "the extractor never reached the model"


async def test_mcp_session_append_stamps_the_user_and_learns_their_facts(
    connect: Connect, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    async with connect("--store", url, "--user-facts", "rules") as session:
        said = _ok(
            await session.call_tool(
                "session_append",
                {
                    "session_id": "monday",
                    "user_id": "ann",
                    "messages_json": [{"role": "user", "content": DIET}],
                },
            )
        )
        await session.call_tool(
            "session_append",
            {
                "session_id": "tuesday",
                "user_id": "ann",
                "messages_json": [{"role": "user", "content": "What should I cook tonight?"}],
            },
        )
        context = _ok(
            await session.call_tool("session_context", {"session_id": "tuesday", "model": "gpt-4o"})
        )
        stolen = _error(
            await session.call_tool(
                "session_append",
                {
                    "session_id": "monday",
                    "user_id": "bob",
                    "messages_json": [{"role": "user", "content": "I'm vegan."}],
                },
            )
        )
    assert said["appended"] == 1
    sent = json.dumps(context["messages"])
    assert "vegetarian" in sent
    assert "peanuts" in sent
    assert "belongs to user 'ann'" in stolen
    with open_store(url) as store:
        assert {f.key for f in user_facts(store, "ann")} == {
            "i am vegetarian",
            "daughter allergic to peanuts",
        }
        assert user_facts(store, "bob") == []
        assert store.get_session("monday").metadata["user_id"] == "ann"  # type: ignore[union-attr]


def test_user_facts_openai_needs_the_summarizers_model(tmp_path: Path) -> None:
    for command in ("mcp", "serve"):
        done = subprocess.run(
            [sys.executable, "-m", "session_migrator", command, "--user-facts", "openai"],
            capture_output=True,
            text=True,
            timeout=120,
            env={"SESSION_MIGRATOR_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode != 0
        assert "--user-facts openai asks the model --summarizer openai configures" in done.stderr
