"""A server given a summarizer (``session-migrator mcp|serve --summarizer openai``): the summaries
of what a session's context cuts are written in the background, no call waits for them, and the
usage view says where each session's compaction stands.

Driven in process (``SessionTools``, a summarizer held by a gate: the fit answers while it is
held) and end to end (the HTTP API under uvicorn, called with httpx, its summarizer the real
``OpenAISummarizer`` against a loopback emulator of OpenAI's API).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest

from benchmarks._served import Served
from session_migrator import Compactor, Message, OpenAISummarizer, TokenCounter
from session_migrator.mcp_server import SessionTools
from session_migrator.server import create_app
from tests.conformance._http import Text
from tests.conformance._openai_api import OpenAIEmulator


class Gated:
    """A summarizer that answers once ``gate`` is set, and says which threads it ran in."""

    name = "gated"

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.threads: set[str] = set()

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str:
        self.threads.add(threading.current_thread().name)
        self.gate.wait(30)
        return f"The user planned {len(messages)} museum visits."


def _turns(n: int, start: int = 0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for k in range(start, start + n):
        out.append({"role": "user", "content": f"Day {k}: what about museum {k}? " * 6})
        out.append({"role": "assistant", "content": f"Museum {k} opens at nine. " * 6})
    return out


@pytest.fixture
def compactor() -> Iterator[Compactor]:
    """The process's shared compactor (what ``compactor=True`` takes), drained after the test."""
    shared = Compactor.default()
    yield shared
    shared.wait(10)


def _context(tools: SessionTools, session_id: str) -> dict[str, Any]:
    return tools.session_context(session_id, "gpt-4o", context_window=2_000)


def test_no_call_waits_for_the_summarizer(compactor: Compactor) -> None:
    summarizer = Gated()
    tools = SessionTools(store="memory://", summarizer=summarizer)
    tools.session_append("trip", json.dumps([{"role": "system", "content": "You plan trips."}]))
    assert tools.session_usage("trip", "gpt-4o")["compaction"]["state"] == "idle"
    states = []
    for k in range(0, 60, 2):  # (the summarizer is held all along: every fit answers anyway)
        tools.session_append("trip", json.dumps(_turns(2, k)))
        fitted = _context(tools, "trip")
        assert fitted["tokens_after"] <= fitted["budget"]
        states.append(tools.session_usage("trip", "gpt-4o")["compaction"]["state"])
    assert fitted["decision"] == "compressed"
    assert "pending" in states
    assert summarizer.threads  # it was asked, in the compactor's threads, not the caller's
    assert threading.current_thread().name not in summarizer.threads
    summarizer.gate.set()
    assert compactor.wait(10)
    assert tools.session_usage("trip", "gpt-4o")["compaction"]["written"] >= 1
    # the summary of the part cut now is asked for by this fit (the one written first covered
    # the cut of when the summarizer was held): the next fit sends it
    _context(tools, "trip")
    assert compactor.wait(10)
    texts = [m["content"] for m in _context(tools, "trip")["messages"]]
    assert any("museum visits" in str(t) for t in texts)


def test_without_a_summarizer_compaction_is_off() -> None:
    tools = SessionTools(store="memory://")
    tools.session_append("s", json.dumps(_turns(40)))
    _context(tools, "s")
    assert tools.session_usage("s", "gpt-4o")["compaction"] == {
        "state": "off",
        "written": 0,
        "seconds": 0.0,
    }


def test_the_http_api_summarizes_in_the_background(compactor: Compactor) -> None:
    """``create_app(summarizer=OpenAISummarizer(...))`` (what ``serve --summarizer openai``
    builds): the context of a long session is answered, the summary the model wrote reaches the
    next context, and the usage route reports it."""
    api = OpenAIEmulator().start()
    served = Served(
        create_app(
            "memory://",
            summarizer=OpenAISummarizer("gpt-4o-mini", base_url=api.base_url, api_key="test"),
        )
    )
    try:
        api.script(*[Text("SUMMARY: the user planned museum visits, day by day.")] * 20)
        with httpx.Client(base_url=served.url, timeout=30) as client:
            for k in range(0, 60, 2):
                client.post("/v1/sessions/trip/append", json={"messages": _turns(2, k)})
                fitted = client.post(
                    "/v1/sessions/trip/build_outbound",
                    json={"model": "gpt-4o", "context_window": 2_000},
                ).json()
                assert fitted["tokens_after"] <= fitted["budget"], fitted
            assert fitted["decision"] == "compressed"
            assert compactor.wait(10)
            client.post(
                "/v1/sessions/trip/build_outbound",
                json={"model": "gpt-4o", "context_window": 2_000},
            )
            assert compactor.wait(10)
            usage = client.get(
                "/v1/sessions/trip/usage", params={"model": "gpt-4o", "context_window": 2_000}
            ).json()
            assert usage["compaction"]["written"] >= 1, usage
            again = client.post(
                "/v1/sessions/trip/build_outbound",
                json={"model": "gpt-4o", "context_window": 2_000},
            ).json()
        assert any("SUMMARY: the user planned" in str(m["content"]) for m in again["messages"])
        assert api.requests, "the summarizer never reached the model"
        assert not api.refusals, api.report()
    finally:
        served.stop()
        api.stop()
