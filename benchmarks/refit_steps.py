"""Where the time of a re-fit after a new user question goes, step by step.

The speed benchmark times each re-fit (``SessionFitter.fit`` inside the adapter's read) against
its yardstick; this breaks the re-fits after a user message down, in the same conditions: a new
LangChain history per repetition, the core's caches emptied first, one cold and five warm reads,
then the benchmark's next messages appended one at a time, each read timed after a full garbage
collection (the conversation frozen out of the collector, as in the benchmark's cells). The
steps are timed by wrapping the functions that do them:

- ``fit``: the whole re-fit;
- ``recall``: choosing the cut turns to bring back (``recall_turns``), which holds
- ``rank``: ranking the cut turns for the question (``RelevanceIndex._rank``), which holds
- ``stems``: the question's stems (from the memo, FTS5 for the words not in it);
- ``ids``: listing the ids left out (``ids_without``).

    python -m benchmarks.refit_steps [--size 5000] [--strategy auto] [--runs 5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest.mock import patch

from benchmarks._harness import APPENDS, WARM_READS, reset_counts
from benchmarks._ours import _yardstick
from benchmarks.speed import _context

#: (step, owner, attribute) of the functions timed
_STEPS = (
    ("fit", "session_migrator._fitter:SessionFitter", "fit"),
    ("recall", "session_migrator._recall", "recall_turns"),
    ("rank", "session_migrator._recall:RelevanceIndex", "_rank"),
    ("stems", "session_migrator._recall:_Tokenizer", "stems"),
    ("ids", "session_migrator._steady", "ids_without"),
)


def _owner(path: str) -> Any:
    module, _, name = path.partition(":")
    __import__(module)
    found = sys.modules[module]
    return getattr(found, name) if name else found


@contextmanager
def _timing(seconds: dict[str, float]) -> Iterator[None]:
    """Add the seconds each step takes to ``seconds`` while entered."""

    def wrapped(step: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[step] = seconds.get(step, 0.0) + time.perf_counter() - started

        return timed

    with ExitStack() as stack:
        for step, path, name in _STEPS:
            owner = _owner(path)
            stack.enter_context(patch.object(owner, name, wrapped(step, getattr(owner, name))))
        yield


def run(size: int, strategy: str = "auto", runs: int = 5) -> list[dict[str, float]]:
    """The seconds of each step (and the yardstick) of every re-fit after a user message."""
    from langchain_session_migrator import FittedChatMessageHistory
    from session_migrator._tokens import TiktokenCounter

    ctx = _context(size, runs, 60.0, False)
    gc.freeze()  # as in the benchmark's forked cells
    rows: list[dict[str, float]] = []
    try:
        for r in range(runs):
            reset_counts()
            history = FittedChatMessageHistory(
                f"steps-{r}",
                model=ctx.window,
                store="memory://",
                strategy=strategy,
                reserve_output=0,
                reserve_tokens=0,
            )
            history.add_messages(ctx.lc)
            for _ in range(1 + WARM_READS):
                history.messages  # noqa: B018 - the cold read, then the warm ones
            fresh = TiktokenCounter("o200k_base")
            for k in range(APPENDS):
                history.add_messages([ctx.lc_new[k]])
                seconds: dict[str, float] = {}
                gc.collect()
                with _timing(seconds):
                    history.messages  # noqa: B018 - the read after one new message
                if ctx.new[k].role == "user":
                    kept = list(history._state.last.messages)
                    seconds["yardstick"] = _yardstick(fresh, ctx.new[k], kept)
                    rows.append(seconds)
            history.close()
    finally:
        gc.unfreeze()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=5000, help="conversation size (messages)")
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--runs", type=int, default=5, help="repetitions (new histories)")
    args = parser.parse_args(argv)
    rows = run(args.size, args.strategy, args.runs)
    steps = [step for step, _, _ in _STEPS] + ["yardstick"]
    print(f"re-fits after a user message, {args.size:,} messages, {args.strategy}: ms per step")
    print("  ".join(f"{s:>9}" for s in steps))
    for row in rows:
        print("  ".join(f"{row.get(s, 0.0) * 1e3:9.3f}" for s in steps))
    medians = {s: statistics.median(row.get(s, 0.0) for row in rows) for s in steps}
    print("  ".join(f"{medians[s] * 1e3:9.3f}" for s in steps), " (median)")
    print(f"fit / yardstick (medians): {medians['fit'] / medians['yardstick']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
