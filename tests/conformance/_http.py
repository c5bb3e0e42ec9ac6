"""The plumbing the two provider emulators share: a loopback HTTP server, recording, scripting.

An emulator is a ``ThreadingHTTPServer`` on ``127.0.0.1`` (port 0, so the OS picks a free one)
served from a daemon thread. Every request is recorded (:class:`Recorded`: path, headers, the
parsed JSON body, and the verdict: the status and the error body when it was refused), so a test
asserts on what the provider class really sent. Answers are scripted per test with
:meth:`Emulator.script` (a queue of :class:`Text`, :class:`Calls` and :class:`Json` replies, used
in order); when the queue is empty the answer is :data:`DEFAULT_TEXT`.

Every answer closes its connection (``Connection: close``): no client keeps a socket to a server
that a test stops, or to an event loop that ``asyncio.run`` closed.

Questions about the runtime (``GET`` of ``/api/ps``, ``/v1/models``, ``/props``, and the POST
routes in ``probe_paths``) are answered by :meth:`Emulator.handle_probe` and listed in
``probes``, not in ``requests``. An answer may be an NDJSON stream (:attr:`Answer.lines`,
Ollama's).

Subclasses implement :meth:`Emulator.handle`: validate the body as the service does and answer,
or refuse with the provider's own error body.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_TEXT = "Short answer."


@dataclass(frozen=True)
class Text:
    """A plain text answer."""

    text: str = DEFAULT_TEXT


@dataclass(frozen=True)
class Calls:
    """An answer made of tool calls: ``(name, arguments)`` pairs (so an agent loops)."""

    calls: tuple[tuple[str, dict[str, Any]], ...]
    text: str = ""

    @classmethod
    def one(cls, name: str, **arguments: Any) -> Calls:
        return cls(((name, arguments),))


@dataclass(frozen=True)
class Json:
    """A JSON answer sent as the text (structured output by json_schema or json_mode)."""

    value: Any

    @property
    def text(self) -> str:
        return json.dumps(self.value)


Reply = Text | Calls | Json


@dataclass
class Recorded:
    """One request the emulator received, and what it answered."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    status: int = 200
    error: dict[str, Any] | None = None
    prompt_tokens: int = 0
    max_tokens: int | None = None
    window: int = 0
    #: (Anthropic) prompt tokens read from and written to the prompt cache
    cache_read: int = 0
    cache_written: int = 0

    @property
    def refused(self) -> bool:
        return self.status >= 400

    def summary(self) -> str:
        """One line a failure message shows: what was sent against the window."""
        model = self.body.get("model")
        shown = "unset" if self.max_tokens is None else f"{self.max_tokens:,}"
        line = (
            f"{self.path} model={model}: {self.prompt_tokens:,} prompt tokens + max_tokens "
            f"{shown} vs window {self.window:,} -> {self.status}"
        )
        if self.error is not None:
            line += f" {json.dumps(self.error)[:300]}"
        return line


class Refusal(Exception):
    """Raised inside :meth:`Emulator.handle` to answer with an error status and body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(json.dumps(body))
        self.status = status
        self.body = body


@dataclass
class Answer:
    """What :meth:`Emulator.handle` returns: a JSON body, or SSE events to stream."""

    body: dict[str, Any] | None = None
    events: list[tuple[str | None, str]] = field(default_factory=list)  # (event name, data)
    lines: list[dict[str, Any]] | None = None  # NDJSON stream (Ollama's)
    raw: tuple[str, bytes] | None = None  # (content type, bytes): a binary stream (Bedrock's)


class Emulator:
    """A loopback server of one provider API; see the module docstring."""

    name = "emulator"

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.probes: list[str] = []  # the GET routes asked (a runtime's window), not requests
        self._replies: list[Reply] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                emulator._serve(self)

            def do_GET(self) -> None:  # a runtime's own routes (/api/ps, /v1/models, /props)
                emulator._serve(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Emulator:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- scripting and assertions -------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Queue the answers of the next requests, in order."""
        with self._lock:
            self._replies.extend(replies)

    def next_reply(self) -> Reply:
        with self._lock:
            return self._replies.pop(0) if self._replies else Text()

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    @property
    def refusals(self) -> list[Recorded]:
        return [r for r in self.requests if r.refused]

    @property
    def accepted(self) -> list[Recorded]:
        return [r for r in self.requests if not r.refused]

    def report(self) -> str:
        """Every request, one line each: for failure messages."""
        lines = [r.summary() for r in self.requests] or ["(no request reached the emulator)"]
        return f"{self.name}: {len(self.requests)} requests\n  " + "\n  ".join(lines)

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self._replies.clear()

    # -- the HTTP side ------------------------------------------------------------------------

    def handle(
        self, path: str, headers: dict[str, str], body: dict[str, Any], rec: Recorded
    ) -> Answer:
        raise NotImplementedError

    #: POST routes that ask about the runtime rather than send a request (Ollama's /api/show).
    probe_paths: frozenset[str] = frozenset()

    def handle_probe(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """The answer to a question about the runtime (``GET path``, or a POST to one of
        :attr:`probe_paths`), ``None`` for a 404."""
        return None

    def _serve(self, http: BaseHTTPRequestHandler) -> None:
        path = http.path.split("?", 1)[0]
        if http.command == "GET" or path in self.probe_paths:
            length = int(http.headers.get("Content-Length") or 0)
            try:
                asked = json.loads(http.rfile.read(length) or b"{}") if length else {}
            except ValueError:
                asked = {}
            with self._lock:
                self.probes.append(path)
            found = self.handle_probe(path, asked if isinstance(asked, dict) else {})
            if found is None:
                _send_json(http, 404, {"error": f"404 page not found: {path}"})
            else:
                _send_json(http, 200, found)
            return
        length = int(http.headers.get("Content-Length") or 0)
        raw = http.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in http.headers.items()}
        path = http.path.split("?", 1)[0]
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        rec = Recorded(path=path, headers=headers, body=body if isinstance(body, dict) else {})
        with self._lock:
            self.requests.append(rec)
        try:
            if not isinstance(body, dict):
                raise self.bad_request("We could not parse the JSON body of your request.")
            answer = self.handle(path, headers, body, rec)
        except Refusal as refusal:
            rec.status, rec.error = refusal.status, refusal.body
            _send_json(http, refusal.status, refusal.body)
            return
        if answer.body is not None:
            _send_json(http, 200, answer.body)
        elif answer.lines is not None:
            _send_lines(http, answer.lines)
        elif answer.raw is not None:
            _send_raw(http, *answer.raw)
        else:
            _send_events(http, answer.events)

    def bad_request(self, message: str) -> Refusal:
        raise NotImplementedError


def _send_json(http: BaseHTTPRequestHandler, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    http.send_response(status)
    http.send_header("Content-Type", "application/json")
    http.send_header("Content-Length", str(len(data)))
    http.send_header("Connection", "close")
    http.close_connection = True
    http.end_headers()
    http.wfile.write(data)


def _send_raw(http: BaseHTTPRequestHandler, content_type: str, data: bytes) -> None:
    http.send_response(200)
    http.send_header("Content-Type", content_type)
    http.send_header("Content-Length", str(len(data)))
    http.send_header("Connection", "close")
    http.close_connection = True
    http.end_headers()
    http.wfile.write(data)


def _send_events(http: BaseHTTPRequestHandler, events: Iterable[tuple[str | None, str]]) -> None:
    http.send_response(200)
    http.send_header("Content-Type", "text/event-stream")
    http.send_header("Cache-Control", "no-cache")
    http.send_header("Transfer-Encoding", "chunked")
    http.send_header("Connection", "close")
    http.close_connection = True
    http.end_headers()
    for event, data in events:
        frame = (f"event: {event}\n" if event else "") + f"data: {data}\n\n"
        chunk = frame.encode()
        http.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
    http.wfile.write(b"0\r\n\r\n")
    http.wfile.flush()


def _send_lines(http: BaseHTTPRequestHandler, lines: Iterable[dict[str, Any]]) -> None:
    http.send_response(200)
    http.send_header("Content-Type", "application/x-ndjson")
    http.send_header("Transfer-Encoding", "chunked")
    http.send_header("Connection", "close")
    http.close_connection = True
    http.end_headers()
    for line in lines:
        chunk = (json.dumps(line) + "\n").encode()
        http.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
    http.wfile.write(b"0\r\n\r\n")
    http.wfile.flush()


def pieces(text: str, size: int = 12) -> Iterator[str]:
    """``text`` in stream-sized pieces (at least one, possibly empty)."""
    if not text:
        yield ""
        return
    for i in range(0, len(text), size):
        yield text[i : i + size]
