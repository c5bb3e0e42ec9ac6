"""One deadline per summarize call, retries included: the real ``openai`` client against servers
on loopback that trickle, stay silent or ask to retry later; migrate falls back and says so."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from session_migrator import Message, ModelWindow, SummarizerError
from session_migrator.counting._tokens import counter_for
from session_migrator.migration._migrate import migrate
from session_migrator.summaries._summarizers import OpenAISummarizer

pytest.importorskip("openai")

COMPLETION = json.dumps(
    {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "A summary."},
             "finish_reason": "stop"}
        ],
    }
).encode()  # fmt: skip


class Server(ThreadingHTTPServer):
    daemon_threads = True
    mode = "ok"
    requests = 0
    stop = threading.Event()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the client hung up


class Handler(BaseHTTPRequestHandler):
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        server = self.server
        server.requests += 1
        mode = server.mode
        if mode == "fail-once" and server.requests == 1:
            mode = "500"
        if mode == "silent":
            server.stop.wait(30)
            return
        if mode in ("429", "500"):
            body = b'{"error": {"message": "later", "type": "x", "code": null}}'
            self.send_response(int(mode))
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Retry-After", "20" if mode == "429" else "1")
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(COMPLETION)))
        self.end_headers()
        if mode == "trickle":  # a byte every 0.1 s: no read ever times out
            for byte in COMPLETION:
                if server.stop.wait(0.1):
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
        else:
            self.wfile.write(COMPLETION)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    httpd = Server(("127.0.0.1", 0), Handler)
    httpd.stop = threading.Event()
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield httpd
    httpd.stop.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


def _summarizer(server: Server, timeout: float, retries: int = 2) -> OpenAISummarizer:
    port = server.server_address[1]
    return OpenAISummarizer(
        "m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", timeout=timeout,
        max_retries=retries,
    )  # fmt: skip


def _summarize(s: OpenAISummarizer) -> tuple[float, str]:
    counter = counter_for("o200k_base")
    counter.count_text("warm up")  # (loading the encoding is not the server's time)
    started = time.monotonic()
    try:
        text = s.summarize([Message("user", "hello")], max_tokens=50, counter=counter)
    except SummarizerError as exc:
        return time.monotonic() - started, f"error: {exc}"
    return time.monotonic() - started, text


@pytest.mark.parametrize("mode", ["trickle", "silent"])
def test_a_server_that_never_completes_costs_one_deadline(server: Server, mode: str) -> None:
    server.mode = mode
    took, outcome = _summarize(_summarizer(server, timeout=1.0))
    assert outcome.startswith("error: "), outcome
    assert took < 3.0, took  # (before: trickle ran until the reply was complete, ~30 s here)
    if mode == "trickle":
        assert "deadline" in outcome


def test_a_retry_after_beyond_the_deadline_is_not_waited_for(server: Server) -> None:
    server.mode = "429"
    took, outcome = _summarize(_summarizer(server, timeout=2.0))
    assert took < 1.5, took  # (before: two waits of 20 s)
    assert "RateLimitError" in outcome
    assert "would pass the 2 s deadline" in outcome
    assert server.requests == 1


def test_retries_within_the_deadline_still_happen(server: Server) -> None:
    server.mode = "fail-once"  # a 500 that asks to retry in 1 s, then a reply
    took, outcome = _summarize(_summarizer(server, timeout=5.0))
    assert outcome == "A summary."
    assert server.requests == 2
    assert 0.9 < took < 5.0


def test_migrate_falls_back_and_reports_the_deadline(server: Server) -> None:
    server.mode = "trickle"
    messages = [Message("system", "You help.", id="sys")]
    for i in range(40):
        role = "user" if i % 2 == 0 else "assistant"
        messages.append(Message(role, f"turn {i}: " + "words " * 60, id=f"m{i}"))
    target = ModelWindow("small", "test", 2_000, 2_000, 200, "o200k_base", "test", "2025")
    counter_for("o200k_base").count_text("warm up")
    started = time.monotonic()
    result = migrate(messages, target, strategy="summarize", summarizer=_summarizer(server, 1.0))
    assert time.monotonic() - started < 4.0
    assert len(result.report.fallbacks) == 1
    assert "deadline" in result.report.fallbacks[0]


def test_the_default_deadline_is_well_under_a_model_calls_patience() -> None:
    s = OpenAISummarizer(api_key="k")
    assert s.timeout == 30.0
    assert s._client.max_retries == 0  # retries are made within the deadline
    with pytest.raises(SummarizerError, match="timeout must be seconds > 0"):
        OpenAISummarizer(api_key="k", timeout=0)
