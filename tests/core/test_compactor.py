"""Background compaction: no fit waits for the summarizer; the summary written ahead is the one
the moving cut takes; a summarizer that fails, hangs or is cancelled leaves the offline one."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

import pytest

from session_migrator import Compactor, Message, ModelWindow, SessionFitter, TokenCounter
from session_migrator.summaries._ahead import Ahead, Plan, digest_of

WINDOW = ModelWindow("small", "example", 2_000, 2_000, 0, "o200k_base", "explicit")
BACKGROUND = "being written in the background"
AHEAD = "written in the background, ahead of the cut"


class Gated:
    """A summarizer that waits for ``gate`` (or raises, or never answers), and counts its
    calls and the threads it ran in."""

    name = "gated"

    def __init__(self, gate: threading.Event | None = None, fail: bool = False) -> None:
        self.gate = gate or threading.Event()
        self.fail = fail
        self.calls = 0
        self.threads: set[str] = set()

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str:
        self.calls += 1
        self.threads.add(threading.current_thread().name)
        self.gate.wait(30)
        if self.fail:
            raise RuntimeError("the model is down")
        return f"{previous or ''} The user asked when {len(messages)} orders ship.".strip()


@pytest.fixture
def compactor() -> Iterator[Compactor]:
    made = Compactor(workers=1, timeout=10)
    yield made
    made.close()


def _fitter(summarizer: Gated, compactor: Compactor | None, name: str) -> SessionFitter:
    fitter = SessionFitter(
        name,
        store="memory://",
        strategy="summarize",
        summarizer=summarizer,
        reserve_output=0,
        compactor=compactor,
    )
    fitter.append([Message("system", "You answer questions about orders.")])
    return fitter


def _turn(fitter: SessionFitter, n: int) -> list[str]:
    fitter.append([Message("user", f"When does order {n} ship from the north warehouse?")])
    notes = fitter.fit(WINDOW).report.notes
    fitter.append([Message("assistant", f"Order {n} ships on day {n % 7} of the week.")])
    return notes


def _until_cut(fitter: SessionFitter, start: int = 0) -> tuple[int, list[str]]:
    """Turns until the first cut; its turn number and notes."""
    for n in range(start, start + 200):
        notes = _turn(fitter, n)
        if fitter.fit(WINDOW).summary is not None or notes:
            return n, notes
    raise AssertionError("the conversation never went past the budget")


def test_the_cut_does_not_wait_and_takes_the_summary_once_written(compactor: Compactor) -> None:
    gate = threading.Event()
    summarizer = Gated(gate)
    fitter = _fitter(summarizer, compactor, "bg-first")
    _n, notes = _until_cut(fitter)
    # the summarizer is held: the fit answered all the same, with the offline summary
    assert any(BACKGROUND in note for note in notes)
    lead = fitter.fit(WINDOW).messages[1]
    assert lead.extra["session_migrator"]["summarizer"] == "extractive"
    assert fitter.compaction["state"] == "pending"
    gate.set()
    assert compactor.wait(10)
    result = fitter.fit(WINDOW)
    assert any(AHEAD in note for note in result.report.notes)
    assert result.messages[1].extra["session_migrator"]["summarizer"] == "gated"
    assert summarizer.threads
    assert all("compact" in t or "summary" in t for t in summarizer.threads)
    assert fitter.compaction["written"] >= 1


def test_the_next_cut_finds_its_summary_ready(compactor: Compactor) -> None:
    gate = threading.Event()
    gate.set()
    summarizer = Gated(gate)
    fitter = _fitter(summarizer, compactor, "bg-next")
    n, _ = _until_cut(fitter)
    moves_ready = 0
    heads: list[str] = []
    for k in range(n + 1, n + 160):
        notes = _turn(fitter, k)
        assert compactor.wait(10)  # (a turn takes longer than a summary here)
        # (the cut moves at the turn's fit or at this one, after the answer is appended)
        again = fitter.fit(WINDOW)
        notes += again.report.notes
        head = again.messages[1].extra["session_migrator"].get("last_id", "")
        if heads and head != heads[-1] and any(AHEAD in note for note in notes):
            moves_ready += 1
        heads.append(head)
    # once the first summary is written, every later move of the cut finds its summary ready
    assert moves_ready >= 3
    # and the summarizer is called once a move, not once a turn
    assert summarizer.calls <= len(set(heads)) + 2


def test_without_a_compactor_the_cut_waits_in_the_fit() -> None:
    summarizer = Gated()
    summarizer.gate.set()
    fitter = _fitter(summarizer, None, "bg-none")
    _until_cut(fitter)
    assert threading.current_thread().name in summarizer.threads
    assert fitter.compaction["state"] == "off"


def test_a_failing_summarizer_leaves_the_offline_summary(compactor: Compactor) -> None:
    gate = threading.Event()
    gate.set()
    summarizer = Gated(gate, fail=True)
    fitter = _fitter(summarizer, compactor, "bg-fail")
    n, _ = _until_cut(fitter)
    for k in range(n + 1, n + 6):
        _turn(fitter, k)
        assert compactor.wait(10)
    result = fitter.fit(WINDOW)
    assert result.messages[1].extra["session_migrator"]["summarizer"] == "extractive"
    assert fitter.compaction["state"].startswith("failed: ")
    assert "the model is down" in fitter.compaction["state"]
    # given up on after two tries, not called at every turn
    assert summarizer.calls <= 2
    assert compactor.status()["failed"] >= 1


def test_a_hanging_summarizer_is_given_up_on() -> None:
    compactor = Compactor(workers=1, timeout=0.2)
    try:
        summarizer = Gated()  # never released
        fitter = _fitter(summarizer, compactor, "bg-hang")
        _until_cut(fitter)
        assert compactor.wait(10)
        assert fitter.compaction["state"] == "failed: the summarizer took over 0.2 s"
        assert fitter.fit(WINDOW).messages[1].extra["session_migrator"]["summarizer"] == (
            "extractive"
        )
    finally:
        summarizer.gate.set()
        compactor.close()


def test_cancel_discards_what_is_being_written() -> None:
    compactor = Compactor(workers=1, timeout=10)
    gate = threading.Event()
    summarizer = Gated(gate)
    fitter = _fitter(summarizer, compactor, "bg-cancel")
    _until_cut(fitter)
    compactor.cancel()
    gate.set()
    assert compactor.wait(10)
    assert fitter.compaction["state"] == "cancelled"
    assert fitter.compaction["written"] == 0
    compactor.close()
    assert not compactor.submit(Ahead(), summarizer, _counter())


def test_compact_writes_now_for_a_scheduler() -> None:
    summarizer = Gated()
    summarizer.gate.set()
    fitter = SessionFitter(
        "bg-scheduled", store="memory://", strategy="summarize", summarizer=summarizer
    )
    fitter.append([Message("system", "You answer questions about orders.")])
    for n in range(120):
        fitter.append([Message("user", f"When does order {n} ship from the north warehouse?")])
        fitter.append([Message("assistant", f"Order {n} ships on day {n % 7} of the week.")])
    assert fitter.compact(WINDOW)
    calls = summarizer.calls
    result = fitter.fit(WINDOW)
    assert summarizer.calls == calls  # the fit took what compact() wrote
    assert result.messages[1].extra["session_migrator"]["summarizer"] == "gated"


def _counter() -> TokenCounter:
    from session_migrator import counter_for

    return counter_for("gpt-4o")


def test_a_summary_of_messages_changed_since_is_not_used() -> None:
    covered = [Message("user", f"turn {k}", id=f"m{k}") for k in range(5)]
    ahead = Ahead()
    plan = Plan(tuple(covered), 100, None, digest_of(covered))
    from session_migrator.summaries._summarizers import Summary

    ahead.put(plan, Summary("five turns", "m0", "m4", 5, "gated"))
    assert ahead.summary_for(covered) is not None
    edited = [*covered[:2], covered[2].replace(content="turn 2, edited"), *covered[3:]]
    assert ahead.summary_for(edited) is None
    assert ahead.summary_for(covered) is None  # (dropped once found stale)


def test_compactor_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="workers"):
        Compactor(workers=0)
    with pytest.raises(ValueError, match="timeout"):
        Compactor(timeout=0)
    with pytest.raises(TypeError, match="compactor must be a Compactor"):
        SessionFitter("x", store="memory://", compactor="yes")  # type: ignore[arg-type]


def test_the_langchain_history_reads_without_waiting(compactor: Compactor) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    from langchain_session_migrator import FittedChatMessageHistory

    gate = threading.Event()
    gate.set()
    summarizer = Gated(gate)
    history = FittedChatMessageHistory(
        "bg-lc",
        model=WINDOW,
        store="memory://",
        strategy="summarize",
        summarizer=summarizer,
        reserve_output=0,
        reserve_tokens=0,
        compactor=compactor,
    )
    history.add_messages([SystemMessage("You answer questions about orders.")])
    notes: list[str] = []
    for n in range(150):
        history.add_messages([HumanMessage(f"When does order {n} ship from the north warehouse?")])
        assert history.messages  # (a read, as the chain makes before each call)
        notes += history.last_report.notes
        history.add_messages([AIMessage(f"Order {n} ships on day {n % 7} of the week.")])
        assert compactor.wait(10)
    assert summarizer.calls >= 2
    assert threading.current_thread().name not in summarizer.threads
    assert any(AHEAD in note for note in notes)


# -- one compaction per session at a time, across processes (the store's lease) -----------------

WAITING = "waiting: another process is compacting"


def _shared(store: object, summarizer: Gated, compactor: Compactor | None) -> SessionFitter:
    return SessionFitter(
        "bg-shared",
        store=store,  # type: ignore[arg-type]
        strategy="summarize",
        summarizer=summarizer,
        reserve_output=0,
        compactor=compactor,
    )


def _past_budget(fitter: SessionFitter, turns: int = 120) -> None:
    fitter.append([Message("system", "You answer questions about orders.")])
    for n in range(turns):
        fitter.append([Message("user", f"When does order {n} ship from the north warehouse?")])
        fitter.append([Message("assistant", f"Order {n} ships on day {n % 7} of the week.")])


def test_a_second_fitter_waits_while_another_compacts_the_session() -> None:
    from session_migrator.store import open_store

    store = open_store("memory://")
    gate = threading.Event()
    first, second = Gated(gate), Gated(gate)
    compactors = [Compactor(workers=1, timeout=10), Compactor(workers=1, timeout=10)]
    try:
        a = _shared(store, first, compactors[0])
        _past_budget(a)
        b = _shared(store, second, compactors[1])
        a.fit(WINDOW)  # a's job takes the lease, and its summarizer is held
        for _ in range(100):
            if first.calls:
                break
            threading.Event().wait(0.01)
        assert first.calls == 1
        b.fit(WINDOW)  # b's job finds the lease taken: it calls nothing
        assert compactors[1].wait(10)
        assert second.calls == 0
        assert b.compaction["state"] == WAITING
        assert compactors[1].status()["waiting"] == 1
        gate.set()
        assert compactors[0].wait(10)
        assert a.compaction["state"] == "ready"
        # the lease was let go, and b's plan is still asked for: b's next fit asks again
        assert store.acquire_lease("bg-shared", "compaction", "someone", 30)
        assert store.release_lease("bg-shared", "compaction", "someone")
        b.append([Message("user", "And order 500?")])
        b.fit(WINDOW)
        assert compactors[1].wait(10)
        assert second.calls == 1
        assert b.compaction["state"] == "ready"
    finally:
        gate.set()
        for compactor in compactors:
            compactor.close()


def test_compact_writes_nothing_while_another_process_holds_the_lease() -> None:
    from session_migrator.store import open_store

    store = open_store("memory://")
    summarizer = Gated()
    summarizer.gate.set()
    fitter = _shared(store, summarizer, None)
    _past_budget(fitter)
    assert store.acquire_lease("bg-shared", "compaction", "another-process", 30)
    assert not fitter.compact(WINDOW)
    assert summarizer.calls == 0
    assert fitter.compaction["state"] == WAITING
    assert store.release_lease("bg-shared", "compaction", "another-process")
    assert fitter.compact(WINDOW)  # (the plan was still asked for)
    assert summarizer.calls == 1


def test_the_lease_is_let_go_when_the_summarizer_fails_or_hangs() -> None:
    from session_migrator.store import open_store

    store = open_store("memory://")
    gate = threading.Event()
    gate.set()
    failing = Gated(gate, fail=True)
    fitter = _shared(store, failing, None)
    _past_budget(fitter)
    assert not fitter.compact(WINDOW)
    assert failing.calls == 1
    assert fitter.compaction["state"].startswith("failed: ")
    assert store.acquire_lease("bg-shared", "compaction", "another-process", 30)
    assert store.release_lease("bg-shared", "compaction", "another-process")
    compactor = Compactor(workers=1, timeout=0.2)
    hanging = Gated()  # never answers
    try:
        other = _shared(store, hanging, compactor)
        other.fit(WINDOW)
        assert compactor.wait(10)
        assert other.compaction["state"] == "failed: the summarizer took over 0.2 s"
        assert store.acquire_lease("bg-shared", "compaction", "another-process", 30)
    finally:
        hanging.gate.set()
        compactor.close()


def test_a_lease_that_cannot_be_taken_fails_the_job() -> None:
    from session_migrator.sessions._compactor import Lease

    class Broken:
        def acquire(self, ttl_seconds: float) -> bool:
            raise RuntimeError("the store is down")

        def release(self) -> None:
            raise AssertionError("not held: not released")

    lease: Lease = Broken()
    summarizer = Gated()
    summarizer.gate.set()
    covered = [Message("user", f"turn {k}", id=f"m{k}") for k in range(5)]
    ahead = Ahead()
    ahead.want(Plan(tuple(covered), 100, None, digest_of(covered)))
    compactor = Compactor(workers=1, timeout=10)
    try:
        assert not compactor.run_now(ahead, summarizer, _counter(), lease)
        assert summarizer.calls == 0
        assert (
            ahead.status()["state"]
            == "failed: the compaction lease: RuntimeError: the store is down"
        )
    finally:
        compactor.close()


def test_each_fitter_holds_the_lease_as_an_owner_of_its_own() -> None:
    import os

    from session_migrator.store import open_store

    store = open_store("memory://")
    summarizer = Gated()
    a, b = _shared(store, summarizer, None), _shared(store, summarizer, None)
    _past_budget(a)
    from session_migrator.sessions._lease import StoreLease

    first = StoreLease(store, "bg-shared", owner=a._lease_owner)
    second = StoreLease(store, "bg-shared", owner=b._lease_owner)
    assert first.owner != second.owner
    assert f":{os.getpid()}:" in first.owner
    assert first.acquire(30)
    assert first.acquire(30)  # (its own: renewed)
    assert not second.acquire(30)
    second.release()  # (not its own: left as it is)
    assert not second.acquire(30)
    first.release()
    assert second.acquire(30)
