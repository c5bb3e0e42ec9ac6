"""Real HTTP servers on loopback for the live-refresh and online-counter tests.

``serve(route)`` starts a threaded ``http.server`` on 127.0.0.1, port 0. ``route(request)``
returns ``(status, body)`` or ``(status, body, options)``: a ``bytes`` body is sent as is,
anything else as JSON; options are ``delay`` (seconds before answering) and ``headers``. Every
request is recorded in ``server.requests`` (method, path, lower-cased headers, decoded JSON body).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


Route = Callable[[Request], tuple[Any, ...]]


class LoopbackServer:
    def __init__(self, route: Route) -> None:
        self.route = route
        self.requests: list[Request] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                request = Request(
                    self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
                )
                outer.requests.append(request)
                status, body, *rest = outer.route(request)
                options: dict[str, Any] = rest[0] if rest else {}
                if options.get("delay"):
                    time.sleep(options["delay"])
                payload = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in options.get("headers", {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = _handle
            do_POST = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that timed out and hung up

        self._server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def serve() -> Iterator[Callable[[Route], LoopbackServer]]:
    servers: list[LoopbackServer] = []

    def start(route: Route) -> LoopbackServer:
        server = LoopbackServer(route)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
