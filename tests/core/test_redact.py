"""Secrets never reach an error text: a provider's 401 that echoes the key, through the real
``openai`` / ``anthropic`` clients and the live refresh against a server on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from session_migrator import Message, ModelWindow, migrate, redact_secrets, refresh_models
from session_migrator.cli import main

KEY = "sk-test-Zq8vN3kLpW5rT7yXcB2m"
ODD_KEY = "corp-gateway-4f9a1c77e2"  # not shaped like any known key


def _echoing_handler() -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _deny(self) -> None:
            auth = self.headers.get("Authorization") or ""
            key = self.headers.get("x-api-key") or ""
            body = json.dumps(
                {
                    "error": {
                        "message": f"Incorrect API key provided: {key or auth[7:]}. "
                        f"You sent Authorization: {auth}",
                        "type": "invalid_request_error",
                    }
                }
            ).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self._deny()

        def do_GET(self) -> None:
            self._deny()

    return Handler


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _echoing_handler())
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _long_conversation() -> list[Message]:
    messages = [Message("system", "You are terse.")]
    for i in range(30):
        messages += [Message("user", f"question {i} " + "words " * 80), Message("assistant", "ok")]
    return messages


def test_token_shapes_and_given_secrets_are_scrubbed() -> None:
    text = (
        f"401 Incorrect API key provided: {KEY}; Authorization: Bearer {ODD_KEY}; "
        "url https://x/v1/models?key=AIzaSyA1234567890abcdefghijklmn&alt=json; "
        f"sk-ant-api03-abcdefgh; and {ODD_KEY} alone"
    )
    clean = redact_secrets(text, ODD_KEY)
    for secret in (KEY, ODD_KEY, "AIzaSyA1234567890", "sk-ant-api03-abcdefgh"):
        assert secret not in clean
    assert clean.startswith("401 Incorrect API key provided: ")
    assert "[redacted]" in clean
    assert redact_secrets("nothing secret here: 42 tokens") == "nothing secret here: 42 tokens"


@pytest.mark.parametrize("key", [KEY, ODD_KEY])
def test_a_summarizer_401_that_echoes_the_key_leaves_no_key_in_the_report(
    server: str, key: str
) -> None:
    pytest.importorskip("openai")
    from session_migrator import OpenAISummarizer

    summarizer = OpenAISummarizer("m", base_url=f"{server}/v1", api_key=key, max_retries=0)
    window = ModelWindow("w", "p", 1_000, 1_000, 0, "o200k_base", "explicit")
    result = migrate(_long_conversation(), window, strategy="summarize", summarizer=summarizer)
    assert result.report.fallbacks, "the summarizer was expected to fail"
    text = json.dumps(result.report.to_dict())
    assert "401" in text
    assert key not in text
    assert key[3:12] not in text


def test_the_cli_prints_a_401_without_the_key(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("openai")
    source = tmp_path / "long.json"
    source.write_text(json.dumps([m.to_openai() for m in _long_conversation()]), encoding="utf-8")
    monkeypatch.setenv("MY_KEY", ODD_KEY)
    code = main(
        [
            "migrate", str(source), "--to", "gpt-4", "--context-window", "1000",
            "--summarizer", "openai", "--summarizer-base-url", f"{server}/v1",
            "--summarizer-api-key-env", "MY_KEY", "--strategy", "summarize",
        ]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0
    assert "401" in out  # the failure is reported...
    assert ODD_KEY not in out + err  # ...without the key


def test_an_online_counter_401_keeps_the_key_out_of_its_error(server: str) -> None:
    pytest.importorskip("anthropic")
    from session_migrator import AnthropicCounter

    counter = AnthropicCounter("claude-sonnet-4-5", api_key=ODD_KEY, base_url=server)
    try:
        counter.count_messages([Message("user", "hello")])
    finally:
        counter.close()
    assert counter.exact is False
    assert counter.last_error is not None
    assert "401" in counter.last_error
    assert ODD_KEY not in counter.last_error


def test_a_live_refresh_401_keeps_the_key_out_of_its_error(server: str) -> None:
    result = refresh_models([f"{server}/v1"], kind="openai", api_key=ODD_KEY, timeout=5)
    (source,) = result.sources
    assert not source.ok
    assert source.error is not None
    assert "401" in source.error
    assert ODD_KEY not in source.error
