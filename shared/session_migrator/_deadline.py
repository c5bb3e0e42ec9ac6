"""One total deadline for a network call and its retries (the LLM summarizers').

An HTTP client's timeout bounds each socket read, not a reply: a server that sends a byte a
second, or asks to retry in 20 s, holds a caller far longer. :class:`Deadline` runs each attempt
in a worker thread and waits for it only as long as the deadline allows; an attempt still
running then is left to finish in the background (its own read timeout is the time that was
left) and the caller goes on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Deadline", "DeadlinePassed", "retry_wait"]

#: HTTP statuses worth another attempt (as the ``openai`` SDK retries them).
RETRY_STATUSES = frozenset({408, 409, 429})
_GRACE = 0.25


class DeadlinePassed(Exception):
    """The deadline passed before the attempt answered (converted by the caller)."""


class Deadline:
    """``seconds`` from now; :meth:`call` runs an attempt within what is left."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    def allows(self, wait: float) -> bool:
        """Whether waiting ``wait`` seconds still leaves time for an attempt."""
        return wait < self.left()

    def why_not(self, wait: float | None) -> str:
        """Why a retry after ``wait`` seconds is not made (``""`` when the error is final)."""
        if wait is None:
            return ""
        return (
            f" (a retry in {wait:g} s would pass the {self.seconds:g} s deadline; raise "
            "timeout= for a slower server)"
        )

    def call(self, attempt: Callable[..., Any], *args: Any) -> Any:
        """``attempt(*args, seconds_left)``, or :class:`DeadlinePassed` when it does not return
        in time; its exception is raised here."""
        left = self.left()
        if left <= 0:
            raise DeadlinePassed(self._passed())
        outcome: list[Any] = []

        def run() -> None:
            try:
                outcome.append((True, attempt(*args, left)))
            except BaseException as exc:  # (handed to the caller's thread)
                outcome.append((False, exc))

        worker = threading.Thread(target=run, name="session-migrator-deadline", daemon=True)
        worker.start()
        worker.join(left + _GRACE)  # (the attempt's own timeout, when it has one, speaks first)
        if not outcome:
            raise DeadlinePassed(self._passed())
        ok, value = outcome[0]
        if ok:
            return value
        raise value

    def _passed(self) -> str:
        return (
            f"no complete reply within the {self.seconds:g} s deadline (timeout=, covering every "
            "retry); the server is slow, silent or trickling its reply"
        )


def retry_wait(exc: BaseException, attempt: int) -> float | None:
    """Seconds to wait before retrying after ``exc`` (``None``: not worth a retry): what its
    ``Retry-After`` header asks, else 0.5 s doubling per attempt."""
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    if status is None:
        name = type(exc).__name__
        if name not in ("APIConnectionError", "APITimeoutError"):
            return None
    elif status not in RETRY_STATUSES and status < 500:
        return None
    headers = getattr(response, "headers", None) or {}
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(key)
        if value is not None:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                break  # (an HTTP date: use the backoff)
    return float(min(0.5 * 2**attempt, 8.0))
