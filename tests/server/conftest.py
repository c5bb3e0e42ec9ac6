"""Start the MCP server as a subprocess and connect the ``mcp`` SDK's own stdio client."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.conformance._needle import needle_api  # noqa: F401  (a fixture, shared)

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

Connect = Callable[..., AbstractAsyncContextManager["ClientSession"]]


@pytest.fixture
def server_log(tmp_path: Path) -> Path:
    return tmp_path / "server.log"


@pytest.fixture
def connect(tmp_path: Path, server_log: Path) -> Connect:
    """``async with connect() as session``: a fresh server on a store in ``tmp_path``."""

    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    @asynccontextmanager
    async def _connect(*extra: str) -> AsyncIterator[ClientSession]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "session_migrator", "mcp", *extra],
            env={"SESSION_MIGRATOR_HOME": str(tmp_path / "home")},
            cwd=str(tmp_path),
        )
        with server_log.open("a", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write, read_timeout_seconds=60) as session,
            ):
                await session.initialize()
                yield session

    return _connect
