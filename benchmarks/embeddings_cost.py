"""What hybrid recall costs (tracker issue 33, point 5): a stored session of 20,000 messages
fitted with an embedding model whose vectors are in the store, beside the same fits without one.

The model is a stand-in that costs nothing (a 384-number vector drawn from a digest of the
text), so what is measured is the library's own work: reading the vectors back, ranking by them
and fusing; a real model adds its own time for what it embeds (nothing on a cold fit once the
vectors are stored; the question on a re-fit). Measured, on a SQLite file:

- the first fit, which embeds every message and stores the vectors;
- a cold fit: a new process opens the store and fits once (the encoding loaded first, as any
  fit needs it), with the vectors read from the store; and without embeddings;
- a warm re-fit with a new question, with and without embeddings (median of 15);
- the store's size before and after the vectors (bytes a message; the token counts and the
  migration log a fit stores are there before).

Floors: the cold fit with the vectors stored under 1 s; the warm re-fit within twice the one
without embeddings.

    python -m benchmarks.embeddings_cost [--messages 20000] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

DIMS = 384
MESSAGES = 20_000
_WORDS = "ledger account region audit figures quarter settled invoice payment vendor".split()


def embed(texts: list[str]) -> list[list[float]]:
    """The stand-in model: a unit-free vector drawn from a digest of each text."""
    out = []
    for text in texts:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "little")
        out.append(np.random.default_rng(seed).standard_normal(DIMS).astype("float32").tolist())
    return out


def _session(n: int) -> list[Any]:
    from session_migrator import Message

    out = []
    for i in range(n // 2):
        ask = " ".join(_WORDS[(i + k) % len(_WORDS)] for k in range(40))
        say = " ".join(_WORDS[(i * 3 + k) % len(_WORDS)] for k in range(60))
        out += [Message("user", f"Question {i}: {ask}"), Message("assistant", f"Answer {i}: {say}")]
    return out


def _fitter(url: str, with_model: bool) -> Any:
    from session_migrator import Embeddings, SessionFitter
    from session_migrator.store import open_store

    model = Embeddings(embed, name=f"digest-{DIMS}") if with_model else None
    return SessionFitter("big", store=open_store(url), strategy="auto", embeddings=model)


def _cold(url: str, with_model: bool) -> float:
    """One fit in a new process (its encoding loaded before the clock starts)."""
    code = (
        "import time, sys; from session_migrator import counter_for; "
        "counter_for('o200k_base').count_text('warm'); "
        "from benchmarks.embeddings_cost import _fitter; "
        f"f = _fitter({url!r}, {with_model!r}); t = time.perf_counter(); f.fit('gpt-4o-mini'); "
        "print(time.perf_counter() - t)"
    )
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return float(done.stdout.strip().splitlines()[-1])


def run(messages: int = MESSAGES) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.db"
        url = f"sqlite:///{path}"
        from session_migrator.store import open_store

        store = open_store(url)
        store.append("big", _session(messages))
        store.close()
        _fitter(url, False).fit("gpt-4o-mini")  # (its token counts and log stored first)
        bare = path.stat().st_size
        started = time.perf_counter()
        _fitter(url, True).fit("gpt-4o-mini")
        first = time.perf_counter() - started
        grown = path.stat().st_size
        cold = min(_cold(url, True) for _ in range(3))
        cold_bm25 = min(_cold(url, False) for _ in range(3))
        warm: dict[str, float] = {}
        for label, with_model in (("embeddings", True), ("bm25", False)):
            fitter = _fitter(url, with_model)
            fitter.fit("gpt-4o-mini")
            times = []
            for i in range(15):
                t = time.perf_counter()
                fitter.fit("gpt-4o-mini", query=f"what did the vendor say about invoice {i}?")
                times.append(time.perf_counter() - t)
            warm[label] = statistics.median(times)
    return {
        "messages": messages,
        "dims": DIMS,
        "first_fit_s": round(first, 3),
        "cold_fit_s": round(cold, 3),
        "cold_fit_bm25_s": round(cold_bm25, 3),
        "warm_refit_ms": round(warm["embeddings"] * 1000, 2),
        "warm_refit_bm25_ms": round(warm["bm25"] * 1000, 2),
        "store_bytes_per_message": round((grown - bare) / messages),
        "floors": [
            {"claim": "cold fit with stored vectors < 1 s", "holds": cold < 1.0},
            {
                "claim": "warm re-fit within 2x the one without embeddings",
                "holds": warm["embeddings"] <= 2 * warm["bm25"],
            },
        ],
    }


def markdown(result: dict[str, Any]) -> str:
    r = result
    lines = [
        f"A stored session of {r['messages']:,} messages, a stand-in model of {r['dims']} "
        "numbers (no model time), SQLite.",
        "",
        "| | with embeddings | bm25 alone |",
        "|---|---:|---:|",
        f"| cold fit, vectors stored (s) | {r['cold_fit_s']} | {r['cold_fit_bm25_s']} |",
        f"| warm re-fit, new question (ms) | {r['warm_refit_ms']} | {r['warm_refit_bm25_ms']} |",
        "",
        f"First fit (embeds and stores every message): {r['first_fit_s']} s. The store grows by "
        f"{r['store_bytes_per_message']:,} bytes a message ({r['dims']} x 4 bytes of vector, "
        "its keys and index).",
        "",
        *[f"- {f['claim']}: {'holds' if f['holds'] else 'FAILS'}" for f in r["floors"]],
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=MESSAGES)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.messages)
    print(json.dumps(result, indent=1) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
