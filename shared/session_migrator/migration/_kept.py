"""The ledgers a guard keeps between calls (a :class:`~session_migrator.RequestFitter`'s): each
conversation's, keyed by the window, the counter and its first message, so that past the budget
the prompt's head stays the same from call to call (the least recent go first).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._units import Ledger, check_slack
from session_migrator.messages._messages import Message
from session_migrator.models._windows import ModelWindow

__all__ = ["Kept", "conversation_key"]


class Kept:
    """Each conversation's :class:`Ledger` (at most ``most``, the least recent go first),
    reused while a request's messages extend the ledger's, else made anew. A fit takes its
    conversation's ledger and gives it back when done (two calls at once on one conversation:
    the second makes a ledger of its own)."""

    def __init__(self, most: int, slack: float) -> None:
        self.most = most
        self.slack = check_slack(slack)
        self._lock = threading.Lock()
        self._ledgers: OrderedDict[tuple[str, str, str], Ledger] = OrderedDict()

    def take(
        self, messages: list[Message], window: ModelWindow, counter: TokenCounter
    ) -> tuple[tuple[str, str, str], Ledger]:
        key = (conversation_key(messages) or "", window.name, counter.name)
        with self._lock:
            ledger = self._ledgers.pop(key, None)
        if ledger is None or not _extends(messages, ledger):
            # (the stable cut's state alone: an agent's turn is cut afresh at every call)
            ledger = Ledger(counter.count_message, slack=self.slack, steady=False)
        ledger.extend(messages[len(ledger) :])
        return key, ledger

    def give(self, key: tuple[str, str, str], ledger: Ledger) -> None:
        with self._lock:
            self._ledgers[key] = ledger
            self._ledgers.move_to_end(key)
            while len(self._ledgers) > self.most:
                self._ledgers.popitem(last=False)


def _extends(messages: Sequence[Message], ledger: Ledger) -> bool:
    """Whether ``messages`` begin with the ledger's messages (the same ids; the newest of
    them the same texts)."""
    n = len(ledger)
    if n > len(messages) or ledger.ids != [m.id for m in messages[:n]]:
        return False
    return all(ledger.messages[k].text == messages[k].text for k in range(max(0, n - 3), n))


def conversation_key(messages: Sequence[Message]) -> str | None:
    return next((m.id for m in messages if m.role != "system"), None)
