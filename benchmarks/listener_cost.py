"""The cost of one LLM call is the same with 1, 100 or 1,000 live LlamaIndex memories.

Every chat call emits ``LLMChatStartEvent``; the adapter's one handler finds the memory whose
history the call carried through an index of what memories handed out, so its cost must not
grow with the number of memories. Each run makes N memories on one ``memory://`` store (each
with a short conversation, read once, as a server with one memory per session has them) and
times ``llm.chat(history)`` of one of them with a fake LLM that answers at once: the median of
``calls`` calls, in microseconds. The claim holds when ``cost(1,000) <= 1.2 x cost(1)``.

    python -m benchmarks.listener_cost [--quick] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

COUNTS = (1, 100, 1_000)
LIMIT = 1.2


def _measure(live: int, calls: int) -> float:
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    from llamaindex_session_migrator import SessionMigratorMemory
    from session_migrator import open_store

    store = open_store("memory://")
    llm = MockFunctionCallingLLM(
        response_generator=lambda messages, **_: ChatMessage(role="assistant", content="ok")
    )
    memories = []
    for i in range(live):
        memory = SessionMigratorMemory.from_defaults(
            llm=llm, chat_store_key=f"session-{i}", store=store, strategy="trim"
        )
        memory.put_messages(
            [
                ChatMessage(role="user", content=f"hello from session {i}"),
                ChatMessage(role="assistant", content=f"hi, session {i}"),
                ChatMessage(role="user", content="what now?"),
            ]
        )
        memory.get()
        memories.append(memory)
    target = memories[len(memories) // 2]
    costs = []
    gc.collect()
    for _ in range(calls):
        history = target.get()
        started = time.perf_counter_ns()
        llm.chat(history)
        costs.append((time.perf_counter_ns() - started) / 1000)
    for memory in memories:
        memory.close()
    store.close()
    return statistics.median(costs)


def run(quick: bool = False) -> dict[str, Any]:
    calls = 200 if quick else 1_000
    cost = {n: round(_measure(n, calls), 1) for n in COUNTS}
    ratio = cost[max(COUNTS)] / cost[min(COUNTS)]
    return {
        "calls": calls,
        "microseconds": {str(n): c for n, c in cost.items()},
        "ratio": round(ratio, 3),
        "limit": LIMIT,
        "holds": ratio <= LIMIT,
    }


def markdown(result: dict[str, Any]) -> str:
    rows = [
        "| live memories | one `llm.chat` (µs, median) |",
        "|---:|---:|",
        *(f"| {int(n):,} | {c:,.1f} |" for n, c in result["microseconds"].items()),
    ]
    verdict = "holds" if result["holds"] else "FAILS"
    return "\n".join(
        [
            *rows,
            "",
            f"1,000 memories cost {result['ratio']:.2f}x one memory (limit {result['limit']}x): "
            f"{verdict}. Median of {result['calls']:,} calls each; see "
            "`benchmarks/listener_cost.py`.",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(quick=args.quick)
    print(json.dumps(result, indent=1) if args.json else markdown(result))
    return 0 if result["holds"] else 1


if __name__ == "__main__":
    sys.exit(main())
