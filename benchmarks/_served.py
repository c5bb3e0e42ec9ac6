"""A uvicorn server in a thread (TCP on a free loopback port, or a Unix socket): what the HTTP
API's tests and its load benchmark run."""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn

__all__ = ["Served"]


class Served:
    """``app`` served by uvicorn in a daemon thread until :meth:`stop`; :attr:`url` is its
    base URL."""

    def __init__(self, app: Any, socket: str | None = None) -> None:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=0, uds=socket, log_level="warning", lifespan="on", ws="none"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        self.url = "http://127.0.0.1"
        if socket is None:
            port = self.server.servers[0].sockets[0].getsockname()[1]
            self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
