"""What every cell of the speed benchmark shares: the input, the timing, the records.

Every cell is a generator run in a forked child (see :mod:`benchmarks._capped`). It yields one
``{"kind": "run", "samples": {phase: [seconds, ...]}}`` per repetition, what the first
repetition kept (``"kept"``), for this project's adapters a probe of the read after one more
append (``"probe"``), and the peak of the Python heap and of SQLite's heap in one extra
repetition (``"memory"``). Each call is timed after a full garbage collection (:func:`timed`).
"""

from __future__ import annotations

import ctypes
import gc
import time
import tracemalloc
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from session_migrator import Message, ModelWindow
from session_migrator.counting._tokens import TiktokenCounter
from session_migrator.messages._rules import chat_rule_violations

__all__ = [
    "APPENDS",
    "WARM_READS",
    "Cell",
    "Context",
    "Record",
    "Samples",
    "kept_record",
    "peak",
    "repeat",
    "reset_counts",
    "timed",
]

Record = dict[str, Any]


#: Reads timed per repetition after the cold one: warm reads, and appends each followed by a read.
WARM_READS = 5
APPENDS = 5


@dataclass
class Context:
    """One conversation size: the messages in each framework's types and the shared budget.

    ``new`` holds the messages appended one at a time (``APPENDS`` timed, one more probed), in
    core, LangChain (``lc_new``) and LlamaIndex (``li_new``) form.
    """

    size: int
    messages: list[Message]
    new: list[Message]
    budget: int
    tokens: int
    text_bytes: int
    runs: int
    cap: float
    memory: bool
    lc: list[Any]
    lc_new: list[Any]
    li: list[Any]
    li_new: list[Any]

    @property
    def window(self) -> ModelWindow:
        return ModelWindow(
            "bench-target",
            "bench",
            context_window=self.budget,
            max_input_tokens=self.budget,
            max_output_tokens=0,
            tokenizer="o200k_base",
            source="explicit",
        )


@dataclass(frozen=True)
class Cell:
    """One row of the table: who, which strategy, and the work."""

    key: str
    method: str
    strategy: str
    phases: tuple[str, ...]
    ours: bool
    work: Callable[[Context], Iterator[Record]]


def reset_counts() -> None:
    """Drop the core's shared counters, remembered text counts, the extractive summary's
    remembered sentence scores and recall's remembered word stems, so that nothing counted,
    scored or stemmed is cached in the process.
    """
    from session_migrator.counting import _tokens
    from session_migrator.recall import _fts
    from session_migrator.summaries import _outline

    with _tokens._registry_lock:
        _tokens._tiktoken_counters.clear()
        _tokens._estimating.clear()
        _tokens._heuristic.clear()
    _tokens._text_counts.clear()
    _outline._memo.clear()
    _outline._frames.clear()
    _fts._stem_memo.clear()


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def kept_record(ctx: Context, kept: Sequence[Message]) -> Record:
    counter = TiktokenCounter("o200k_base")
    tokens = counter.count_messages(kept) if kept else 0
    problems = chat_rule_violations(kept)
    return {
        "kind": "kept",
        "messages": len(kept),
        "tokens": tokens,
        "over_budget": tokens > ctx.budget,
        "violations": len(problems),
        "first_violation": problems[0] if problems else None,
    }


class _SqliteHeap:
    """SQLite's own heap (``sqlite3_memory_used`` and ``sqlite3_memory_highwater``, read with
    ctypes from the library the ``sqlite3`` module uses: the symbols are looked up in its
    extension module and the libraries it links), which ``tracemalloc`` does not see: the recall
    index lives there.
    """

    def __init__(self, library: str) -> None:
        self._lib = ctypes.CDLL(library)
        self._lib.sqlite3_memory_used.restype = ctypes.c_int64
        self._lib.sqlite3_memory_highwater.restype = ctypes.c_int64
        self._lib.sqlite3_memory_highwater.argtypes = [ctypes.c_int]

    def used(self) -> int:
        return int(self._lib.sqlite3_memory_used())

    def highwater(self, reset: bool = False) -> int:
        return int(self._lib.sqlite3_memory_highwater(int(reset)))


def _sqlite_heap() -> _SqliteHeap | None:
    """SQLite's heap as the ``sqlite3`` module's library sees it, or ``None`` when it cannot be
    read (no such symbols, or a library that is not the one in use: nothing allocated in it).
    """
    import _sqlite3
    import sqlite3

    try:
        heap = _SqliteHeap(_sqlite3.__file__)
    except (OSError, AttributeError):
        return None
    # the library is initialised by its first connection; while one is open, it holds memory
    connection = sqlite3.connect(":memory:")
    try:
        in_use = heap.used()
    finally:
        connection.close()
    return heap if in_use else None


def peak(fn: Callable[[], Any]) -> Record:
    """The peak of the Python heap (``tracemalloc``) and of SQLite's heap while ``fn`` runs,
    and their sum (``peak_bytes``: at least the peak of the two together).
    """
    sqlite = _sqlite_heap()
    gc.collect()
    base = sqlite.used() if sqlite else 0
    if sqlite:
        sqlite.highwater(reset=True)
    tracemalloc.start()
    try:
        fn()
        python = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    record: Record = {"kind": "memory", "python_peak_bytes": python, "peak_bytes": python}
    if sqlite:
        record["sqlite_peak_bytes"] = max(0, sqlite.highwater() - base)
        record["peak_bytes"] = python + record["sqlite_peak_bytes"]
    return record


Samples = dict[str, list[float]]
One = Callable[[int], tuple[Samples, Sequence[Message] | None]]


def repeat(
    ctx: Context,
    one: One,
    *,
    memory: Callable[[], Any] | Mapping[str, Callable[[], Any]] | None,
) -> Iterator[Record]:
    """``ctx.runs`` repetitions (fewer once a third of the cap is used), then the traced one
    (one per entry when ``memory`` maps record kinds to runs, each recorded under its kind).
    """
    started = time.perf_counter()
    last = 0.0
    for r in range(ctx.runs):
        if r and time.perf_counter() - started + last > ctx.cap / 3:
            break
        run_started = time.perf_counter()
        samples, kept = one(r)
        last = time.perf_counter() - run_started
        yield {"kind": "run", "samples": samples}
        if r == 0 and kept is not None:
            yield kept_record(ctx, kept)
    # a traced run is about 3 times slower: only when asked and when it fits in the cap
    if ctx.memory and memory is not None and time.perf_counter() - started + 4 * last < ctx.cap:
        if callable(memory):
            yield peak(memory)
        else:
            for kind, run in memory.items():
                yield {**peak(run), "kind": kind}
