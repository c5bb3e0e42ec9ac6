"""Handing a fit out as ``ChatMessage`` lists: converted once, shared between reads, with fresh
copies where LlamaIndex edits a history in place.

A warm read (nothing new since the last fit) is a list copy and at most three message copies;
:meth:`HandOut.carried` tells whether a chat call carried what the last read handed out (for
the instrumentation listener).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole

from llamaindex_session_migrator._convert import to_chat_message
from llamaindex_session_migrator._instrumentation import ModelListener, publish
from session_migrator import Message, MigrationResult

__all__ = ["HandOut", "copy_message", "edited_positions"]


def copy_message(message: ChatMessage) -> ChatMessage:
    """A copy callers may edit the way LlamaIndex does: a new message with its own ``blocks``
    list, new block objects and its own ``additional_kwargs`` (their values are shared).
    """
    return message.model_copy(
        update={
            "blocks": [block.model_copy() for block in message.blocks],
            "additional_kwargs": dict(message.additional_kwargs),
        }
    )


def edited_positions(messages: Sequence[ChatMessage]) -> tuple[int, ...]:
    """Where in a history LlamaIndex edits messages in place: the last message (agents with a
    state rewrite its text: ``BaseWorkflowAgent.setup_agent``, ``AgentWorkflow.setup_agent``;
    output parsers when the first is not a system message), the first when it is a system
    message (output parsers; ``Memory`` prepends its blocks) and the latest user message
    (``Memory`` prepends its blocks).
    """
    if not messages:
        return ()
    last = len(messages) - 1
    at = {last}
    if messages[0].role == MessageRole.SYSTEM:
        at.add(0)
    for i in range(last, -1, -1):
        if messages[i].role == MessageRole.USER:
            at.add(i)
            break
    return tuple(sorted(at))


class HandOut:
    """The conversions of one session's messages and the view of its last fit (thread-safe).

    Each fit is converted once: its ``ChatMessage`` objects are shared by every read of it,
    except at :func:`edited_positions`, which are fresh copies on every read.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._templates: dict[str, tuple[Message, ChatMessage]] = {}
        self._result: MigrationResult | None = None
        self._shared: list[ChatMessage] = []
        self._fresh: tuple[int, ...] = ()
        self._handed: tuple[ChatMessage, ...] = ()  # the last read's fresh copies
        self._ids: set[int] = set()  # id() of every object the last read handed out

    @property
    def result(self) -> MigrationResult | None:
        """The fit last handed out (``None`` before the first)."""
        return self._result

    @property
    def markers(self) -> list[ChatMessage]:
        """This library's summaries and notes among the conversions (for ``set``)."""
        with self._lock:
            return [t for (m, t) in self._templates.values() if m.marker is not None]

    def template(self, message: Message) -> ChatMessage:
        """The cached conversion of ``message`` (shared: do not edit)."""
        hit = self._templates.get(message.id)
        if hit is not None and hit[0] is message:
            return hit[1]
        converted = to_chat_message(message)
        self._templates[message.id] = (message, converted)
        return converted

    def fresh(self, message: Message) -> ChatMessage:
        """A conversion of ``message`` free to edit."""
        return copy_message(self.template(message))

    def forget(self) -> None:
        """Drop everything (the session was replaced or deleted)."""
        with self._lock:
            self._templates = {}
            self._result = None
            self._shared = []
            self._fresh = ()
            self._handed = ()
            self._ids = set()

    def hand_out(
        self, result: MigrationResult, listener: ModelListener | None = None
    ) -> list[ChatMessage]:
        """A new list of ``result``'s messages (shared, fresh copies where LlamaIndex edits),
        published under ``listener`` (the guard and the model watcher find the memory so)."""
        with self._lock:
            stale: tuple[ChatMessage, ...] = ()  # the copies of the previous read of this fit
            if self._result is not result:
                shared = [self.template(m) for m in result.messages]
                fresh = edited_positions(shared)
                self._result, self._shared, self._fresh = result, shared, fresh
                self._ids = {id(t) for i, t in enumerate(shared) if i not in fresh}
            else:
                stale = self._handed
            out = self._shared.copy()
            for i in self._fresh:
                out[i] = copy_message(out[i])
            handed = tuple(out[i] for i in self._fresh)
            # the new copies are added before the stale ones go (a listener always finds them);
            # both are alive here, so no id of one can be an id of the other
            self._ids.update(map(id, handed))
            self._ids.difference_update(map(id, stale))
            self._handed = handed
            if listener is not None:
                publish(listener, self._shared, result.messages, self._fresh, out)
            return out

    def carried(self, messages: list[Any], exact: bool) -> bool:
        """Whether a chat call's ``messages`` carried the last read: with ``exact``, one of the
        very objects it handed out; else (engines that format the history into new objects) a
        message equal to the last one handed out.
        """
        handed = self._handed
        if self._result is None or not handed:
            return False
        if exact:
            ids = self._ids
            return any(id(m) in ids for m in messages)
        last = handed[-1]
        return any(isinstance(m, ChatMessage) and m == last for m in messages)
