"""What every history object of one LangChain session shares: the :class:`_SessionState`.

It owns the session's :class:`~session_migrator.SessionFitter`, the lock around it and the
caches the reads fill: each core message converted to LangChain once, the fitted view and the
full log as LangChain lists, the model the migration log last names and the input the log was
last fitted for. :class:`FittedChatMessageHistory` builds one per history;
:class:`FittedHistoryFactory` keeps one per session and hands out history objects over it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from langchain_session_migrator._convert import message_from_core
from langchain_session_migrator._loading import CallInput
from session_migrator import Message, MigrationResult, SessionFitter


class _SessionState:
    """What every history object of one session shares: the fitter and the conversion caches."""

    def __init__(self, fitter: SessionFitter) -> None:
        self.fitter = fitter
        self.lock = threading.RLock()
        self.converted: dict[str, tuple[Message, BaseMessage]] = {}
        self.view: tuple[MigrationResult, list[BaseMessage]] | None = None
        self.last: MigrationResult | None = None
        self.tracked: tuple[int, str | None] | None = None
        self.full: tuple[int, str | None, list[BaseMessage]] | None = None
        self.logged_target: str | None = None
        self.logged_loaded = False
        # the input of the call the log (length, last id) was last fitted for: the reads of one
        # call (before and after its model runs, with nothing added between) fit alike
        self.question: tuple[tuple[int, str | None], CallInput] | None = None

    def to_langchain(self, messages: Sequence[Message]) -> list[BaseMessage]:
        out: list[BaseMessage] = []
        for message in messages:
            hit = self.converted.get(message.id)
            if hit is not None and hit[0] is message:
                out.append(hit[1])
                continue
            converted = message_from_core(message)
            self.converted[message.id] = (message, converted)
            out.append(converted)
        return out

    def reset(self) -> None:
        self.converted.clear()
        self.view = None
        self.full = None
        self.last = None
        self.tracked = None
        self.question = None
