"""Anthropic and Gemini exact counters, through the official SDKs, against loopback servers.

The fake Anthropic endpoint counts words: a request costs 7 plus, per turn, 3 plus its words
(so the probes measure F=7, W=3). The fake Gemini endpoint counts words and nothing else.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from session_migrator import Message, MissingDependencyError, ToolCall
from session_migrator.counting._counter import TokenCounter
from session_migrator.counting._online_counters import (
    AnthropicCounter,
    GeminiCounter,
    online_counter_for,
)
from session_migrator.counting._tokens import EstimatingCounter

ANTHROPIC_KEY = "sk-ant-test-dummy"
GEMINI_KEY = "gemini-test-dummy"


def words(text: str) -> int:
    return len(text.split())


def anthropic_total(messages: list[dict[str, Any]]) -> int:
    return 7 + sum(3 + words(m["content"]) for m in messages)


class Switch:
    """What the fake endpoints answer: normally a count, else an error status."""

    def __init__(self) -> None:
        self.status = 200
        self.headers: dict[str, str] = {}
        self.body: Any = None


def anthropic_route(switch: Switch) -> Any:
    def route(request: Any) -> tuple[Any, ...]:
        if request.path != "/v1/messages/count_tokens" or request.method != "POST":
            return 404, {"type": "error", "error": {"type": "not_found_error", "message": "no"}}
        if switch.status != 200:
            error = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}
            return switch.status, error, {"headers": switch.headers}
        if switch.body is not None:
            return 200, switch.body
        return 200, {"input_tokens": anthropic_total(request.body["messages"])}

    return route


def gemini_route(switch: Switch) -> Any:
    def route(request: Any) -> tuple[Any, ...]:
        if not re.fullmatch(r"/v1(beta)?/models/[^/:]+:countTokens", request.path):
            return 404, {"error": {"code": 404, "message": "no", "status": "NOT_FOUND"}}
        if switch.status != 200:
            error = {"error": {"code": switch.status, "message": "no", "status": "UNAVAILABLE"}}
            return switch.status, error
        texts = [p["text"] for c in request.body["contents"] for p in c["parts"]]
        return 200, {"totalTokens": sum(words(t) for t in texts)}

    return route


@pytest.fixture
def anthropic(serve: Any) -> tuple[Any, Switch]:
    switch = Switch()
    return serve(anthropic_route(switch)), switch


@pytest.fixture
def gemini(serve: Any) -> tuple[Any, Switch]:
    switch = Switch()
    return serve(gemini_route(switch)), switch


def make_anthropic(server: Any, **options: Any) -> AnthropicCounter:
    return AnthropicCounter(
        "claude-opus-4-7", api_key=ANTHROPIC_KEY, base_url=server.url, timeout=2, **options
    )


def make_gemini(server: Any, **options: Any) -> GeminiCounter:
    return GeminiCounter(
        "gemini-2.5-flash", api_key=GEMINI_KEY, base_url=server.url, timeout=2, **options
    )


HELLO_TEXT = "hello there big wide world"


def fresh() -> tuple[Message, Message]:
    """New message objects (counts are memoised on the message object, per counter name)."""
    return Message("user", HELLO_TEXT), Message("assistant", "one two three")


def test_anthropic_counts_exactly(anthropic: tuple[Any, Switch]) -> None:
    HELLO, REPLY = fresh()
    server, _ = anthropic
    counter = make_anthropic(server)
    assert isinstance(counter, TokenCounter)
    assert counter.count_message(HELLO) == 3 + 5
    assert counter.exact
    assert counter.count_text("four words right here") == 4
    total = counter.count_messages([HELLO, REPLY])
    whole = anthropic_total([{"content": HELLO.text}, {"content": REPLY.text}])
    assert total == whole == 7 + 8 + 6
    assert counter.count([HELLO, REPLY]).exact
    request = server.requests[0]
    sent_key = request.headers.get("x-api-key") or request.headers.get("authorization", "")
    assert sent_key.removeprefix("Bearer ") == ANTHROPIC_KEY
    assert request.body["model"] == "claude-opus-4-7"
    # two probes, then one request per distinct text
    assert len(server.requests) == 2 + 3
    counter.close()


def test_anthropic_renders_tool_calls_and_results(anthropic: tuple[Any, Switch]) -> None:
    server, _ = anthropic
    counter = make_anthropic(server)
    call = Message("assistant", "", tool_calls=(ToolCall("c1", "lookup", '{"q": "x"}'),))
    result = Message("tool", "sunny and warm", tool_call_id="c1")
    # turn, 'c1 lookup({"q": "x"})' (the call's id goes over the wire too), allowance
    assert counter.count_message(call) == 3 + 3 + 3
    assert counter.count_message(result) == 3 + 1 + 3  # turn, 'c1', 'sunny and warm'
    assert counter.count_message(Message("assistant", "")) == 3
    assert counter.exact
    counter.close()


def test_the_same_message_is_never_counted_twice(anthropic: tuple[Any, Switch]) -> None:
    HELLO = fresh()[0]
    server, _ = anthropic
    counter = make_anthropic(server)
    counter.count_message(HELLO)
    sent = len(server.requests)
    assert counter.count_message(Message("user", HELLO.text)) == 8  # a new object, same text
    assert counter.count_messages([HELLO, Message("assistant", HELLO.text)]) == 7 + 16
    assert len(server.requests) == sent
    counter.close()
    again = make_anthropic(server)  # a new counter: the SQLite cache answers, probes included
    assert again.count_messages([HELLO]) == 7 + 8
    assert again.exact
    assert len(server.requests) == sent
    assert again.requests == 0
    again.close()


def test_the_count_cache_is_shared_across_processes(
    anthropic: tuple[Any, Switch], tmp_path: Path
) -> None:
    HELLO = fresh()[0]
    server, _ = anthropic
    db = tmp_path / "counts.sqlite3"
    counter = make_anthropic(server, cache_path=db)
    counter.count_message(HELLO)
    sent = len(server.requests)
    counter.close()
    script = textwrap.dedent(
        f"""
        from session_migrator import Message
        from session_migrator.counting._online_counters import AnthropicCounter
        c = AnthropicCounter("claude-opus-4-7", api_key="x", base_url={server.url!r},
                             cache_path={str(db)!r})
        print(c.count_message(Message("user", {HELLO_TEXT!r})), c.exact, c.requests)
        c.close()
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["8", "True", "0"]
    assert len(server.requests) == sent


@pytest.mark.parametrize("status", [429, 500])
def test_anthropic_failure_falls_back_flagged_and_recovers(
    anthropic: tuple[Any, Switch], status: int
) -> None:
    HELLO, REPLY = fresh()
    server, switch = anthropic
    fallback = EstimatingCounter("claude-4.7", 1.63)
    counter = make_anthropic(server, fallback=fallback, cooldown=0)
    switch.status, switch.headers = status, {"retry-after": "0"}
    assert counter.count_message(HELLO) == fallback.count_message(HELLO)
    assert not counter.exact
    assert counter.count(messages := [HELLO, REPLY]).exact is False
    assert counter.fallbacks == 3
    assert counter.last_error is not None
    assert f"HTTP {status}" in counter.last_error
    assert counter.cached(HELLO) is None  # an estimate is never cached as exact
    switch.status = 200
    assert counter.count_messages(messages) == 7 + 8 + 6
    assert counter.exact
    counter.close()


def test_a_rate_limit_pauses_the_endpoint(anthropic: tuple[Any, Switch]) -> None:
    HELLO, REPLY = fresh()
    server, switch = anthropic
    counter = make_anthropic(server)  # default cooldown: 30 s, or the server's Retry-After
    switch.status, switch.headers = 429, {"retry-after": "20"}
    counter.count_messages([HELLO, REPLY, Message("user", "more")])
    assert not counter.exact
    assert len(server.requests) == 1  # one request, no retries, then the estimate
    counter.close()


def test_timeout_and_malformed_answers_fall_back(serve: Any) -> None:
    HELLO = fresh()[0]
    slow = serve(lambda r: (200, {"input_tokens": 5}, {"delay": 1.0}))
    counter = AnthropicCounter("claude-sonnet-4-5", api_key="x", base_url=slow.url, timeout=0.2)
    assert counter.count_message(HELLO) > 0
    assert not counter.exact
    assert counter.last_error is not None
    assert "Timeout" in counter.last_error
    counter.close()
    odd = serve(lambda r: (200, {"tokens": "many"}))
    counter = AnthropicCounter("claude-sonnet-4-5", api_key="x", base_url=odd.url, cooldown=0)
    assert counter.count_text("hello world") > 0
    assert not counter.exact
    counter.close()


def test_the_default_fallback_is_the_calibrated_family_estimate(serve: Any) -> None:
    down = serve(lambda r: (503, {}))
    counter = AnthropicCounter("claude-opus-4-7", api_key="x", base_url=down.url, persist=False)
    assert isinstance(counter.fallback, EstimatingCounter)
    assert counter.fallback.multiplier == pytest.approx(1.63)
    text = "a sentence of plain English words"
    assert counter.count_text(text) == counter.fallback.count_text(text)
    assert not counter.exact
    counter.close()


def test_gemini_counts_exactly_and_caches(gemini: tuple[Any, Switch]) -> None:
    HELLO, REPLY = fresh()
    server, _ = gemini
    counter = make_gemini(server)
    assert counter.count_message(HELLO) == 5
    assert counter.count_messages([HELLO, REPLY]) == 8
    assert counter.exact
    assert counter.count_text("two words") == 2
    request = server.requests[0]
    assert request.headers["x-goog-api-key"] == GEMINI_KEY
    assert request.path.endswith("/models/gemini-2.5-flash:countTokens")
    sent = len(server.requests)
    assert counter.count_messages([Message("user", HELLO.text)]) == 5
    assert len(server.requests) == sent
    counter.close()


@pytest.mark.parametrize("status", [429, 500])
def test_gemini_failure_falls_back(gemini: tuple[Any, Switch], status: int) -> None:
    HELLO = fresh()[0]
    server, switch = gemini
    switch.status = status
    counter = make_gemini(server, cooldown=0)
    estimate = counter.count_message(HELLO)
    assert not counter.exact
    assert estimate == counter.fallback.count_message(HELLO)
    assert len(server.requests) == 1  # no retries
    switch.status = 200
    assert counter.count_message(HELLO) == 5
    assert counter.exact
    counter.close()


def test_gemini_without_a_key_falls_back_instead_of_raising(serve: Any) -> None:
    server = serve(gemini_route(Switch()))
    counter = GeminiCounter("gemini-2.5-pro", base_url=server.url, persist=False)
    assert counter.count_text("hello world") == counter.fallback.count_text("hello world")
    assert not counter.exact
    assert counter.last_error is not None
    assert "API key" in counter.last_error
    assert server.requests == []
    counter.close()


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(MissingDependencyError) as info:
        AnthropicCounter("claude-opus-4-7")
    assert info.value.extra == "anthropic"
    assert "pip install 'session-migrator[anthropic]'" in str(info.value)
    monkeypatch.setitem(sys.modules, "google.genai", None)
    with pytest.raises(MissingDependencyError, match=r"\[gemini\]"):
        GeminiCounter("gemini-2.5-flash")


def test_a_given_client_is_used_and_not_closed(anthropic: tuple[Any, Switch]) -> None:
    import anthropic as sdk

    server, _ = anthropic
    client = sdk.Anthropic(api_key=ANTHROPIC_KEY, base_url=server.url, max_retries=0)
    counter = AnthropicCounter("claude-haiku-4-5", client=client, persist=False)
    assert counter.count_text("three words here") == 3
    counter.close()
    assert not client.is_closed()
    client.close()


def test_online_counter_for_picks_the_provider(tmp_path: Path) -> None:
    with online_counter_for("claude-sonnet-4-5", api_key="x", persist=False) as claude:
        assert isinstance(claude, AnthropicCounter)
    with online_counter_for("gemini-2.5-flash", api_key="x", persist=False) as gem:
        assert isinstance(gem, GeminiCounter)
    with pytest.raises(ValueError, match="no online token counter"):
        online_counter_for("gpt-4o")
