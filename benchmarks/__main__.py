"""``make bench``: every benchmark in one run, the tables printed and written for the README.

- speed, memory and what each kept, this project against the frameworks' built-ins, and the
  floors of tracker issue 7 checked on the same run (:mod:`benchmarks.speed`);
- fact retention per strategy and budget, next to the built-ins (:mod:`benchmarks.fact_retention`);
- evidence retention on conversations people wrote (LoCoMo, every 4th question), per strategy,
  plain and dated, beside trim and retrieval-only yardsticks (BM25, BM25 + neighbours, dense,
  hybrid) (:mod:`benchmarks.locomo`; also written to ``results/retention_locomo.md``);
- evidence retention on stitched SGD dialogues with templated questions (saturated: every method
  that matches words scores about 0.99), beside trim and a plain BM25
  (:mod:`benchmarks.retention`), and an agent session of tool outputs
  (:mod:`benchmarks.agent_session`);
- the cost of one append at the 100th and the 10,000th message (:mod:`benchmarks.store_append`);
- what hybrid recall costs on a stored 20,000-message session (:mod:`benchmarks.embeddings_cost`);
- the cost of one LlamaIndex LLM call with 1, 100 and 1,000 live memories
  (:mod:`benchmarks.listener_cost`);
- what a long conversation costs turn by turn (prefix-cache reuse, uncached tokens, $ per 100
  turns, waits, summaries, retention), this project's surfaces beside SummarizationMiddleware,
  trim_messages and LlamaIndex Memory (:mod:`benchmarks.conversation_cost`);
- recall across sessions at scale: one user with 1,000 sessions of 100 messages, the fit of a
  new session with ``recall_scope="user"`` (p50 / p95, cold and warm), whether planted facts
  reach the model, and the store's growth (:mod:`benchmarks.cross_session_scale`);
- the HTTP API under load: concurrent clients appending and fitting through uvicorn, beside the
  same calls in-process (:mod:`benchmarks.http_load`).

A full run with the defaults writes ``benchmarks/results/results.md`` and ``results.json`` (with
the machine, the versions and the date); any other run (``--quick``: 100 and 1,000 messages,
fewer repetitions; ``--sizes``, ``--only``, ``--cap``, ``--no-memory``, ``--skip``) only prints,
unless ``--out`` is given.

    python -m benchmarks [--quick] [--sizes 100,1000] [--cap 45] [--out DIR] [--strict]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import (
    agent_progress,
    agent_session,
    conversation_cost,
    cross_session_scale,
    embeddings_cost,
    fact_retention,
    http_load,
    listener_cost,
    locomo,
    retention,
    speed,
    store_append,
)

RESULTS = Path(__file__).resolve().parent / "results"
COMMAND = "make bench"
# every Nth LoCoMo question in make bench (a few minutes on 2 cores); --quick: every 20th
LOCOMO_EVERY = 4
PACKAGES = ("session-migrator", "tiktoken", "langchain-core", "llama-index-core")


def _machine() -> dict[str, Any]:
    versions: dict[str, str] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "processor": platform.machine(),
        "versions": versions,
        "commit": _commit(),
    }


def _commit() -> str | None:
    """The checked-out commit (with ``+changes`` when the tree differs from it), if any."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root, capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root, capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+changes" if dirty else "")


def _unmet_floors(items: list[dict[str, Any]]) -> list[str]:
    """One line per floor that failed or could not be measured (the table has them all)."""
    lines = []
    for f in items:
        if f["holds"] is True:
            continue
        status = "FAIL" if f["holds"] is False else "NOT MEASURED"
        shown = "-" if f["value"] is None else f"{f['value']:.4g}"
        bound = (">=" if f["at_least"] else "<=") + f" {f['limit']:g}"
        lines.append(
            f"{status:<12} {f['floor']} [{f['row']}, {f['size']:,} messages]: {shown} ({bound})"
        )
    return lines


def markdown(report: dict[str, Any]) -> str:
    """The whole report as the Markdown the README quotes."""
    m = report["machine"]
    v = m["versions"]
    parts = [
        "# Benchmark results",
        "",
        f"Made with `{report['command']}` on {m['date'][:10]}: {m['cpus']} CPUs "
        f"({m['processor']}), Python {m['python']}, {m['platform']}; session-migrator "
        f"{v['session-migrator']} (commit {m['commit'] or 'unknown'}), tiktoken "
        f"{v['tiktoken']}, langchain-core {v['langchain-core']}, llama-index-core "
        f"{v['llama-index-core']}. The whole run took {report['seconds'] / 60:.1f} minutes.",
    ]
    if "speed" in report:
        parts += [
            "",
            "## Speed, memory and what each kept",
            "",
            "The same synthetic agent conversation for everyone (mixed lengths of 20 to 2,000 "
            "tokens, tool calls and results among them) and the same budget: a quarter of the "
            "session's o200k tokens, exact, nothing reserved for output. One tokenizer "
            "(tiktoken o200k_base) for all. This project's adapters use an in-memory store "
            "(`memory://`) and their default strategy `auto`; `trim` is shown too.",
            "",
            speed.markdown(report["speed"]),
            "",
            "## Floors (tracker issue 7), measured in the same run",
            "",
            speed.floors_markdown(report["floors"]),
        ]
    if "fact_retention" in report:
        fr = report["fact_retention"]
        parts += [
            "",
            "## Fact retention",
            "",
            f"Share of {fr['questions']} planted facts still present in what the model is sent, "
            "per budget (a share of the conversation's tokens); the built-ins on the same "
            "inputs. See `benchmarks/fact_retention.py`.",
            "",
            fact_retention.markdown(fr),
        ]
    if "locomo" in report:
        lo = report["locomo"]
        parts += [
            "",
            "## Evidence retention on conversations people wrote (LoCoMo)",
            "",
            f"{locomo.summary_line(lo)}. The question is the newest user message after the "
            "whole conversation; budgets are exactly B o200k tokens, nothing reserved; *dated* "
            "rows send each session's date in `Message.timestamp`. See `benchmarks/locomo.py` "
            "and `results/retention_locomo.md`.",
            "",
            locomo.markdown(lo),
        ]
    elif "locomo_skipped" in report:
        parts += ["", "## Evidence retention on LoCoMo", "", f"Not run: {report['locomo_skipped']}"]
    if "evidence_retention" in report:
        er = report["evidence_retention"]
        parts += [
            "",
            "## Evidence retention on stitched SGD dialogues (templated questions, saturated)",
            "",
            f"Share of the turns holding each question's evidence that survive verbatim in what "
            f"the model is sent: {er['questions']} questions over {er['histories']} stitched "
            f"histories of about {er['history_tokens']:,} tokens, per budget (tokens, or a share "
            "of the history), beside trim and a plain whole-message BM25. See "
            "`benchmarks/retention.py`.",
            "",
            retention.markdown(er),
        ]
    if "agent_session" in report:
        parts += [
            "",
            "## An agent session whose tokens are mostly tool outputs",
            "",
            "The demo's coding session fitted to shares of its tokens: the budget used and the "
            "user turns kept verbatim. See `benchmarks/agent_session.py`.",
            "",
            agent_session.markdown(report["agent_session"]),
        ]
    if "agent_progress" in report:
        parts += [
            "",
            "## An agent's turn makes progress under the guard (issue 32)",
            "",
            agent_progress.markdown(report["agent_progress"]),
        ]
    if "agent_task_length" in report:
        parts += [
            "",
            "## An agent that compresses its own finished work fits longer tasks (issue 44)",
            "",
            agent_progress.task_markdown(report["agent_task_length"]),
        ]
    if "store_append" in report:
        parts += [
            "",
            "## Store appends are O(1)",
            "",
            store_append.markdown(report["store_append"]),
        ]
    if "embeddings_cost" in report:
        parts += [
            "",
            "## What hybrid recall costs on a stored session",
            "",
            embeddings_cost.markdown(report["embeddings_cost"]),
        ]
    if "listener_cost" in report:
        parts += [
            "",
            "## One LLM call costs the same with 1 or 1,000 live LlamaIndex memories",
            "",
            listener_cost.markdown(report["listener_cost"]),
        ]
    if "conversation_cost" in report:
        parts += [
            "",
            "## What a long conversation costs, turn by turn (issue 40)",
            "",
            "LoCoMo dev replayed turn by turn; over the requests past 1.5x the budget. See "
            "`benchmarks/conversation_cost.py` for each column.",
            "",
            conversation_cost.markdown(report["conversation_cost"]),
        ]
    if "cross_session_scale" in report:
        parts += [
            "",
            "## Recall across sessions at scale (issue 43)",
            "",
            cross_session_scale.markdown(report["cross_session_scale"]),
        ]
    if "http_load" in report:
        parts += [
            "",
            "## The HTTP API under load (issue 45)",
            "",
            http_load.markdown(report["http_load"]),
        ]
    return "\n".join(parts) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 messages, fewer runs")
    parser.add_argument("--sizes", help="comma-separated conversation sizes (speed)")
    parser.add_argument("--cap", type=float, help="seconds a built-in's cell may take")
    parser.add_argument("--only", help="comma-separated speed cell keys")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory runs")
    parser.add_argument("--skip", action="append", default=[],
                        choices=["speed", "retention", "locomo", "store", "listeners",
                                 "embeddings", "cost", "http", "scale"],
                        help="repeatable")  # fmt: skip
    parser.add_argument("--out", type=Path, help="folder for results.md and results.json")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a floor fails")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    report: dict[str, Any] = {
        "command": COMMAND + (" BENCH_ARGS=--quick" if args.quick else ""),
        "machine": _machine(),
    }
    if "speed" not in args.skip:
        print("speed, memory and what each kept:", file=sys.stderr, flush=True)
        report["speed"] = speed.run(
            quick=args.quick,
            sizes=[int(s) for s in args.sizes.split(",")] if args.sizes else None,
            cap=args.cap,
            only=args.only.split(",") if args.only else None,
            memory=not args.no_memory,
        )
        report["floors"] = speed.floors(report["speed"])
    if "retention" not in args.skip:
        print("fact retention ...", file=sys.stderr, flush=True)
        report["fact_retention"] = fact_retention.run(quick=args.quick)
    if "locomo" not in args.skip:
        every = 20 if args.quick else LOCOMO_EVERY
        print(f"evidence retention (LoCoMo, every {every}th question) ...", file=sys.stderr,
              flush=True)  # fmt: skip
        try:
            report["locomo"] = locomo.run(
                every=every, progress=lambda line: print(line, file=sys.stderr, flush=True)
            )
        except FileNotFoundError as exc:
            report["locomo_skipped"] = str(exc)
    if "retention" not in args.skip:
        print("evidence retention (SGD) ...", file=sys.stderr, flush=True)
        report["evidence_retention"] = retention.run(quick=args.quick)
        print("agent session (tool outputs) ...", file=sys.stderr, flush=True)
        report["agent_session"] = agent_session.run()
        print("agent progress (tool rounds of the current turn) ...", file=sys.stderr, flush=True)
        report["agent_progress"] = agent_progress.run()
        print("agent task length (compressing its own work) ...", file=sys.stderr, flush=True)
        report["agent_task_length"] = agent_progress.task_length()
    if "store" not in args.skip:
        print("store appends ...", file=sys.stderr, flush=True)
        report["store_append"] = store_append.run(quick=args.quick)  # (every server that answers)
    if "embeddings" not in args.skip:
        print("hybrid recall's cost ...", file=sys.stderr, flush=True)
        report["embeddings_cost"] = embeddings_cost.run(5_000 if args.quick else 20_000)
    if "listeners" not in args.skip:
        print("LLM calls with many live memories ...", file=sys.stderr, flush=True)
        report["listener_cost"] = listener_cost.run(quick=args.quick)
    if "cost" not in args.skip:
        print("what a long conversation costs, turn by turn ...", file=sys.stderr, flush=True)
        try:
            report["conversation_cost"] = conversation_cost.run(
                (8192,) if args.quick else (8192, 32768)
            )
        except FileNotFoundError as exc:
            report["cost_skipped"] = str(exc)
    if "scale" not in args.skip:
        print("recall across sessions at scale ...", file=sys.stderr, flush=True)
        report["cross_session_scale"] = cross_session_scale.run(quick=args.quick)
    if "http" not in args.skip:
        print("the HTTP API under load ...", file=sys.stderr, flush=True)
        report["http_load"] = http_load.run(seconds=3.0 if args.quick else 10.0)
    report["seconds"] = round(time.perf_counter() - started, 1)

    text = markdown(report)
    print(text)
    unmet = _unmet_floors(report.get("floors", []))
    if unmet:
        print("\n".join(unmet))
    # only a full run with the defaults (make bench) replaces the results the README quotes
    default = not (
        args.quick or args.sizes or args.only or args.cap is not None or args.no_memory or args.skip
    )
    out = args.out or (RESULTS if default else None)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.md").write_text(text, encoding="utf-8")
        (out / "results.json").write_text(
            json.dumps(report, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8"
        )
        print(f"wrote {out / 'results.md'} and {out / 'results.json'}", file=sys.stderr)
        if "locomo" in report:
            every = report["locomo"]["every"]
            same = f"python -m benchmarks.retention --locomo --every {every}"
            command = f"{report['command']} ({same})"
            (out / "retention_locomo.md").write_text(
                locomo.report(report["locomo"], command), encoding="utf-8"
            )
            print(f"wrote {out / 'retention_locomo.md'}", file=sys.stderr)
    failed = [f for f in report.get("floors", []) if f["holds"] is False]
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
