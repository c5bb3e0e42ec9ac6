"""Hermetic tests: user state in a temp dir, no ambient API keys, no network but loopback."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

_AMBIENT = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "DEEPSEEK_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "SESSION_MIGRATOR_STORE",
    "SESSION_MIGRATOR_MODELS",
    "TIKTOKEN_CACHE_DIR",
    "DATA_GYM_CACHE_DIR",
)


@pytest.fixture(autouse=True)
def _hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _AMBIENT:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "sm-home"
    monkeypatch.setenv("SESSION_MIGRATOR_HOME", str(home))


_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: object) -> object:
    host = address[0] if isinstance(address, tuple) else None
    if isinstance(host, str) and not (
        host in ("localhost", "::1") or host.startswith(("127.", "::ffff:127."))
    ):
        raise OSError(f"network access outside loopback is blocked in tests: {address!r}")
    return _real_connect(self, address)  # type: ignore[arg-type]


@pytest.fixture(autouse=True, scope="session")
def _no_network() -> Iterator[None]:
    socket.socket.connect = _loopback_only  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        socket.socket.connect = _real_connect  # type: ignore[method-assign]


def pytest_report_header() -> list[str]:
    return [f"CI={os.environ.get('CI', '')!s}"]
