"""The one deadline of a model call (``_deadline``): an attempt runs in a kept worker thread, a
late one is left behind and holds only its own thread, and the caller can begin an attempt and
wait for it later (the question's embedding while bm25 ranks)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from session_migrator._deadline import Deadline, DeadlinePassed


def test_an_attempt_that_never_returns_holds_its_own_thread_only() -> None:
    release = threading.Event()
    deadline = Deadline(0.2)
    with pytest.raises(DeadlinePassed):
        deadline.call(lambda _left: release.wait(5))
    # the next attempts run at once, on another thread, while the first still hangs
    later = Deadline(2)
    assert [later.call(lambda left, k=k: k) for k in range(5)] == list(range(5))
    release.set()


def test_an_attempt_begun_is_waited_for_later_and_its_error_raised_then() -> None:
    deadline = Deadline(2)
    started = time.monotonic()
    pending = deadline.start(lambda left: (time.sleep(0.05), left)[1])
    assert time.monotonic() - started < 0.05  # (begun, not waited for)
    assert 0 < pending.result() <= 2

    def fails(_left: float) -> None:
        raise ValueError("no vector")

    failing = deadline.start(fails)
    with pytest.raises(ValueError, match="no vector"):
        failing.result()


def test_a_passed_deadline_refuses_to_begin() -> None:
    deadline = Deadline(0.01)
    time.sleep(0.02)
    with pytest.raises(DeadlinePassed):
        deadline.start(lambda _left: 1)


def test_workers_are_kept_between_attempts() -> None:
    deadline = Deadline(5)
    for _ in range(20):
        deadline.call(lambda _left: None)
    workers = [t for t in threading.enumerate() if t.name == "session-migrator-deadline"]
    assert 1 <= len(workers) <= 3  # (a hung attempt from another test may hold one)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_starts_workers_of_its_own() -> None:
    Deadline(5).call(lambda _left: None)  # (a worker in this process, idle)
    pid = os.fork()
    if pid == 0:  # the child: its parent's idle worker is not there
        try:
            ok = Deadline(2).call(lambda _left: 42) == 42
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
