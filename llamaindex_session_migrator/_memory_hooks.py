"""The memory's hooks into LlamaIndex: the ``tokenizer_fn`` engines measure their prompt with,
and the listener told about chat calls (both hold the memory weakly).
"""

from __future__ import annotations

import weakref
from typing import Any, Generic, Protocol, TypeVar

from llamaindex_session_migrator._models import DEFAULT_WINDOW
from llamaindex_session_migrator._tracking import ModelTracker
from session_migrator import TOKENS_PER_MESSAGE, default_counter

__all__ = ["HookedMemory", "MemoryListener", "PromptTokenizer", "unset_tokenizer"]


class HookedMemory(Protocol):
    """What the hooks read of the memory they serve (a ``SessionMigratorMemory``)."""

    @property
    def _tracker(self) -> ModelTracker: ...

    def _observe(self, messages: list[Any], model_dict: dict[str, Any], exact: bool) -> bool: ...


M = TypeVar("M", bound=HookedMemory)


class PromptTokenizer:
    """``tokenizer_fn`` for engines that measure their prefix messages (``SimpleChatEngine``):
    counts with the current model's counter, plus one message's chat-format overhead, so the
    prefix and the fitted history together stay within the budget.
    """

    def __init__(self, memory: HookedMemory) -> None:
        self._memory = weakref.ref(memory)

    def __call__(self, text: str) -> list[int]:
        memory = self._memory()
        window = memory._tracker.resolve()[0] if memory is not None else DEFAULT_WINDOW
        counter = default_counter(window)
        return [0] * (counter.count_text(text) + TOKENS_PER_MESSAGE + 1) if text else []


def unset_tokenizer(text: str) -> list[int]:
    """The placeholder ``tokenizer_fn`` between validation and ``model_post_init``."""
    raise RuntimeError("SessionMigratorMemory is not initialised yet")


class MemoryListener(Generic[M]):
    """Tells one memory (held weakly) about the chat calls that carried its history."""

    def __init__(self, memory: M) -> None:
        self._memory = weakref.ref(memory)

    @property
    def memory(self) -> M | None:
        """The memory (``None`` once it is gone): the guard reads its store and session id."""
        return self._memory()

    def on_chat_start(self, messages: list[Any], model_dict: dict[str, Any], exact: bool) -> bool:
        memory = self._memory()
        return memory._observe(messages, model_dict, exact) if memory is not None else False
