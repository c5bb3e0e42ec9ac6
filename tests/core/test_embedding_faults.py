"""An embedding model's failures (issue 41): its error reaches ``report.fallbacks`` with every
secret redacted, as the summarizer's does (a real ``OpenAIEmbeddings`` against a loopback server
answering 401 with the key echoed, and a plain callable), through ``migrate()`` and
``SessionFitter``; and a model that hangs holds a bounded number of threads however many fits
ask it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from session_migrator import (
    Embeddings,
    Message,
    ModelWindow,
    SessionFitter,
    _deadline,
    counter_for,
    migrate,
)
from session_migrator._deadline import WORKERS
from session_migrator.store import open_store

KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


def _history() -> list[Message]:
    out: list[Message] = []
    for i in range(12):
        out += [
            Message("user", f"Turn {i}: the dog and the car. " + "words " * 30, id=f"u{i}"),
            Message("assistant", f"Reply {i} about a boat. " + "more " * 30, id=f"a{i}"),
        ]
    return [*out, Message("user", "Which car did we talk about?", id="q")]


def _window() -> ModelWindow:
    budget = counter_for("o200k_base").count_messages(_history()) // 3
    return ModelWindow("small", "example", budget, budget, 0, "o200k_base", "explicit")


class _Echo401(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        auth = self.headers.get("Authorization", "")
        body = json.dumps(
            {"error": {"message": f"Incorrect API key provided: {KEY}. You sent {auth}.",
                       "type": "invalid_request_error", "code": "invalid_api_key"}}
        ).encode()  # fmt: skip
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def echo_401(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo401)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _assert_redacted(fallbacks: Sequence[str]) -> None:
    assert any("embeddings" in f and "bm25 alone" in f for f in fallbacks), fallbacks
    text = " ".join(fallbacks)
    assert "sk-proj-" not in text, text
    assert "abcdefghijklmnop" not in text, text
    assert "Bearer sk" not in text, text


def test_an_openai_embeddings_401_echoing_the_key_is_redacted(echo_401: str) -> None:
    from langchain_openai import OpenAIEmbeddings

    model = OpenAIEmbeddings(
        model="text-embedding-3-small",
        api_key=KEY,
        base_url=echo_401,
        max_retries=0,  # type: ignore[arg-type]
    )
    result = migrate(_history(), _window(), strategy="recall", embeddings=model)
    _assert_redacted(result.report.fallbacks)
    fitter = SessionFitter("s", store=open_store("memory://"), strategy="recall", embeddings=model)
    fitter.append(_history())
    _assert_redacted(fitter.fit(_window()).report.fallbacks)


def test_a_callables_error_with_a_key_is_redacted() -> None:
    def leaky(texts: Sequence[str]) -> list[list[float]]:
        raise RuntimeError(f"401 for key {KEY} (Authorization: Bearer {KEY})")

    model = Embeddings(leaky, name="leaky")
    result = migrate(_history(), _window(), strategy="recall", embeddings=model)
    _assert_redacted(result.report.fallbacks)


def test_a_hanging_model_holds_a_bounded_number_of_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_deadline, "_GRACE", 0.0)  # (the fits give up at once: a quicker test)
    release = threading.Event()

    def hanging(texts: Sequence[str]) -> list[list[float]]:
        release.wait(30)
        return [[1.0, 0.0] for _ in texts]

    model = Embeddings(hanging, name="hanging", timeout=0.05)
    before = threading.active_count()
    try:
        for k in range(60):
            result = migrate(
                [*_history(), Message("user", f"question {k}")],
                _window(),
                strategy="recall",
                embeddings=model,
            )
            assert any("deadline" in f for f in result.report.fallbacks)
        assert threading.active_count() <= before + WORKERS
    finally:
        release.set()
    # once the model answers, the held threads are free again and take new attempts
    deadline = time.monotonic() + 10
    while _deadline._WORKERS._idle < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() <= before + WORKERS
