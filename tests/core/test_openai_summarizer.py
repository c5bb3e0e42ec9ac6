"""The OpenAI summarizer with the real ``openai`` client against an OpenAI-compatible server on
loopback (stdlib ``http.server`` in a thread): success, and every failure falling back offline."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from session_migrator import Message, ModelWindow, SummarizerError, ToolCall
from session_migrator.counting._tokens import counter_for
from session_migrator.messages._rules import chat_rule_violations
from session_migrator.migration._migrate import migrate
from session_migrator.summaries._summarizers import OpenAISummarizer

pytest.importorskip("openai")

SUMMARY = "Alice's budget is $4,200; the team decided to use Postgres; the deadline is May 1."


@dataclass
class FakeOpenAI:
    """What the fake server answers (``mode``) and every request it received."""

    mode: str = "ok"
    reply: str = SUMMARY
    requests: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            fake.requests.append(
                {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
            )
            completion = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": fake.reply},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
            error = {"error": {"message": "boom", "type": "server_error", "code": None}}
            if fake.mode == "ok":
                self._send(200, json.dumps(completion).encode())
            elif fake.mode == "500":
                self._send(500, json.dumps(error).encode())
            elif fake.mode == "429":
                error["error"]["type"] = "rate_limit_exceeded"
                self._send(429, json.dumps(error).encode(), {"Retry-After": "0"})
            elif fake.mode == "slow":
                fake.release.wait(10)
                self._send(200, json.dumps(completion).encode())
            elif fake.mode == "malformed":
                self._send(200, b'{"id": "chatcmpl-1", "choices": [')
            elif fake.mode == "empty_choices":
                completion["choices"] = []
                self._send(200, json.dumps(completion).encode())
            elif fake.mode == "null_content":
                completion["choices"][0]["message"]["content"] = None
                self._send(200, json.dumps(completion).encode())
            else:  # pragma: no cover - a typo in a test
                raise AssertionError(fake.mode)

    return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the client hung up (the timeout test): nothing to report


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    state = FakeOpenAI()
    server = _QuietServer(("127.0.0.1", 0), _handler(state))
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def summarizer(fake: FakeOpenAI, timeout: float = 5.0) -> OpenAISummarizer:
    return OpenAISummarizer(
        model="test-model", base_url=fake.base_url, api_key="test", timeout=timeout, max_retries=0
    )


def conversation(turns: int = 30) -> list[Message]:
    messages = [Message("system", "You are a planning assistant.", id="sys")]
    for i in range(turns):
        messages.append(
            Message(
                "user", f"Turn {i}: my budget is ${4000 + i} and we meet in room {i}.", id=f"u{i}"
            )
        )
        if i % 5 == 2:
            messages.append(
                Message(
                    "assistant",
                    "",
                    tool_calls=(ToolCall(f"call{i}", "lookup", json.dumps({"room": i})),),
                    id=f"a{i}",
                )
            )
            messages.append(
                Message("tool", f"room {i} is free", tool_call_id=f"call{i}", id=f"t{i}")
            )
        messages.append(
            Message("assistant", f"Noted: budget {4000 + i}, room {i}. " * 4, id=f"b{i}")
        )
    return messages


TARGET = ModelWindow("small", "test", 1_200, 1_200, 200, "o200k_base", "explicit")


def test_a_summary_comes_back_and_the_request_is_well_formed(fake: FakeOpenAI) -> None:
    counter = counter_for("o200k_base")
    messages = conversation(4)
    text = summarizer(fake).summarize(messages, max_tokens=150, counter=counter)
    assert text == SUMMARY
    [request] = fake.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer test"
    body = request["body"]
    assert body["model"] == "test-model"
    assert body["max_tokens"] == 150
    assert body["temperature"] == 0
    system, user = body["messages"]
    assert system["role"] == "system"
    assert "150 tokens" in system["content"]
    assert user["role"] == "user"
    assert "Turn 0: my budget is $4000" in user["content"]
    assert "called lookup" in user["content"]
    assert "Summary so far" not in user["content"]


def test_the_previous_summary_is_folded_in(fake: FakeOpenAI) -> None:
    counter = counter_for("o200k_base")
    summarizer(fake).summarize(
        [Message("user", "new fact: the venue is Lyon")],
        max_tokens=100,
        counter=counter,
        previous="Earlier: budget $4,200.",
    )
    content = fake.requests[0]["body"]["messages"][1]["content"]
    assert content.startswith("Summary so far (fold it in):\nEarlier: budget $4,200.")
    assert "the venue is Lyon" in content


def test_migrate_uses_the_summary(fake: FakeOpenAI) -> None:
    messages = conversation()
    result = migrate(messages, TARGET, strategy="summarize", summarizer=summarizer(fake))
    report = result.report
    assert report.decision == "compressed"
    assert report.fallbacks == []
    assert report.summary is not None
    assert report.summary["summarizer"] == "openai:test-model"
    assert report.summary["text"] == SUMMARY
    lead = result.messages[1]
    assert lead.marker is not None
    assert lead.marker["kind"] == "summary"
    assert SUMMARY in lead.text
    assert counter_for("o200k_base").count_messages(result.messages) <= report.budget
    assert chat_rule_violations(result.messages) == []
    body = fake.requests[0]["body"]
    assert body["max_tokens"] <= report.budget


FAILURES = {
    "500": ("500", "InternalServerError"),
    "429": ("429", "RateLimitError"),
    "timeout": ("slow", "APITimeoutError"),
    "malformed JSON": ("malformed", ""),
    "empty choices": ("empty_choices", "malformed reply"),
    "null content": ("null_content", "no summary text"),
}


@pytest.mark.parametrize(("mode", "why"), list(FAILURES.values()), ids=list(FAILURES))
def test_a_failing_server_raises_summarizer_error(fake: FakeOpenAI, mode: str, why: str) -> None:
    fake.mode = mode
    with pytest.raises(SummarizerError, match="openai:test-model") as caught:
        summarizer(fake, timeout=0.5).summarize(
            conversation(3), max_tokens=100, counter=counter_for("o200k_base")
        )
    assert why in str(caught.value)


@pytest.mark.parametrize(
    "mode", [*(m for m, _ in FAILURES.values()), "long"], ids=[*FAILURES, "over-long summary"]
)
def test_migrate_falls_back_offline_when_the_summarizer_fails(fake: FakeOpenAI, mode: str) -> None:
    if mode == "long":
        fake.reply = "An endless summary that ignores its limit. " * 400
    else:
        fake.mode = mode
    messages = conversation()
    frozen = [m.to_openai() for m in messages]
    result = migrate(
        messages, TARGET, strategy="summarize", summarizer=summarizer(fake, timeout=0.5)
    )
    report = result.report
    counter = counter_for("o200k_base")
    assert counter.count_messages(result.messages) <= report.budget
    assert chat_rule_violations(result.messages) == []
    assert [m.to_openai() for m in messages] == frozen
    assert len(report.fallbacks) == 1
    assert "openai:test-model" in report.fallbacks[0]
    assert "extractive" in report.fallbacks[0]
    if mode == "long":
        assert "over its limit" in report.fallbacks[0]
    assert report.summary is not None
    assert report.summary["summarizer"] == "extractive"
    assert report.summarized_ids, "the offline summary still covers the cut messages"
    assert len(fake.requests) == 1, "max_retries=0: one request, no retry"
    json.dumps(report.to_dict())


def test_the_timeout_is_the_clients(fake: FakeOpenAI) -> None:
    fake.mode = "slow"
    s = summarizer(fake, timeout=0.3)
    assert s._client.timeout == 0.3
    assert s._client.max_retries == 0


# -- configuration -----------------------------------------------------------------------------


def test_deepseek_key_selects_deepseek(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek")
    s = OpenAISummarizer()
    assert s.model == "deepseek-chat"
    assert s.name == "openai:deepseek-chat"
    assert str(s._client.base_url).rstrip("/") == "https://api.deepseek.com"
    assert s._client.api_key == "sk-deepseek"


def test_explicit_values_win_over_the_deepseek_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek")
    s = OpenAISummarizer(model="deepseek-reasoner", base_url="http://127.0.0.1:9/v1")
    assert s.model == "deepseek-reasoner"
    assert str(s._client.base_url).rstrip("/") == "http://127.0.0.1:9/v1"


def test_openai_key_wins_over_deepseek(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    s = OpenAISummarizer()
    assert s.model == "gpt-4o-mini"
    assert s._client.api_key == "sk-openai"
    assert "deepseek" not in str(s._client.base_url)


def test_openai_base_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    assert str(OpenAISummarizer()._client.base_url).rstrip("/") == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize("empty", [None, ""])
def test_a_missing_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, empty: str | None) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    if empty is not None:
        monkeypatch.setenv("OPENAI_API_KEY", empty)
        monkeypatch.setenv("DEEPSEEK_API_KEY", empty)
    with pytest.raises(SummarizerError) as caught:
        OpenAISummarizer()
    message = str(caught.value)
    assert "api_key=" in message
    assert "OPENAI_API_KEY" in message
    assert "DEEPSEEK_API_KEY" in message


def test_a_server_of_ones_own_needs_no_key(
    fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    keyless = OpenAISummarizer(model="qwen2.5", base_url=fake.base_url, max_retries=0)
    text = keyless.summarize(conversation(2), max_tokens=100, counter=counter_for("o200k_base"))
    assert text == SUMMARY
    assert fake.requests[-1]["auth"] == "Bearer no-key"


def test_the_cli_configures_the_summarizer_or_says_what_is_missing(
    fake: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from session_migrator import messages_to_openai
    from session_migrator.cli import main

    for name in ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(messages_to_openai(conversation(30))))
    argv = [
        "migrate",
        str(path),
        "--to",
        "small",
        "--context-window",
        "1200",
        "--strategy",
        "summarize",
        "--json",
    ]
    server = ["--summarizer-model", "qwen2.5", "--summarizer-base-url", fake.base_url]
    # the summarizer's options without --summarizer openai would be ignored: refused
    assert main([*argv, *server]) == 2
    assert "configure --summarizer openai" in capsys.readouterr().err
    # a server of one's own: no key
    assert main([*argv, "--summarizer", "openai", *server]) == 0
    report = json.loads(capsys.readouterr().out)["report"]
    assert report["summary"]["summarizer"] != "extractive"
    assert report["fallbacks"] == []
    assert fake.requests[-1]["auth"] == "Bearer no-key"
    # a key from an environment variable
    monkeypatch.setenv("MY_KEY", "sk-local")
    keyed = [*argv, "--summarizer", "openai", *server, "--summarizer-api-key-env", "MY_KEY"]
    assert main(keyed) == 0
    capsys.readouterr()
    assert fake.requests[-1]["auth"] == "Bearer sk-local"
    monkeypatch.delenv("MY_KEY")
    assert main(keyed) == 2
    assert "MY_KEY is not set" in capsys.readouterr().err
