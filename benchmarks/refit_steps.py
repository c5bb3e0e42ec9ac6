"""Where the time of a re-fit after a new user question goes, step by step.

The speed benchmark times each re-fit (``SessionFitter.fit`` inside the adapter's read) against
its yardstick; this breaks the re-fits after a user message down, in the same conditions: a new
LangChain history per repetition, the core's caches emptied first, one cold and five warm reads,
then the benchmark's next messages appended one at a time, each read timed after a full garbage
collection (the conversation frozen out of the collector, as in the benchmark's cells). The
steps are timed by wrapping the functions that do them:

- ``fit``: the whole re-fit;
- ``recall``: choosing the cut turns to bring back (``recall_turns``), which holds
- ``rank``: ranking the cut turns for the question, its second hop too
  (``RelevanceIndex.ranked``), which holds
- ``stems``: the question's stems (from the memo, FTS5 for the words not in it);
- ``ids``: listing the ids left out (``ids_without``).

    python -m benchmarks.refit_steps [--size 5000] [--strategy auto] [--runs 5]

``--loop SECONDS`` re-fits after new questions over and over instead, for a sampling profiler
(py-spy, pyinstrument) to attribute their time; the samples under ``recall_turns`` are the
re-ranking's, those under ``again`` the whole steady re-fit's:

    py-spy record --native -r 1000 -f raw -o refit.txt -- \
        python -m benchmarks.refit_steps --size 5000 --loop 30

``--cold`` times the two tokenizations of each new question instead, warm (the same call again
at once) and cold (right after a full collection, as every timed read is, a history of the
conversation held): its stems for the search (FTS5, the word memo emptied) and its count
(tiktoken, uncached), the yardstick's part. The collection walks the history's objects and
evicts the processor's caches, so the code and tables each tokenizer touches come back from
memory.
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any
from unittest.mock import patch

from benchmarks._conversation import next_messages
from benchmarks._harness import APPENDS, WARM_READS, Context, reset_counts, timed
from benchmarks._ours import _yardstick
from benchmarks.speed import _context

if TYPE_CHECKING:
    from langchain_session_migrator import FittedChatMessageHistory
    from session_migrator import Message

#: (step, owner, attribute) of the functions timed
_STEPS = (
    ("fit", "session_migrator.sessions._fitter:SessionFitter", "fit"),
    ("recall", "session_migrator.recall._recall", "recall_turns"),
    ("rank", "session_migrator.recall._bm25:RelevanceIndex", "ranked"),
    ("stems", "session_migrator.recall._fts:_Tokenizer", "stems"),
    ("ids", "session_migrator.migration._stable", "ids_without"),
    ("ids", "session_migrator.migration._steady", "ids_without"),
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


def _history(name: str, ctx: Context, strategy: str) -> FittedChatMessageHistory:
    """A new LangChain history of the benchmark's conversation, the core's caches emptied first
    (as in each of the benchmark's repetitions).
    """
    from langchain_session_migrator import FittedChatMessageHistory

    reset_counts()
    history = FittedChatMessageHistory(
        name,
        model=ctx.window,
        store="memory://",
        strategy=strategy,
        reserve_output=0,
        reserve_tokens=0,
    )
    history.add_messages(ctx.lc)
    return history


def run(size: int, strategy: str = "auto", runs: int = 5) -> list[dict[str, float]]:
    """The seconds of each step (and the yardstick) of every re-fit after a user message."""
    from session_migrator.counting._tokens import TiktokenCounter

    ctx = _context(size, runs, 60.0, False)
    gc.freeze()  # as in the benchmark's forked cells
    rows: list[dict[str, float]] = []
    try:
        for r in range(runs):
            history = _history(f"steps-{r}", ctx, strategy)
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
                    last = history._state.last
                    assert last is not None  # (a read was just made)
                    kept = list(last.messages)
                    seconds["yardstick"] = _yardstick(fresh, ctx.new[k], kept)
                    rows.append(seconds)
            history.close()
    finally:
        gc.unfreeze()
    return rows


def loop(size: int, seconds: float, strategy: str = "auto") -> int:
    """Append an answer and a new question, read, again and again for ``seconds`` (each read
    after a question in the benchmark's conditions: the word memo emptied, after a full
    collection); the number of reads after a question.
    """
    from langchain_session_migrator import messages_from_core
    from session_migrator.recall import _fts

    ctx = _context(size, 1, 60.0, False)
    history = _history("steps-loop", ctx, strategy)
    history.messages  # noqa: B018 - the cold read
    gc.freeze()
    questions = 0
    more: list[Any] = []  # the messages that continue the conversation: answer, question, ...
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if 2 * questions + 2 > len(more):
                more = messages_from_core(next_messages(ctx.messages, max(64, 2 * len(more))))
            history.add_messages([more[2 * questions]])
            history.messages  # noqa: B018 - the read after the answer
            history.add_messages([more[2 * questions + 1]])
            _fts._stem_memo.clear()
            gc.collect()
            history.messages  # noqa: B018 - the read after the question
            questions += 1
    finally:
        gc.unfreeze()
        history.close()
    return questions


def cold(size: int, repeats: int = 30) -> list[dict[str, float]]:
    """For each new user question of the benchmark: the median seconds of its stems and of its
    count, warm and after a full collection (keys ``stems_warm``, ``stems_cold``,
    ``count_warm``, ``count_cold``).
    """
    from session_migrator.counting._tokens import TiktokenCounter
    from session_migrator.recall import _fts

    ctx = _context(size, 1, 60.0, False)
    tokenizer = _fts._Tokenizer()
    counter = TiktokenCounter("o200k_base")

    def stems(message: Message) -> object:
        _fts._stem_memo.clear()  # every word through FTS5, as a process's first questions
        return tokenizer.stems(message.text)

    steps: dict[str, Callable[[Message], object]] = {
        "stems": stems,
        "count": counter._uncached_message,
    }
    rows: list[dict[str, float]] = []
    gc.freeze()  # the conversation, as in the benchmark's cells
    history: FittedChatMessageHistory | None = None
    try:
        # what each timed read's collection walks: a history of the conversation, read once
        history = _history("steps-cold", ctx, "auto")
        history.messages  # noqa: B018 - the cold read
        for message in ctx.new[:APPENDS]:  # the benchmark's timed appends
            if message.role != "user":
                continue
            row: dict[str, float] = {}
            for step, call in steps.items():
                once = functools.partial(call, message)
                once()
                row[f"{step}_warm"] = statistics.median(_seconds(once) for _ in range(repeats))
                # (``timed`` collects first, as before every timed read)
                row[f"{step}_cold"] = statistics.median(timed(once)[0] for _ in range(repeats))
            rows.append(row)
    finally:
        gc.unfreeze()
        tokenizer.close()
        if history is not None:
            history.close()
    return rows


def _seconds(call: Callable[[], object]) -> float:
    """How long ``call()`` takes, timed at once (no collection first)."""
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=5000, help="conversation size (messages)")
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--runs", type=int, default=5, help="repetitions (new histories)")
    parser.add_argument(
        "--loop",
        type=float,
        metavar="SECONDS",
        help="re-fit after new questions for this long (for a profiler) instead",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="time each new question's stems and count, warm and after a collection, instead",
    )
    args = parser.parse_args(argv)
    if args.cold:
        columns = ("stems_warm", "stems_cold", "count_warm", "count_cold")
        print(f"each new question's tokenizations, {args.size:,} messages: µs (median)")
        print("  ".join(f"{c:>10}" for c in columns))
        for row in cold(args.size):
            print("  ".join(f"{row[c] * 1e6:10.0f}" for c in columns))
        return 0
    if args.loop is not None:
        count = loop(args.size, args.loop, args.strategy)
        print(f"{count} re-fits after a new question, {args.size:,} messages, {args.strategy}")
        return 0
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
