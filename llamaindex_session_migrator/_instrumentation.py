"""Which model really ran: one instrumentation event handler for every memory in the process.

LlamaIndex emits ``LLMChatStartEvent`` before every chat call, with ``model_dict`` (the LLM's
``to_payload()``: class name plus its metadata) and the ``messages`` sent. A memory only cares
about the calls that carried its own fitted history, so each registered listener is asked
whether the event's messages contain what it handed out; the first that claims the event
records the model. Claims by identity (the very objects a memory handed out) are asked for
first, from every listener, before claims by equality (engines that format the history into new
messages): two memories whose conversations end alike cannot take each other's calls.
Listeners are held weakly: a memory that is gone stops listening.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Protocol

from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.llm import LLMChatStartEvent
from llama_index_instrumentation import get_dispatcher

__all__ = ["ModelListener", "listen", "unlisten"]


class ModelListener(Protocol):
    """Told about every chat call; returns whether the call carried its messages: the very
    objects it handed out (``exact``), or else equal ones."""

    def on_chat_start(
        self, messages: list[Any], model_dict: dict[str, Any], exact: bool
    ) -> bool: ...


class _ModelWatcher(BaseEventHandler):
    """The process-wide handler (registered once on the root dispatcher)."""

    @classmethod
    def class_name(cls) -> str:
        return "SessionMigratorModelWatcher"

    def handle(self, event: Any, **kwargs: Any) -> None:
        if not isinstance(event, LLMChatStartEvent):
            return
        with _lock:
            listeners = list(_listeners)
        for exact in (True, False):
            for listener in listeners:
                if listener.on_chat_start(event.messages, event.model_dict, exact):
                    return


_lock = threading.Lock()
_listeners: weakref.WeakSet[Any] = weakref.WeakSet()
_installed = False


def listen(listener: ModelListener) -> None:
    """Start telling ``listener`` about chat calls (the handler is installed on first use)."""
    global _installed
    with _lock:
        _listeners.add(listener)
        if _installed:
            return
        _installed = True
    get_dispatcher().add_event_handler(_ModelWatcher())


def unlisten(listener: ModelListener) -> None:
    """Stop telling ``listener``."""
    with _lock:
        _listeners.discard(listener)
