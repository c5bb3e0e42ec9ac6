"""Appending is O(1): the cost of one append at the 100th and at the 10,000th message.

One session is grown by single-message appends to 10,025 messages, each an OpenAI dict without
an id (``messages_from_openai``: a derived id, which the store replaces with a new one). The
cost at position N is the median of the 50 appends around N (N-24 .. N+25), taken over
``repeats`` fresh sessions; the claim holds when ``cost(10,000) <= 2 x cost(100)``.

Backends: ``memory`` and ``sqlite`` (a temporary file) always; ``redis`` and ``postgres`` too
when their servers answer (``SESSION_MIGRATOR_BENCH_REDIS_URL``, default
``redis://127.0.0.1:6379/0``; ``SESSION_MIGRATOR_BENCH_POSTGRES_URL``, default
``postgresql://postgres@127.0.0.1:5432/postgres``), not in quick mode. Server runs use a key
prefix / schema of their own and remove it after.

    python -m benchmarks.store_append [--quick] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from session_migrator import Message, messages_from_openai
from session_migrator.messages._messages import Role
from session_migrator.store import BaseSessionStore, open_store

POSITIONS = (100, 10_000)
WINDOW = 50
LIMIT = 2.0
REDIS_URL = os.environ.get("SESSION_MIGRATOR_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
POSTGRES_URL = os.environ.get(
    "SESSION_MIGRATOR_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def _message(i: int) -> Message:
    """The ``i``-th message as an OpenAI dict without an id gives it: its id is derived (the
    case whose appends read every id of the session before issue 25)."""
    role: Role = "user" if i % 2 == 0 else "assistant"
    text = f"message {i}: " + "lorem ipsum dolor sit amet " * 8
    return messages_from_openai([{"role": role, "content": text}])[0]


def _grow(store: BaseSessionStore, session_id: str) -> dict[int, float]:
    """Append one message at a time; the median cost (microseconds) around each position."""
    last = max(POSITIONS) + WINDOW // 2
    costs: list[float] = [0.0]  # costs[n] is the cost of appending the n-th message
    gc.collect()
    for i in range(1, last + 1):
        message = _message(i)
        started = time.perf_counter_ns()
        store.append(session_id, [message])
        costs.append((time.perf_counter_ns() - started) / 1000)
    return {
        n: statistics.median(costs[n - WINDOW // 2 + 1 : n + WINDOW // 2 + 1]) for n in POSITIONS
    }


@contextmanager
def _sqlite() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="sm-bench-") as folder:
        yield f"sqlite:///{Path(folder) / 'bench.db'}"


@contextmanager
def _memory() -> Iterator[str]:
    yield "memory://"


@contextmanager
def _redis() -> Iterator[str]:
    import redis

    prefix = f"sm-bench:{uuid.uuid4().hex}:"
    yield f"{REDIS_URL}?prefix={prefix}"
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


@contextmanager
def _postgres() -> Iterator[str]:
    import psycopg
    from psycopg import sql

    schema = f"sm_bench_{uuid.uuid4().hex}"
    yield f"{POSTGRES_URL}?schema={schema}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


BACKENDS: dict[str, Callable[[], Any]] = {
    "memory": _memory,
    "sqlite": _sqlite,
    "redis": _redis,
    "postgres": _postgres,
}


def _reachable(backend: str) -> bool:
    try:
        if backend == "redis":
            import redis

            redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
        elif backend == "postgres":
            import psycopg

            psycopg.connect(POSTGRES_URL, connect_timeout=1).close()
    except Exception:
        return False
    return True


def run(quick: bool = False, backends: Sequence[str] | None = None) -> dict[str, Any]:
    """Measure every backend; returns the figures and whether each held the O(1) claim."""
    if backends is None:
        backends = ["memory", "sqlite"] if quick else [b for b in BACKENDS if _reachable(b)]
    repeats = 1 if quick else 3
    results: dict[str, Any] = {}
    for backend in backends:
        per_run: list[dict[int, float]] = []
        started = time.perf_counter()
        runs = 1 if backend == "postgres" else repeats  # ~4 ms per durable commit
        for r in range(runs):
            with BACKENDS[backend]() as url, open_store(url) as store:
                per_run.append(_grow(store, f"bench-{r}"))
        at = {n: statistics.median(run_[n] for run_ in per_run) for n in POSITIONS}
        ratio = at[POSITIONS[1]] / at[POSITIONS[0]]
        results[backend] = {
            "us_at_100": round(at[100], 1),
            "us_at_10000": round(at[10_000], 1),
            "ratio": round(ratio, 2),
            "holds": ratio <= LIMIT,
            "runs": runs,
            "seconds": round(time.perf_counter() - started, 1),
        }
    return {
        "claim": f"append cost at 10,000 <= {LIMIT:g} x cost at 100",
        "window": WINDOW,
        "messages": max(POSITIONS) + WINDOW // 2,
        "backends": results,
        "holds": all(r["holds"] for r in results.values()),
    }


def markdown(result: dict[str, Any]) -> str:
    """The claim and the figures per backend, in Markdown."""
    lines = [
        f"Claim: {result['claim']} ({result['messages']:,} single-message appends, median of "
        f"the {result['window']} appends around each position).",
        "",
        "| backend | at 100 (µs) | at 10,000 (µs) | ratio | holds |",
        "|---|---:|---:|---:|---|",
    ]
    for name, r in result["backends"].items():
        lines.append(
            f"| {name} | {r['us_at_100']:,.1f} | {r['us_at_10000']:,.1f} | {r['ratio']:.2f} "
            f"| {'yes' if r['holds'] else 'no'} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="memory and sqlite, one run")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--backend", action="append", choices=list(BACKENDS), help="repeatable")
    args = parser.parse_args(argv)
    result = run(quick=args.quick, backends=args.backend)
    print(json.dumps(result, indent=2) if args.json else markdown(result))
    return 0 if result["holds"] else 1


if __name__ == "__main__":
    sys.exit(main())
