"""The HTTP API under load (tracker issue 45): concurrent clients append a message and fit the
session to a model, each in its own session, for a bounded time, through a real uvicorn server
on loopback; the same work in-process (the routes' own calls, no HTTP) beside it. Reports
throughput, p50 and p99 of a fit, errors, and whether every message appended was stored.

    python -m benchmarks.http_load [--clients 8] [--seconds 10]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from benchmarks._served import Served
from session_migrator.mcp._tools import SessionTools
from session_migrator.server import Scope, Tokens, create_app

TOKEN = "bench-token-0123456789abcdef"
MODEL = "gpt-4"  # an 8k window: the sessions outgrow it and are cut


def _message(client: int, k: int) -> dict[str, Any]:
    role = "user" if k % 2 == 0 else "assistant"
    text = f"Client {client}, turn {k}: the shipment of crate {k} leaves dock {k % 9}. " * 6
    return {"role": role, "content": text, "id": f"c{client}-m{k}"}


def _drive(
    clients: int, seconds: float, step: Callable[[int, int], None]
) -> tuple[list[float], int, int]:
    """Run ``step(client, k)`` in ``clients`` threads for ``seconds``: the latencies, the
    steps made and the errors."""
    latencies: list[float] = []
    errors = [0]
    made = [0]
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def run(client: int) -> None:
        k = 0
        while time.monotonic() < end:
            started = time.perf_counter()
            try:
                step(client, k)
            except Exception:
                with lock:
                    errors[0] += 1
            else:
                with lock:
                    latencies.append(time.perf_counter() - started)
                    made[0] += 1
            k += 1

    threads = [threading.Thread(target=run, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, made[0], errors[0]


def _row(
    name: str, latencies: list[float], made: int, errors: int, seconds: float
) -> dict[str, Any]:
    ordered = sorted(latencies) or [float("nan")]
    return {
        "surface": name,
        "steps_per_second": made / seconds,
        "p50_ms": 1000 * statistics.median(ordered),
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
        "errors": errors,
    }


def run(clients: int = 8, seconds: float = 10.0) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    served = Served(create_app("memory://", tokens=Tokens({TOKEN: Scope()})))
    sent: dict[int, int] = {}
    try:
        local = threading.local()

        def over_http(client: int, k: int) -> None:
            http = getattr(local, "client", None)
            if http is None:
                http = local.client = httpx.Client(
                    base_url=served.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
                )
            answer = http.post(
                f"/v1/sessions/load-{client}/append", json={"messages": [_message(client, k)]}
            )
            answer.raise_for_status()
            sent[client] = k + 1
            http.post(
                f"/v1/sessions/load-{client}/build_outbound", json={"model": MODEL}
            ).raise_for_status()

        latencies, made, errors = _drive(clients, seconds, over_http)
        rows.append(_row("HTTP (uvicorn, httpx clients)", latencies, made, errors, seconds))
        store = served.server.config.app.state.api.tools.store
        stored = sum(
            (info.message_count if (info := store.get_session(f"load-{c}")) else 0)
            for c in range(clients)
        )
        lost = sum(sent.values()) - stored
    finally:
        served.stop()
    tools = SessionTools(store="memory://")

    def in_process(client: int, k: int) -> None:
        tools.session_append(f"load-{client}", [_message(client, k)])
        tools.session_context(f"load-{client}", MODEL)

    latencies, made, errors = _drive(clients, seconds, in_process)
    rows.append(_row("in-process (the same calls)", latencies, made, errors, seconds))
    return {"clients": clients, "seconds": seconds, "rows": rows, "lost": lost}


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"{report['clients']} clients for {report['seconds']:g} s, each appending a message and "
        f"fitting its session to {MODEL} in turn; messages lost: {report['lost']}.",
        "",
        "| surface | append + fit / s | p50 | p99 | errors |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['surface']} | {r['steps_per_second']:.0f} | {r['p50_ms']:.1f} ms "
            f"| {r['p99_ms']:.1f} ms | {r['errors']} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    print(markdown(run(args.clients, args.seconds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
