"""Redis and PostgreSQL servers of a test's own, in a tmp dir on a free port: to kill, freeze
(SIGSTOP) and restart them. Missing binaries skip the test, or fail it under CI=true."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO

import pytest

PG_BIN = Path(os.environ.get("SESSION_MIGRATOR_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))


def require_binary(path: str | Path | None, what: str) -> str:
    if path is not None and Path(path).exists():
        return str(path)
    message = f"{what} not found ({path})"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message}; CI=true requires it", pytrace=False)
    pytest.skip(f"{message}; install it to run this test")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[bytes] | None, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server on port {port} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {timeout} s")


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


class RedisServer:
    """``redis-server`` in ``folder`` on a free port, started with ``args``."""

    def __init__(self, folder: Path, *args: str) -> None:
        self.binary = require_binary(shutil.which("redis-server"), "redis-server")
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.args = args
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir",
             str(self.folder), *self.args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        _wait_for_port(self.port, self.proc)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()

    def freeze(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.thaw()
            self.kill()


class PostgresServer:
    """A PostgreSQL cluster (``initdb``) in a temporary folder on a free port; run as the
    ``postgres`` user when this process is root (PostgreSQL refuses to run as root)."""

    def __init__(self) -> None:
        self.postgres = require_binary(PG_BIN / "postgres", "PostgreSQL's postgres")
        initdb = require_binary(PG_BIN / "initdb", "PostgreSQL's initdb")
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            runuser = require_binary(shutil.which("runuser"), "runuser")
            self.prefix = [runuser, "-u", "postgres", "--"]
        # (not under pytest's tmp dirs: the postgres user cannot enter root's)
        self.folder = folder = Path(tempfile.mkdtemp(prefix="sm-test-pg-"))
        if self.prefix:
            shutil.chown(folder, "postgres", "postgres")
        self.data = folder / "data"
        subprocess.run(
            [*self.prefix, initdb, "-D", str(self.data), "-U", "postgres", "-A", "trust",
             "--no-sync"],
            check=True,
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        with (self.folder / "server.log").open("ab") as log:
            self.proc = self._popen(log)
        _wait_for_port(self.port, self.proc)
        import psycopg

        deadline = time.monotonic() + 20
        while True:  # the port opens before the server takes connections
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def _popen(self, log: IO[bytes]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [*self.prefix, self.postgres, "-D", str(self.data), "-p", str(self.port),
             "-k", str(self.folder), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=on"],
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd=self.folder,
            start_new_session=True,  # its own process group: freeze and kill it whole
        )  # fmt: skip

    def _processes(self) -> list[int]:
        """The postmaster (first) and its children: each child is a session of its own, so a
        process group does not hold them."""
        master = int((self.data / "postmaster.pid").read_text().split()[0])
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == master:
                children.append(int(stat.parent.name))
        return [master, *children]

    def _signal(self, sig: int) -> None:
        for pid in self._processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def kill(self) -> None:
        processes = self._processes()
        self._signal(signal.SIGKILL)
        assert self.proc is not None
        self.proc.kill()  # (runuser, when it runs the postmaster)
        self.proc.wait()
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in processes):
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        # what a killed postmaster leaves behind, which would stop a new one
        for left in (self.data / "postmaster.pid", *self.folder.glob(".s.PGSQL.*")):
            left.unlink(missing_ok=True)

    def freeze(self) -> None:
        self._signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self._signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.thaw()
            self.kill()
        shutil.rmtree(self.folder, ignore_errors=True)
