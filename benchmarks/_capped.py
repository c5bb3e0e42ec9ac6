"""Run one benchmark cell in a forked child process, under a wall-clock cap.

The child inherits the parent's memory (the generated conversation, imported modules) without
copying it, runs the cell's repetitions and sends each result back as soon as it has it. When
the cap is reached the child is killed; the results already sent are kept, and a cell that
finished no repetition is reported as "over N s". Each cell starting in a fresh child also
means no cell sees another's caches or heap.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["Capped", "run_capped"]

_DONE = "__done__"


@dataclass
class Capped:
    """What one capped cell produced: the records sent, whether it ran out of time, any error."""

    records: list[dict[str, Any]] = field(default_factory=list)
    timed_out: bool = False
    error: str | None = None
    seconds: float = 0.0


def _child(work: Callable[[], Iterator[dict[str, Any]]], conn: Connection) -> None:
    # what the child inherits (imported frameworks, the conversation) is never garbage: keep
    # the collector from walking it at every collection the cell makes or triggers
    gc.freeze()
    try:
        for record in work():
            conn.send(record)
        conn.send(_DONE)
    except BaseException:
        conn.send({"error": traceback.format_exc(limit=8)})
    finally:
        conn.close()


def run_capped(work: Callable[[], Iterator[dict[str, Any]]], cap: float) -> Capped:
    """Run ``work()`` (a generator of records) in a forked child for at most ``cap`` seconds."""
    ctx = mp.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(work, sender), daemon=True)
    started = time.perf_counter()
    process.start()
    sender.close()
    out = Capped()
    try:
        while True:
            left = cap - (time.perf_counter() - started)
            if left <= 0 or not receiver.poll(left):
                out.timed_out = True
                break
            try:
                record = receiver.recv()
            except EOFError:
                out.error = out.error or f"the child exited with code {process.exitcode}"
                break
            if record == _DONE:
                break
            if isinstance(record, dict) and "error" in record:
                out.error = str(record["error"])
                break
            out.records.append(record)
    finally:
        if process.is_alive():
            process.kill()
        process.join()
        receiver.close()
    out.seconds = time.perf_counter() - started
    return out
