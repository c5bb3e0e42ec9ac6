"""Recall across sessions at scale (issue 43): one user with 1,000 sessions of 100 messages, a
question asked in a NEW session of that user (``python -m benchmarks.cross_session_scale
[--quick] [--sessions N] [--messages M] [--backend sqlite] [--json]``).

The history: ``sessions`` stored sessions of the user ``scale-user`` (one a day, appended
oldest first, so the store's newest is the last), each ``messages`` generated messages
(alternating user and assistant, 20 to 60 filler words each). A few facts are planted as a
user message in sessions of different ages (the newest, 2.5 % back, 10 % back, half way, the
oldest); each fact's question is asked in a NEW session of the user, fitted by
``SessionFitter(..., recall_scope="user")`` (``strategy="auto"``) to a window of
:data:`BUDGET` o200k tokens with nothing reserved.

Figures, per backend:

- **cold**: a new fitter on a new session holding only the question; the time of its first
  ``fit`` (the other sessions read from the store);
- **warm**: the same fitter, next turn (an assistant reply and the next question appended),
  the time of that ``fit`` (the other sessions unchanged, so the earlier read is reused);
- p50 and p95 of each over ``rounds`` x the planted questions (each new session deleted
  after, so every round sees the same store);
- whether each planted fact's text reaches the model, cold and warm, with its session's age
  (how many sessions are newer);
- the store's growth: bytes on disk for SQLite (the database, its WAL and shared-memory
  files), ``pg_total_relation_size`` of every table of the store's schema for PostgreSQL,
  ``MEMORY USAGE`` of every key of the store's prefix for Redis; before and after the writes.

Floor (issue 43): at 1,000 sessions the warm fit stays under :data:`WARM_FLOOR_MS` ms (p95).

Backends: ``sqlite`` (a temporary file) always; ``postgres`` and ``redis`` when their servers
answer (``SESSION_MIGRATOR_BENCH_POSTGRES_URL``, default
``postgresql://postgres@127.0.0.1:5432/test``; ``SESSION_MIGRATOR_BENCH_REDIS_URL``, default
``redis://127.0.0.1:6379/0``), in a schema / key prefix of their own, removed after;
``memory`` on request. ``--quick``: :data:`QUICK_SESSIONS` sessions, one round, SQLite only
(what ``tests/bench/test_cross_session_scale.py`` runs, asserting the evidence, not the time).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from session_migrator import Message, ModelWindow, SessionFitter
from session_migrator.store import BaseSessionStore, open_store

USER = "scale-user"
SESSIONS = 1_000
MESSAGES = 100
QUICK_SESSIONS = 50
BUDGET = 8_192
ROUNDS = 4
WARM_FLOOR_MS = 100.0
POSTGRES_URL = os.environ.get(
    "SESSION_MIGRATOR_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("SESSION_MIGRATOR_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
START = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Fact:
    """A planted fact: the user's message saying it, the question asking it, and where it is
    (the share of the way from the oldest session, 0.0, to the newest, 1.0)."""

    text: str
    question: str
    at: float


FACTS = (
    Fact("The code for my gym locker is 4471, please remember it.",
         "What is the code for my gym locker?", 1.0),
    Fact("My sister Priya moved to Lisbon last spring.",
         "Which city did my sister Priya move to?", 0.975),
    Fact("I parked the blue Volvo on level three of the airport garage.",
         "Where did I park the blue Volvo?", 0.9),
    Fact("My dentist appointment with Dr. Okafor is on the 14th at nine.",
         "When is my dentist appointment with Dr. Okafor?", 0.5),
    Fact("The wifi password at the cabin is maple-otter-22.",
         "What is the wifi password at the cabin?", 0.0),
)  # fmt: skip

# Filler: everyday words that none of the questions asks about.
_WORDS = (
    "the a we it they this that then and but so of to in on with for about really think "
    "maybe again later soon today morning evening weekend plan plans project report meeting "
    "email draft notes idea ideas team work shop walk coffee tea lunch book film music song "
    "garden weather rain sun cloud train bus bike kitchen recipe bread soup salad cake game "
    "chess puzzle story photo picture camera phone laptop screen window door chair table lamp "
    "river hill forest beach city village market street corner friend neighbor colleague "
    "teacher student class lesson exam homework practice run swim yoga stretch sleep dream "
    "read write call send share check fix build paint clean cook bake try finish start "
    "nice good great fine busy quiet early late long short new old small big warm cold"
).split()


def _filler(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(20, 60))]
    return " ".join(words).capitalize() + "."


def planted_sessions(sessions: int) -> dict[int, Fact]:
    """The session index (0 the oldest) each fact is planted in."""
    return {round((sessions - 1) * f.at): f for f in FACTS}


def _session_messages(
    i: int, messages: int, fact: Fact | None, rng: random.Random
) -> list[Message]:
    day = START + timedelta(days=i)
    out = []
    plant_at = (messages // 2) & ~1  # a user message half way through
    for k in range(messages):
        role = "user" if k % 2 == 0 else "assistant"
        text = fact.text if fact is not None and k == plant_at else _filler(rng)
        out.append(Message(role, text, id=f"s{i}-m{k}", timestamp=day + timedelta(minutes=k)))
    return out


def populate(store: BaseSessionStore, sessions: int, messages: int, seed: int = 43) -> float:
    """Write the user's history; the seconds it took."""
    rng = random.Random(seed)
    planted = planted_sessions(sessions)
    started = time.perf_counter()
    for i in range(sessions):
        store.append(
            f"day-{i:04d}",
            _session_messages(i, messages, planted.get(i), rng),
            metadata={"user_id": USER, "title": f"day {i}"},
        )
    return time.perf_counter() - started


def _window() -> ModelWindow:
    return ModelWindow("bench", "bench", BUDGET, BUDGET, 0, "o200k_base", "explicit")


def _reached(sent: list[Message], fact: Fact, question_ids: set[str]) -> bool:
    return any(fact.text in m.text for m in sent if m.id not in question_ids)


def _ms(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "n": 0}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 2), "p95": round(p95, 2), "n": len(ordered)}


def measure(store: BaseSessionStore, sessions: int, rounds: int) -> dict[str, Any]:
    """Cold and warm fits of new sessions asking the planted questions."""
    planted = planted_sessions(sessions)
    cold: list[float] = []
    warm: list[float] = []
    reached: dict[str, dict[str, list[bool]]] = {
        f.question: {"cold": [], "warm": []} for f in FACTS
    }
    asked_at = START + timedelta(days=sessions + 1)
    facts = list(planted.values())
    for r in range(rounds):
        for j, fact in enumerate(facts):
            session = f"new-{r}-{j}-{uuid.uuid4().hex[:6]}"
            fitter = SessionFitter(
                session, store=store, recall_scope="user", metadata={"user_id": USER},
                reserve_output=0,
            )  # fmt: skip
            ids = {f"{session}-q0"}
            fitter.append([Message("user", fact.question, id=f"{session}-q0", timestamp=asked_at)])
            started = time.perf_counter()
            sent = fitter.fit(_window()).messages
            cold.append((time.perf_counter() - started) * 1000)
            reached[fact.question]["cold"].append(_reached(sent, fact, ids))
            # the next turn, same fitter: the next fact's question
            nxt = facts[(j + 1) % len(facts)]
            ids.add(f"{session}-q1")
            fitter.append(
                [
                    Message("assistant", "Let me look that up.", id=f"{session}-a0",
                            timestamp=asked_at),
                    Message("user", nxt.question, id=f"{session}-q1", timestamp=asked_at),
                ]
            )  # fmt: skip
            started = time.perf_counter()
            sent = fitter.fit(_window()).messages
            warm.append((time.perf_counter() - started) * 1000)
            reached[nxt.question]["warm"].append(_reached(sent, nxt, ids))
            store.delete_session(session)
    index = {f.question: i for i, f in planted.items()}
    return {
        "cold_ms": _ms(cold),
        "warm_ms": _ms(warm),
        "facts": [
            {
                "question": f.question,
                "session": index[f.question],
                "newer_sessions": sessions - 1 - index[f.question],
                "cold": all(reached[f.question]["cold"]),
                "warm": all(reached[f.question]["warm"]),
            }
            for f in facts
        ],
    }


# -- backends -------------------------------------------------------------------------------


@dataclass
class _Backend:
    url: str
    size: Callable[[], int | None]


@contextmanager
def _sqlite() -> Iterator[_Backend]:
    with tempfile.TemporaryDirectory(prefix="sm-scale-") as folder:
        path = Path(folder) / "scale.db"

        def size() -> int:
            return sum(p.stat().st_size for p in Path(folder).glob("scale.db*"))

        yield _Backend(f"sqlite:///{path}", size)


@contextmanager
def _memory() -> Iterator[_Backend]:
    yield _Backend("memory://", lambda: None)


@contextmanager
def _postgres() -> Iterator[_Backend]:
    import psycopg
    from psycopg import sql

    schema = f"sm_scale_{uuid.uuid4().hex[:12]}"

    def size() -> int:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'm')",
                (schema,),
            ).fetchone()
        return int(row[0]) if row else 0

    try:
        yield _Backend(f"{POSTGRES_URL}?schema={schema}", size)
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@contextmanager
def _redis() -> Iterator[_Backend]:
    import redis

    prefix = f"sm-scale:{uuid.uuid4().hex[:12]}:"
    client = redis.Redis.from_url(REDIS_URL)

    def size() -> int:
        return sum(
            int(client.memory_usage(k) or 0)
            for k in client.scan_iter(match=f"{prefix}*", count=1000)
        )

    try:
        yield _Backend(f"{REDIS_URL}?prefix={prefix}", size)
    finally:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start : start + 1000])
        client.close()


BACKENDS: dict[str, Callable[[], Any]] = {
    "sqlite": _sqlite,
    "postgres": _postgres,
    "redis": _redis,
    "memory": _memory,
}


def reachable(backend: str) -> bool:
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


def run(
    *,
    quick: bool = False,
    sessions: int | None = None,
    messages: int = MESSAGES,
    rounds: int | None = None,
    backends: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every backend's figures (see the module docstring)."""
    sessions = sessions or (QUICK_SESSIONS if quick else SESSIONS)
    rounds = rounds or (1 if quick else ROUNDS)
    if backends is None:
        backends = (
            ["sqlite"] if quick else [b for b in ("sqlite", "postgres", "redis") if reachable(b)]
        )
    results: dict[str, Any] = {}
    for name in backends:
        with BACKENDS[name]() as backend, open_store(backend.url) as store:
            empty = backend.size()
            written = populate(store, sessions, messages)
            after = backend.size()
            if progress:
                progress(f"{name}: {sessions:,} sessions written in {written:.1f} s")
            figures = measure(store, sessions, rounds)
            figures["write_seconds"] = round(written, 1)
            figures["bytes_empty"] = empty
            figures["bytes_after"] = after
            figures["bytes_per_message"] = (
                round((after - empty) / (sessions * messages))
                if after is not None and empty is not None
                else None
            )
            warm = figures["warm_ms"]["p95"]
            figures["warm_floor_holds"] = warm is not None and warm < WARM_FLOOR_MS
            results[name] = figures
            if progress:
                progress(f"{name}: cold {figures['cold_ms']}, warm {figures['warm_ms']}")
    return {
        "sessions": sessions,
        "messages_per_session": messages,
        "budget": BUDGET,
        "rounds": rounds,
        "warm_floor_ms": WARM_FLOOR_MS,
        "backends": results,
    }


def _size(n: int | None) -> str:
    return "-" if n is None else f"{n / 1_048_576:,.1f} MiB"


def markdown(result: dict[str, Any]) -> str:
    """The figures as Markdown tables."""
    lines = [
        f"One user, {result['sessions']:,} sessions of {result['messages_per_session']} "
        f"messages; a new session asks a planted fact's question "
        f'(`SessionFitter(..., recall_scope="user")`, {result["budget"]:,} o200k tokens); '
        f"{result['rounds']} round(s) of {len(FACTS)} questions. Floor: warm fit under "
        f"{result['warm_floor_ms']:g} ms (p95).",
        "",
        "| backend | cold p50 (ms) | cold p95 (ms) | warm p50 (ms) | warm p95 (ms) | floor | "
        "write (s) | store before | store after | bytes / message |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for name, r in result["backends"].items():
        c, w = r["cold_ms"], r["warm_ms"]
        lines.append(
            f"| {name} | {c['p50']:,.1f} | {c['p95']:,.1f} | {w['p50']:,.1f} | {w['p95']:,.1f} | "
            f"{'holds' if r['warm_floor_holds'] else 'FAILS'} | {r['write_seconds']} | "
            f"{_size(r['bytes_empty'])} | {_size(r['bytes_after'])} | "
            f"{r['bytes_per_message'] if r['bytes_per_message'] is not None else '-'} |"
        )
    names = list(result["backends"])
    lines += [
        "",
        "Planted evidence reaching the model (cold / warm):",
        "",
        "| question | its session (0 = oldest) | newer sessions | " + " | ".join(names) + " |",
        "|---|---:|---:|" + "---|" * len(names),
    ]
    first = result["backends"][names[0]]["facts"] if names else []
    for k, f in enumerate(first):
        cells = []
        for name in names:
            g = result["backends"][name]["facts"][k]
            cells.append(f"{'yes' if g['cold'] else 'no'} / {'yes' if g['warm'] else 'no'}")
        lines.append(
            f"| {f['question']} | {f['session']} | {f['newer_sessions']} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cross_session_scale")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SESSIONS} sessions, SQLite")
    parser.add_argument("--sessions", type=int, default=None)
    parser.add_argument("--messages", type=int, default=MESSAGES)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--backend", action="append", choices=list(BACKENDS), help="repeatable")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    result = run(
        quick=args.quick,
        sessions=args.sessions,
        messages=args.messages,
        rounds=args.rounds,
        backends=args.backend,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
    print(json.dumps(result, indent=1) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
