"""Does an agent's turn make progress under the guard? (tracker issue 32)

Agents whose model re-issues any lookup whose result it cannot see (:mod:`benchmarks._agent_brain`:
each user turn of about 300 tokens needs 3 rounds of 2 lookups of about 700 tokens each; 8 turns
on one thread or memory) run on every surface the docs show, guarded: LangChain ``create_agent``
with ``FitToModelMiddleware`` (an ``InMemorySaver`` thread), a LangGraph ``ToolNode`` loop on
``FitToModel``; LlamaIndex FunctionAgent, ReActAgent, CodeActAgent and an AgentWorkflow with a
handoff on ``FitToModelLLM`` with this library's memories (and LlamaIndex's own). Windows go
from 4,096 tokens (512 reserved for output) down to where the current turn alone no longer fits;
the same agents without the guard on a 128k window give the calls a turn takes.

Reported per surface and window: the model calls per turn, the turns that never finish (the
recursion limit, ``max_iterations``), the turns refused with a ``BudgetError`` (a clear error, not
a loop), the tokens sent per turn (o200k), and the largest request.

``--task-length`` runs the task-length sweep instead: ``create_agent`` at one small window
(2,048 tokens unless ``--windows`` says), its questions needing more and more rounds of lookups,
the plain agent beside one that compresses its own finished work
(``FitToModelMiddleware(placeholder_tools=True)``: its earlier questions' outputs at a turn's
start, and its turn's finished rounds, with what they found, every
``STEPS_BEFORE_COMPRESSING`` rounds).

    python -m benchmarks.agent_progress [--windows 4096,2048] [--only create_agent] [--json]
    python -m benchmarks.agent_progress --task-length [--windows 2048] [--rounds 3,6,8,12]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks._agent_brain import TURNS, Tally
from session_migrator import register_model

WINDOWS = (4096, 3072, 2048, 1536, 1280, 1024, 768)
#: The task-length sweep: its window, the rounds of lookups a question needs, the questions.
TASK_WINDOW = 2048
TASK_ROUNDS = (3, 4, 6, 8, 12, 16)
TASK_TURNS = 2
LARGE = 128_000
OUTPUT = 512


def _model(window: int) -> str:
    name = f"agent-bench-{window}"
    register_model(name, context_window=window, max_output_tokens=OUTPUT, tokenizer="o200k_base")
    return name


def surfaces() -> dict[str, Callable[[str, int, bool], Tally]]:
    from benchmarks._agent_lc import create_agent_run, tool_node_run
    from benchmarks._agent_li import SURFACES

    return {
        "LangChain create_agent + FitToModelMiddleware": lambda n, w, g: create_agent_run(n, g),
        "LangChain create_agent, results in content blocks (MCP tools)": lambda n, w, g: (
            create_agent_run(n, g, blocks=True)
        ),
        "LangChain create_agent + FitToModelMiddleware, compressing its own old work": (
            lambda n, w, g: create_agent_run(n, g, compresses=True)
        ),
        "LangGraph ToolNode loop + FitToModel": lambda n, w, g: tool_node_run(n, g),
        **SURFACES,
    }


def _cell(tally: Tally, seconds: float) -> dict[str, Any]:
    return {
        "calls_per_turn": round(sum(tally.calls_per_turn) / TURNS, 2),
        "failed": len(tally.failed),
        "errors": len(tally.errors),
        "tokens_per_turn": round(sum(tally.sent) / TURNS),
        "largest_request": max(tally.sent, default=0),
        "first_failure": (tally.failed or tally.errors or [None])[0],
        "seconds": round(seconds, 2),
    }


def run(windows: Sequence[int] = WINDOWS, only: str | None = None) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for label, surface in surfaces().items():
        if only and only.lower() not in label.lower():
            continue
        print(f"  {label} ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        cells = {"unguarded": _cell(surface(_model(LARGE), LARGE, False), 0.0)}
        cells["unguarded"]["seconds"] = round(time.perf_counter() - started, 2)
        for window in windows:
            started = time.perf_counter()
            tally = surface(_model(window), window, True)
            cells[str(window)] = _cell(tally, time.perf_counter() - started)
        rows[label] = cells
    return {"windows": list(windows), "output_reserve": OUTPUT, "turns": TURNS, "rows": rows}


def task_length(
    window: int = TASK_WINDOW, rounds: Sequence[int] = TASK_ROUNDS, turns: int = TASK_TURNS
) -> dict[str, Any]:
    """The task-length sweep (see the module docstring): per agent and rounds, the turns
    finished, refused and never finished, model calls and tokens sent per turn."""
    from benchmarks._agent_lc import create_agent_run

    rows: dict[str, Any] = {}
    for label, compresses in (("plain", False), ("compressing its own work", True)):
        cells = {}
        for n in rounds:
            print(f"  {label}, {n} rounds ...", file=sys.stderr, flush=True)
            tally = create_agent_run(
                _model(window), True, compresses=compresses, rounds=n, turns=turns
            )
            cells[str(n)] = {
                "finished": turns - len(tally.failed) - len(tally.errors),
                "refused": len(tally.errors),
                "failed": len(tally.failed),
                "calls_per_turn": round(sum(tally.calls_per_turn) / turns, 2),
                "tokens_per_turn": round(sum(tally.sent) / turns),
                "largest_request": max(tally.sent, default=0),
                "first_failure": (tally.failed or tally.errors or [None])[0],
            }
        rows[label] = cells
    return {"window": window, "rounds": list(rounds), "turns": turns, "rows": rows}


def task_markdown(report: dict[str, Any]) -> str:
    rounds = [str(n) for n in report["rounds"]]
    lines = [
        f"create_agent at {report['window']:,} tokens; each of {report['turns']} questions needs "
        "N rounds of 2 lookups. Turns finished / refused with a BudgetError; model calls and "
        "tokens sent per turn.",
        "",
        "| agent | " + " | ".join(f"{n} rounds" for n in rounds) + " |",
        "|---" * (len(rounds) + 1) + "|",
    ]
    for label, cells in report["rows"].items():
        shown = [
            f"{c['finished']} finished / {c['refused']} refused, {c['calls_per_turn']:.1f} calls, "
            f"{c['tokens_per_turn']:,} tok"
            for c in (cells[n] for n in rounds)
        ]
        lines.append(f"| {label} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def markdown(report: dict[str, Any]) -> str:
    windows = [str(w) for w in report["windows"]]
    head = "| setup | unguarded (128k) | " + " | ".join(f"{w}" for w in windows) + " |"
    lines = [
        "Model calls per turn; failed (never finished) / refused with a BudgetError, of "
        f"{report['turns']} turns; tokens sent per turn.",
        "",
        head,
        "|---" * (len(windows) + 2) + "|",
    ]
    for label, cells in report["rows"].items():
        shown = []
        for key in ["unguarded", *windows]:
            c = cells[key]
            shown.append(
                f"{c['calls_per_turn']:.1f} calls, {c['failed']} failed / {c['errors']} refused, "
                f"{c['tokens_per_turn']:,} tok"
            )
        lines.append(f"| {label} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--windows", help="comma-separated windows (tokens)")
    parser.add_argument("--only", help="run the setups whose name holds this")
    parser.add_argument("--json", action="store_true", help="print the JSON report too")
    parser.add_argument(
        "--task-length", action="store_true", help="the task-length sweep (create_agent)"
    )
    parser.add_argument("--rounds", help="comma-separated rounds of lookups (--task-length)")
    args = parser.parse_args(argv)
    if args.task_length:
        window = int(args.windows.split(",")[0]) if args.windows else TASK_WINDOW
        rounds = [int(n) for n in args.rounds.split(",")] if args.rounds else TASK_ROUNDS
        sweep = task_length(window, rounds)
        print(task_markdown(sweep))
        if args.json:
            print(json.dumps(sweep, indent=1))
        return 0
    windows = [int(w) for w in args.windows.split(",")] if args.windows else WINDOWS
    report = run(windows, args.only)
    print(markdown(report))
    if args.json:
        print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
