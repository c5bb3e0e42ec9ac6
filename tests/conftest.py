"""Hermetic tests: user state in a temp dir, no ambient API keys, no network but loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

import session_migrator

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

# CI explores the same examples on every run (a property test that fails there fails again, and
# a landing does not hang on the draw); locally each run draws new ones.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _AMBIENT:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "sm-home"
    monkeypatch.setenv("SESSION_MIGRATOR_HOME", str(home))
    session_migrator.clear_served_cache()  # what runtimes said and read, per process


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


# -- the real Redis and PostgreSQL servers ------------------------------------------------------
# Tests that need one take the ``redis_url`` / ``postgres_url`` fixture: a URL with a key prefix or
# schema of the test's own, cleaned up after. A missing server skips those tests on a laptop, with
# the reason shown, and fails them under CI=true.

REDIS_URL = os.environ.get("SESSION_MIGRATOR_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
POSTGRES_URL = os.environ.get(
    "SESSION_MIGRATOR_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
_reachable: dict[str, str | None] = {}


def _probe(kind: str) -> str | None:
    """``None`` when the server answers, else why not (checked once per run)."""
    if kind in _reachable:
        return _reachable[kind]
    reason: str | None = None
    try:
        if kind == "redis":
            import redis

            client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
            try:
                client.ping()
            finally:
                client.close()
        else:
            import psycopg

            psycopg.connect(POSTGRES_URL, connect_timeout=2).close()
    except Exception as exc:
        reason = f"{type(exc).__name__}: {str(exc).strip()}"
    _reachable[kind] = reason
    return reason


def require_server(kind: str) -> None:
    """Skip (fail under CI=true) when the ``redis`` or ``postgres`` server is not reachable."""
    reason = _probe(kind)
    if reason is None:
        return
    url = REDIS_URL if kind == "redis" else POSTGRES_URL
    message = f"{kind} server not reachable at {url} ({reason})"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message}; CI=true requires every backend", pytrace=False)
    pytest.skip(f"{message}; start it to run the {kind} store tests")


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A Redis store URL with a key prefix of this test's own; its keys are deleted after.

    The test server may keep nothing across a restart (this machine's runs with ``--save ""``):
    opening a store on it then warns (StoreDurabilityWarning), which is expected here, for this
    test only (tests/store/test_durability.py checks the warning itself).
    """
    require_server("redis")
    import warnings

    import redis

    from session_migrator import StoreDurabilityWarning

    warnings.filterwarnings("ignore", category=StoreDurabilityWarning)  # (reset after the test)

    prefix = f"smtest:{uuid.uuid4().hex}:"
    yield f"{REDIS_URL}?prefix={prefix}"
    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL store URL with a schema of this test's own, dropped after."""
    require_server("postgres")
    import psycopg
    from psycopg import sql

    schema = f"smtest_{uuid.uuid4().hex}"
    yield f"{POSTGRES_URL}?schema={schema}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


# -- the runnable examples -------------------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture
def run_example(tmp_path: Path) -> Callable[[str], str]:
    """Run ``examples/NAME`` as a user would (its own process, warnings as errors, state in a
    temp dir) and return what it printed; a non-zero exit fails the test with its stderr.
    """

    def run(name: str) -> str:
        env = {**os.environ, "SESSION_MIGRATOR_HOME": str(tmp_path / "home")}
        result = subprocess.run(
            [sys.executable, "-W", "error", str(EXAMPLES / name)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return result.stdout

    return run


def pytest_report_header() -> list[str]:
    return [f"CI={os.environ.get('CI', '')!s}"]
