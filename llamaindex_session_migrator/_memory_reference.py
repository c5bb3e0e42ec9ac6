"""A memory serialized is a reference to its store and session, never a copy of the conversation.

``to_dict``/``to_string``/``pickle`` of a :class:`SessionMigratorMemory` (and a workflow
``Context`` holding one, whose ``to_dict`` calls the memory's) give a small dict: the session id,
the store's URL, the fitting options, and a token naming the live memory in this process.
Restoring it:

1. in the process that made it, while the memory is alive: that very memory (same store
   object, same LLM);
2. elsewhere: a new memory on the same store URL and session with the same options; the LLM
   object is not carried (the model comes from ``Settings.llm`` or the next chat call, as for a
   memory made without ``llm=``);
3. when that cannot work (a ``memory://`` store, a store object with no URL, a URL whose
   password is not written, a custom compressor or summarizer object): a
   :class:`MemoryNotRestorableError` saying why and what to do, never a silent empty memory.

A password is never written: a reference to ``postgresql://user:***@host/db`` reopens the store
named by ``SESSION_MIGRATOR_STORE`` when that is the same store.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import uuid
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from llamaindex_session_migrator._memory_options import FitOptions, from_settings
from llamaindex_session_migrator._tracking import ModelTracker
from session_migrator import ModelWindow, StoreError, open_store
from session_migrator.store import BaseSessionStore


class ReferencedMemory(Protocol):
    """What a reference reads of a memory (a ``SessionMigratorMemory``)."""

    chat_store_key: str
    token_limit: int
    _owns_store: bool

    @property
    def store(self) -> BaseSessionStore: ...

    @property
    def _options(self) -> FitOptions: ...

    @property
    def _tracker(self) -> ModelTracker: ...

    def class_name(self) -> str: ...


M = TypeVar("M", bound=ReferencedMemory)

__all__ = [
    "MemoryNotRestorableError",
    "ReferencedMemory",
    "is_reference",
    "live_memory",
    "live_token",
    "reference",
    "restore",
]

_FORMAT = "session-migrator/memory-reference/1"

_lock = threading.Lock()
_live: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()


class MemoryNotRestorableError(StoreError, TypeError):
    """A serialized memory cannot be reopened here (``reason`` says why). The conversation is
    still in its store: make the memory again and put it back (``ctx.store.set("memory", ...)``
    for a workflow ``Context``)."""

    def __init__(self, session_id: str, reason: str) -> None:
        self.session_id = session_id
        self.reason = reason
        super().__init__(
            f"cannot restore the memory of session {session_id!r}: {reason}. Its conversation "
            "is in its store: make the memory again on that store and session (e.g. "
            f"SessionMigratorMemory.from_defaults(chat_store_key={session_id!r}, store=...)) "
            "and set it where it belongs (for a workflow Context: "
            "await ctx.store.set('memory', memory))"
        )


def live_token(memory: object) -> str:
    """The token naming ``memory`` in this process (held weakly)."""
    with _lock:
        for token, alive in _live.items():
            if alive is memory:
                return token
        token = uuid.uuid4().hex
        _live[token] = memory
        return token


def _why_not_portable(memory: ReferencedMemory, url: str) -> str | None:
    options = memory._options
    if not url:
        return "its store object has no URL to reopen it by"
    if url.lower().startswith("memory:"):
        return "its memory:// store lives only in the process that made it"
    if not isinstance(options.strategy, str):
        return f"its strategy is a compressor object ({type(options.strategy).__name__})"
    if options.summarizer is not None:
        return f"its summarizer is an object ({type(options.summarizer).__name__})"
    if options.embeddings is not None and not from_settings(options.embeddings):
        return f"its embedding model is an object ({options.embeddings.key})"
    explicit = memory._tracker.explicit
    if explicit is not None and not isinstance(explicit, str | ModelWindow):
        return "its pinned model is an LLM object (pin a model name or a ModelWindow instead)"
    return None


def reference(memory: ReferencedMemory) -> dict[str, Any]:
    """The JSON-ready reference to ``memory`` (see the module docstring)."""
    store = memory.store
    url = store.url
    options = memory._options
    explicit = memory._tracker.explicit
    model: Any = None
    if isinstance(explicit, str):
        model = explicit
    elif isinstance(explicit, ModelWindow):
        model = dataclasses.asdict(explicit)
    return {
        "class_name": memory.class_name(),
        "format": _FORMAT,
        "chat_store_key": memory.chat_store_key,
        "store_url": url,
        "token_limit": memory.token_limit,
        "strategy": options.strategy if isinstance(options.strategy, str) else None,
        "reserve_output": options.reserve_output,
        "reserve_input": options.reserve_input,
        "workspace": options.workspace,
        "slack": options.slack,
        "model": model,
        "process_token": live_token(memory),
        "not_portable": _why_not_portable(memory, url),
    }


def is_reference(data: Mapping[str, Any]) -> bool:
    """Whether ``data`` is a reference made by :func:`reference`."""
    return data.get("format") == _FORMAT


def _store_from_environment(url: str) -> Any:
    """The store ``SESSION_MIGRATOR_STORE`` opens, when it is the one ``url`` displays."""
    env = os.environ.get("SESSION_MIGRATOR_STORE")
    if not env:
        return None
    store = open_store(env)
    if store.url == url:
        return store
    store.close()
    return None


def live_memory(token: object) -> Any:
    """The memory ``token`` names in this process, if it is alive."""
    with _lock:
        return _live.get(str(token))


def restore(cls: Callable[..., M], data: Mapping[str, Any]) -> M:
    """The memory ``data`` refers to (see the module docstring)."""
    session_id = str(data.get("chat_store_key"))
    with _lock:
        alive = _live.get(str(data.get("process_token")))
    if alive is not None and alive.chat_store_key == session_id:
        memory: M = alive
        return memory
    reason = data.get("not_portable")
    if reason:
        raise MemoryNotRestorableError(session_id, str(reason))
    url = str(data["store_url"])
    store: Any = url
    if ":***@" in url:
        store = _store_from_environment(url)
        if store is None:
            raise MemoryNotRestorableError(
                session_id,
                f"the password of {url} was not written; set SESSION_MIGRATOR_STORE to the "
                "store's full URL",
            )
    model = data.get("model")
    made = cls(
        chat_store_key=session_id,
        store=store,
        token_limit=data["token_limit"],
        strategy=data["strategy"],
        reserve_output=data["reserve_output"],
        reserve_input=data["reserve_input"],
        workspace=data["workspace"],
        slack=data["slack"],
        model=ModelWindow(**model) if isinstance(model, dict) else model,
    )
    if not isinstance(store, str):
        made._owns_store = True  # (opened here, for it)
    return made
