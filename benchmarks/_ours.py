"""This project's cells: the LangChain history, the LlamaIndex memory and ``migrate()``.

A repetition of one of the adapters builds a new store and history holding the conversation,
then times: the first read ("cold": new message objects, so their per-object count memo is
empty, the core's shared counters dropped by :func:`~benchmarks._harness.reset_counts`, nothing
in the store's count table), :data:`~benchmarks._harness.WARM_READS` reads with nothing new
("warm"), and :data:`~benchmarks._harness.APPENDS` times one appended message followed by a
read ("append"), the core's re-fit inside it ("refit") and the floor's yardstick for it.
"""

from __future__ import annotations

import functools
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest.mock import patch

from benchmarks._builtins import raw_pass
from benchmarks._harness import (
    APPENDS,
    WARM_READS,
    Context,
    Record,
    Samples,
    repeat,
    reset_counts,
    timed,
)
from session_migrator import Message
from session_migrator.counting._counter import BaseCounter
from session_migrator.counting._tokens import TiktokenCounter, counter_for

__all__ = ["STORES", "langchain_history", "llamaindex_memory", "migrate_cold"]

#: The stores the adapters' memory is measured with, by the kind of record their peak is
#: recorded as: the in-memory one the timings use (it keeps frozen copies of the messages,
#: sharing their text) and the default, an embedded SQLite file.
STORES = {"memory": "memory://", "memory_default": "sqlite:///{folder}/bench.db"}


class _Calls:
    """What the core tokenized (texts and their tokens) and how many per-message counts it
    looked up, while :meth:`counting` is entered.
    """

    def __init__(self) -> None:
        self.texts = 0
        self.tokens = 0
        self.lookups = 0

    @contextmanager
    def counting(self) -> Iterator[_Calls]:
        calls = self

        def wrap(cls: type, name: str, tokenizes: bool) -> Any:
            original = getattr(cls, name)

            def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
                value = original(self, *args, **kwargs)
                if tokenizes:
                    calls.texts += 1
                    calls.tokens += value
                else:
                    calls.lookups += 1
                return value

            return patch.object(cls, name, counted)

        with (
            wrap(TiktokenCounter, "count_text", tokenizes=True),
            wrap(BaseCounter, "count_message", tokenizes=False),
            wrap(BaseCounter, "cached", tokenizes=False),
        ):
            yield self


@dataclass
class _Adapter:
    """How to drive one of this project's framework adapters."""

    # a new history/memory holding the conversation, in the store at that URL
    build: Callable[[int, str], Any]
    read: Callable[[Any], list[Any]]  # the fitted read
    append: Callable[[Any, int], None]  # append ctx.new[k]
    fitted: Callable[[Any], Sequence[Message]]  # the core messages of the last fit
    to_core: Callable[[list[Any]], list[Message]]


def _probe(ctx: Context, adapter: _Adapter, history: Any) -> Record:
    """The read after one more new message, instrumented: how many tokens it tokenized and how
    many per-message counts it looked up.
    """
    k = len(ctx.new) - 1
    adapter.append(history, k)
    with _Calls().counting() as calls:
        adapter.read(history)
    kept = list(adapter.fitted(history))
    return {
        "kind": "probe",
        "tokenized_texts": calls.texts,
        "tokenized_tokens": calls.tokens,
        "new_message_tokens": TiktokenCounter("o200k_base").count_text(ctx.new[k].text),
        "lookups": calls.lookups,
        "kept": len(kept),
        "messages": ctx.size + len(ctx.new),
    }


@contextmanager
def _fit_times() -> Iterator[list[float]]:
    """The seconds of each core re-fit (``SessionFitter.fit``) inside an adapter's read."""
    from session_migrator.sessions._fitter import SessionFitter

    original = SessionFitter.fit
    seconds: list[float] = []

    def timed_fit(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - started)

    with patch.object(SessionFitter, "fit", timed_fit):
        yield seconds


def _yardstick(fresh: TiktokenCounter, new: Message, kept: list[Message]) -> float:
    """Tokenizing ``new`` (uncached) plus one pass over the kept messages' cached counts, each
    timed as the reads are.
    """
    counter = counter_for("o200k_base")
    return (
        timed(lambda: fresh._uncached_message(new))[0]
        + timed(lambda: sum(counter.count_message(m) for m in kept))[0]
    )


def _adapter_work(ctx: Context, adapter: _Adapter) -> Iterator[Record]:
    def one(r: int) -> tuple[Samples, Sequence[Message]]:
        reset_counts()
        history = adapter.build(r, "memory://")
        cold, out = timed(lambda: adapter.read(history))
        samples: Samples = {"cold": [cold], "warm": [], "append": [], "refit": [], "yardstick": []}
        for _ in range(WARM_READS):
            samples["warm"].append(timed(lambda: adapter.read(history))[0])
        fresh = TiktokenCounter("o200k_base")
        for k in range(APPENDS):
            adapter.append(history, k)
            with _fit_times() as fits:
                samples["append"].append(timed(lambda: adapter.read(history))[0])
            samples["refit"].append(sum(fits))
            # the floor's yardstick for this re-fit, timed right after it the same way:
            # tokenizing the new message, plus one pass over the kept messages' cached counts
            samples["yardstick"].append(
                _yardstick(fresh, ctx.new[k], list(adapter.fitted(history)))
            )
        if r == 0:
            probes.append(_probe(ctx, adapter, history))
        return samples, adapter.to_core(out)

    def whole(store: str) -> None:
        reset_counts()
        with tempfile.TemporaryDirectory() as folder:
            url = store.format(folder=folder)
            history = adapter.build(0, url)
            adapter.read(history)
            adapter.read(history)
            adapter.append(history, 0)
            adapter.read(history)
            history.close()

    probes: list[Record] = []
    runs = {kind: functools.partial(whole, store) for kind, store in STORES.items()}
    for record in repeat(ctx, one, memory=runs):
        yield record
        yield from probes
        probes.clear()


def langchain_history(strategy: str) -> Callable[[Context], Iterator[Record]]:
    def work(ctx: Context) -> Iterator[Record]:
        from langchain_session_migrator import FittedChatMessageHistory, messages_to_core

        def build(r: int, store: str) -> FittedChatMessageHistory:
            history = FittedChatMessageHistory(
                f"bench-{r}",
                model=ctx.window,
                store=store,
                strategy=strategy,
                reserve_output=0,
                reserve_tokens=0,
            )
            history.add_messages(ctx.lc)
            return history

        yield from _adapter_work(
            ctx,
            _Adapter(
                build=build,
                read=lambda h: h.messages,
                append=lambda h, k: h.add_messages([ctx.lc_new[k]]),
                fitted=lambda h: h._state.last.messages,
                to_core=messages_to_core,
            ),
        )

    return work


def llamaindex_memory(strategy: str) -> Callable[[Context], Iterator[Record]]:
    def work(ctx: Context) -> Iterator[Record]:
        from llamaindex_session_migrator import SessionMigratorMemory, from_chat_messages

        def build(r: int, store: str) -> SessionMigratorMemory:
            memory = SessionMigratorMemory.from_defaults(
                chat_store_key=f"bench-{r}",
                store=store,
                model=ctx.window,
                strategy=strategy,
                reserve_output=0,
                reserve_input=0,
            )
            memory.put_messages(ctx.li)
            return memory

        yield from _adapter_work(
            ctx,
            _Adapter(
                build=build,
                read=lambda m: m.get(),
                append=lambda m, k: m.put(ctx.li_new[k]),
                fitted=lambda m: m._handout.result.messages,
                to_core=from_chat_messages,
            ),
        )

    return work


def migrate_cold(strategy: str) -> Callable[[Context], Iterator[Record]]:
    def work(ctx: Context) -> Iterator[Record]:
        from session_migrator import migrate

        raw = raw_pass(ctx)

        def one(r: int) -> tuple[Samples, Sequence[Message]]:
            del r
            fresh = [m.replace() for m in ctx.messages]  # new objects: empty count memos
            reset_counts()
            cold, result = timed(
                lambda: migrate(fresh, ctx.window, strategy=strategy, reserve_output=0)
            )
            # the floor's yardstick, timed right after in the same process: one raw pass
            return {"cold": [cold], "yardstick": [timed(raw)[0]]}, result.messages

        def whole() -> None:
            fresh = [m.replace() for m in ctx.messages]
            reset_counts()
            migrate(fresh, ctx.window, strategy=strategy, reserve_output=0)

        yield from repeat(ctx, one, memory=whole)

    return work
