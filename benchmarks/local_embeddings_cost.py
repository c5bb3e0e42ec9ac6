"""What the local embedding model costs on this machine (``session_migrator.local_embeddings()``:
all-MiniLM-L6-v2 in numpy): loading the weights, a message by its length in tokens, a question,
and a whole conversation (the demo's) embedded cold. Each time is the best of ``--repeat`` runs
(a shared machine's other work only adds to a run), wall clock, on every core numpy's BLAS uses.

    python -m benchmarks.local_embeddings_cost [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

SHAPES = {
    "a chat line": "I bought a new automobile yesterday, a red one.",
    "a paragraph": (
        "We agreed to move the launch to March because the vendor needs two more weeks to "
        "finish the payment integration, and QA wants a full regression pass on the mobile "
        "apps before anything ships. "
    )
    * 2,
    "at the 256-token cap": (
        "The deployment log shows the container restarting after the health check failed on "
        "port 8080. "
    )
    * 20,
}
BATCH = 64


def _best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def run(repeat: int = 5) -> dict[str, Any]:
    from session_migrator import local_embeddings
    from session_migrator._demo import demo_messages
    from session_migrator.recall import _local
    from session_migrator.recall._hybrid import embedded_text

    started = time.perf_counter()
    local_embeddings()
    load = time.perf_counter() - started
    encoder = _local.encoder()
    tokens = encoder.tokenizer
    rows = []
    for label, text in SHAPES.items():
        texts = [f"{text} {i}" for i in range(BATCH)]
        encoder.embed(texts[:4])  # warm
        seconds = _best(lambda texts=texts: encoder.embed(texts), repeat)
        rows.append(
            {
                "message": label,
                "tokens": min(len(tokens.encode(texts[0]).ids), 256),
                "ms": round(seconds / BATCH * 1000, 1),
            }
        )
    question = _best(lambda: encoder.embed(["What colour is my car?"]), repeat * 4)
    demo = [embedded_text(m) for m in demo_messages()]
    demo_seconds = _best(lambda: encoder.embed(demo), max(1, repeat // 2))
    return {
        "cores": os.cpu_count(),
        "load_seconds": round(load, 2),
        "messages": rows,
        "question_ms": round(question * 1000, 1),
        "demo": {
            "messages": len(demo),
            "median_tokens": statistics.median(min(len(tokens.encode(t).ids), 256) for t in demo),
            "seconds": round(demo_seconds, 2),
            "ms_a_message": round(demo_seconds / len(demo) * 1000, 1),
        },
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"all-MiniLM-L6-v2 in numpy, {report['cores']} cores; weights loaded in "
        f"{report['load_seconds']} s (once a process)",
        "",
        "| message | tokens | ms |",
        "|---|---:|---:|",
        *(f"| {r['message']} | {r['tokens']} | {r['ms']} |" for r in report["messages"]),
        f"| a question | - | {report['question_ms']} |",
        "",
        f"The demo conversation, {report['demo']['messages']} messages (median "
        f"{report['demo']['median_tokens']} tokens): {report['demo']['seconds']} s, "
        f"{report['demo']['ms_a_message']} ms a message.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run(args.repeat)
    print(json.dumps(report, indent=2) if args.json else markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
