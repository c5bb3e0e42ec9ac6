"""A "needle in a cut output" task for the ``read_context`` tool, on the OpenAI emulator.

An agent fetches a build log (thousands of numbered lines, each as wide as the next), then checks
three services, then is asked what one line of the log says: a line in the middle, which the
fit shrinks away at a small window (gpt-3.5-turbo-0613's 4,096 tokens). The emulated model
(:class:`NeedleEmulator`) answers as a model would:

- it calls the tool the question asks for (``fetch_log``, ``service_status``);
- asked about a line, it answers with the line when it sees it; else, when it sees a marker
  naming ``read_context(id="...")`` and has that tool, it calls it with that id and the offset
  of the line (the log's lines are numbered and as wide as the ones it sees: line ``n`` starts
  at ``n`` times that width); else it says it cannot see it;
- after a ``read_context`` result it answers with the line if the result holds it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conformance._http import Calls, Recorded, Reply, Text
from tests.conformance._openai_api import OpenAIEmulator

LINES = 3_000
NEEDLE_LINE = 1_717
NEEDLE = "ERROR disk quota exceeded on /var/build: code E-4471"
MODEL = "gpt-3.5-turbo-0613"  # a 4,096-token window
SERVICES = ("billing", "search", "mail")
MARKER = re.compile(r'read_context\(id="([^"]+)"\)')


def log_line(n: int) -> str:
    return f"{n:05d} " + (NEEDLE if n == NEEDLE_LINE else "INFO worker heartbeat ok, queue nominal")


def build_log() -> str:
    """The log: ``LINES`` numbered lines, the needle at ``NEEDLE_LINE``."""
    return "\n".join(log_line(n) for n in range(LINES)) + "\n"


def status(service: str) -> str:
    return f"{service}: healthy, p99 41 ms"


#: The user's turns: fetch the log, check three services, ask about the needle's line.
QUESTIONS = (
    "Fetch the build log.",
    *(f"Status of {s}?" for s in SERVICES),
    f"What does line {NEEDLE_LINE:05d} of the build log say?",
)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def decide(body: dict[str, Any]) -> Reply:
    """What the model answers to the request ``body`` (see the module docstring)."""
    messages = body["messages"]
    tools = {t["function"]["name"] for t in body.get("tools") or []}
    last = messages[-1]
    if last["role"] == "tool":
        called = [c for m in messages if m.get("tool_calls") for c in m["tool_calls"]]
        name = next(c["function"]["name"] for c in called if c["id"] == last.get("tool_call_id"))
        if name != "read_context":
            return Text("Done.")
        found = _line(_text(last.get("content")), NEEDLE_LINE)
        return Text(f"Line {NEEDLE_LINE:05d}: {found}" if found else "It is not there.")
    question = _text(last.get("content"))
    if question.startswith("Fetch"):
        return Calls.one("fetch_log", log="build")
    if question.startswith("Status of "):
        return Calls.one("service_status", service=question[len("Status of ") : -1])
    wanted = int(re.search(r"line (\d+)", question).group(1))  # type: ignore[union-attr]
    for m in messages:
        found = _line(_text(m.get("content")), wanted)
        if found:
            return Text(f"Line {wanted:05d}: {found}")
    if "read_context" in tools:
        for m in messages:
            text = _text(m.get("content"))
            marker = MARKER.search(text)
            if m["role"] == "tool" and marker:
                width = len(text.split("\n", 1)[0]) + 1  # the lines it sees are this wide
                return Calls.one("read_context", id=marker.group(1), offset=wanted * width)
    return Text(f"I cannot see line {wanted:05d}.")


def _line(text: str, n: int) -> str | None:
    """Line ``n`` of a log quoted in ``text``, when it is there whole."""
    found = re.search(rf"^{n:05d} (.+)$", text, re.MULTILINE)
    return found.group(1) if found else None


class NeedleEmulator(OpenAIEmulator):
    """The OpenAI emulator whose answers :func:`decide` makes from each request."""

    def __init__(self) -> None:
        super().__init__()
        self._body: dict[str, Any] = {}

    def handle(
        self, path: str, headers: dict[str, str], body: dict[str, Any], rec: Recorded
    ) -> Any:
        self._body = body  # (the requests come one at a time)
        return super().handle(path, headers, body, rec)

    def next_reply(self) -> Reply:
        return decide(self._body)

    def sent(self) -> list[str]:
        """The JSON of each request the model received (for what reached it)."""
        return [json.dumps(r.body) for r in self.requests]


@pytest.fixture
def needle_api() -> Iterator[NeedleEmulator]:
    """The needle emulator, started for a test (import it into a test module to use it)."""
    emulator = NeedleEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()
