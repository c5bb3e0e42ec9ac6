"""One compaction per session at a time, across processes: two OS processes, each with a
fitter and a compactor on one session of one store (SQLite file, PostgreSQL), reach its cut
together; the slow summarizer is called once for the cut part, not once a process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from session_migrator import Message
from session_migrator.store import open_store

SCRIPT = Path(__file__).with_name("_compacting.py")
SESSION = "shared-chat"


def _past_budget(url: str) -> None:
    with open_store(url) as store:
        batch = [Message("system", "You answer questions about orders.", id="sys")]
        for n in range(120):
            batch.append(
                Message("user", f"When does order {n} ship from the north warehouse?", id=f"u{n}")
            )
            batch.append(Message("assistant", f"Order {n} ships on day {n % 7}.", id=f"a{n}"))
        store.append(SESSION, batch)


def _two_processes_compact(url: str, calls: Path) -> list[dict[str, Any]]:
    _past_budget(url)
    procs = [
        subprocess.Popen(
            [sys.executable, str(SCRIPT), url, SESSION, str(calls)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        for proc in procs:  # both fit at once
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = [proc.communicate(timeout=60) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    reports = []
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def _check(reports: list[dict[str, Any]], calls: Path) -> None:
    assert all(r["done"] for r in reports)
    # the summarizer ran once for the cut part, in one of the two processes
    assert len(calls.read_text().splitlines()) == 1
    states = sorted(r["state"] for r in reports)
    assert states == ["ready", "waiting: another process is compacting"], reports
    assert sorted(r["written"] for r in reports) == [0, 1]
    assert sorted(r["waiting"] for r in reports) == [0, 1]


def test_two_processes_compact_a_sqlite_session_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    calls = tmp_path / "calls.txt"
    _check(_two_processes_compact(url, calls), calls)


@pytest.mark.postgres
def test_two_processes_compact_a_postgres_session_once(postgres_url: str, tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    _check(_two_processes_compact(postgres_url, calls), calls)
