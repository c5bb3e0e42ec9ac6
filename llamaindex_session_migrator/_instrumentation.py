"""Which memory handed out a message, and which model really ran: one index for the process.

A memory *publishes* what each read hands out (:func:`publish`): the ``ChatMessage`` objects and
the stored core messages they stand for. The index maps each object to its publisher, so both
questions asked about a message list cost a dictionary lookup per message, whatever the number of
live memories:

- the guard (:class:`~llamaindex_session_migrator.FitToModelLLM`) asks :func:`lookup` which
  stored message a request message is, to reuse its stored id, cached count and the session's
  rolling summary;
- the instrumentation handler, told about every chat call (``LLMChatStartEvent``: the messages
  sent and the LLM's ``model_dict``), finds the memory whose history the call carried and tells
  that memory only. Claims by identity (the very objects a memory handed out) come first; else a
  message equal to the last one a memory handed out (engines that format the history into new
  objects: ``ContextChatEngine``).

Publishers are held weakly (a memory that is gone stops being found) and :func:`unlisten`
withdraws everything one published (``close()``).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.llm import LLMChatStartEvent
from llama_index_instrumentation import get_dispatcher

from session_migrator import Message

__all__ = ["Handout", "ModelListener", "listen", "lookup", "publish", "unlisten"]


class ModelListener(Protocol):
    """A memory's side of the index: told about the chat calls that carried its messages (the
    very objects it handed out with ``exact``, else equal ones); returns whether it claims it."""

    def on_chat_start(
        self, messages: list[Any], model_dict: dict[str, Any], exact: bool
    ) -> bool: ...


class Handout(NamedTuple):
    """What the index knows of one handed-out ``ChatMessage``."""

    #: the stored message it stands for (its id, its cached token count)
    core: Message
    #: the conversion it was made from: an object other than this one was edited in place when
    #: it no longer equals it
    template: ChatMessage
    #: the publisher (the memory's listener), held weakly
    owner: weakref.ref[Any]


class _Published:
    """One publisher's entries: the ids it holds in the index, its last template list and the
    copies of its last read."""

    __slots__ = ("copies", "equal_key", "ids", "ref", "templates")

    def __init__(self, ref: weakref.ref[Any]) -> None:
        self.ref = ref
        self.ids: set[int] = set()
        self.templates: list[ChatMessage] | None = None
        self.copies: tuple[ChatMessage, ...] = ()
        self.equal_key: tuple[str, str | None] | None = None


_lock = threading.RLock()  # (re-entrant: a collected publisher's callback may run inside)
#: id(ChatMessage) -> (the object, what it is); the object is kept to check the id is still its
_by_id: dict[int, tuple[ChatMessage, Handout]] = {}
#: (role, text) of the last message each publisher handed out -> the publisher
_by_last: dict[tuple[str, str | None], weakref.ref[Any]] = {}
_publishers: weakref.WeakKeyDictionary[Any, _Published] = weakref.WeakKeyDictionary()
_installed = False


def _equal_key(message: ChatMessage) -> tuple[str, str | None]:
    return (str(message.role.value), message.content)


def _add(state: _Published, message: ChatMessage, core: Message, template: ChatMessage) -> None:
    _by_id[id(message)] = (message, Handout(core, template, state.ref))
    state.ids.add(id(message))


def _remove(state: _Published, message: ChatMessage) -> None:
    hit = _by_id.get(id(message))
    if hit is not None and hit[0] is message:
        del _by_id[id(message)]
    state.ids.discard(id(message))


def _withdraw(state: _Published) -> None:
    for key in state.ids:
        hit = _by_id.get(key)
        if hit is not None and hit[1].owner is state.ref:
            del _by_id[key]
    state.ids.clear()
    if state.equal_key is not None and _by_last.get(state.equal_key) is state.ref:
        del _by_last[state.equal_key]
    state.equal_key = None


def publish(
    owner: ModelListener,
    templates: list[ChatMessage],
    core: Sequence[Message],
    fresh: Sequence[int],
    handed: Sequence[ChatMessage],
) -> None:
    """Record one read of ``owner``: ``templates[i]`` is the shared conversion of ``core[i]``
    and ``handed`` the list given out, where the positions ``fresh`` hold new copies.

    A warm read (``templates`` is the list published last) costs its copies only; a new fit one
    entry per message.
    """
    with _lock:
        state = _publishers.get(owner)
        if state is None:
            state = _Published(weakref.ref(owner, _forget))
            _publishers[owner] = state
        if state.templates is not templates:
            _withdraw(state)
            state.templates = templates
            skip = set(fresh)
            for i, template in enumerate(templates):
                if i not in skip:
                    _add(state, template, core[i], template)
        else:
            for copy in state.copies:
                _remove(state, copy)
        copies = []
        for i in fresh:
            _add(state, handed[i], core[i], templates[i])
            copies.append(handed[i])
        state.copies = tuple(copies)
        if state.equal_key is not None and _by_last.get(state.equal_key) is state.ref:
            del _by_last[state.equal_key]
        state.equal_key = _equal_key(handed[-1]) if handed else None
        if state.equal_key is not None:
            _by_last[state.equal_key] = state.ref


def _forget(ref: weakref.ref[Any]) -> None:
    """A publisher was collected: drop its entries (their ids may be reused)."""
    with _lock:
        for key in [k for k, (_, h) in _by_id.items() if h.owner is ref]:
            del _by_id[key]
        for last in [k for k, r in _by_last.items() if r is ref]:
            del _by_last[last]


def lookup(message: Any) -> Handout | None:
    """What ``message`` (this very object) stands for, if a live memory handed it out."""
    hit = _by_id.get(id(message))
    if hit is None or hit[0] is not message or hit[1].owner() is None:
        return None
    return hit[1]


class _ModelWatcher(BaseEventHandler):
    """The process-wide handler (registered once on the root dispatcher)."""

    @classmethod
    def class_name(cls) -> str:
        return "SessionMigratorModelWatcher"

    def handle(self, event: Any, **kwargs: Any) -> None:
        if not isinstance(event, LLMChatStartEvent):
            return
        messages = event.messages
        tried: set[int] = set()
        for message in messages:
            handout = lookup(message)
            owner = handout.owner() if handout is not None else None
            if owner is None or id(owner) in tried:
                continue
            tried.add(id(owner))
            if owner.on_chat_start(messages, event.model_dict, True):
                return
        for message in reversed(messages):
            ref = _by_last.get(_equal_key(message))
            owner = ref() if ref is not None else None
            if owner is not None and owner.on_chat_start(messages, event.model_dict, False):
                return


def listen(listener: ModelListener) -> None:
    """Install the instrumentation handler (once per process); ``listener`` is found through
    what it publishes."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    get_dispatcher().add_event_handler(_ModelWatcher())


def unlisten(listener: ModelListener) -> None:
    """Withdraw everything ``listener`` published: it is told about no more calls."""
    with _lock:
        state = _publishers.pop(listener, None)
        if state is not None:
            _withdraw(state)
