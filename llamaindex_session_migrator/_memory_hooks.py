"""The memory's hooks into LlamaIndex: the ``tokenizer_fn`` engines measure their prompt with,
and the listener told about chat calls (both hold the memory weakly).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from llamaindex_session_migrator._models import DEFAULT_WINDOW
from session_migrator import TOKENS_PER_MESSAGE, default_counter

if TYPE_CHECKING:
    from llamaindex_session_migrator._memory import SessionMigratorMemory

__all__ = ["MemoryListener", "PromptTokenizer", "unset_tokenizer"]


class PromptTokenizer:
    """``tokenizer_fn`` for engines that measure their prefix messages (``SimpleChatEngine``):
    counts with the current model's counter, plus one message's chat-format overhead, so the
    prefix and the fitted history together stay within the budget.
    """

    def __init__(self, memory: SessionMigratorMemory) -> None:
        self._memory = weakref.ref(memory)

    def __call__(self, text: str) -> list[int]:
        memory = self._memory()
        window = memory._tracker.resolve()[0] if memory is not None else DEFAULT_WINDOW
        counter = default_counter(window)
        return [0] * (counter.count_text(text) + TOKENS_PER_MESSAGE + 1) if text else []


def unset_tokenizer(text: str) -> list[int]:
    """The placeholder ``tokenizer_fn`` between validation and ``model_post_init``."""
    raise RuntimeError("SessionMigratorMemory is not initialised yet")


class MemoryListener:
    """Tells one memory (held weakly) about the chat calls that carried its history."""

    def __init__(self, memory: SessionMigratorMemory) -> None:
        self._memory = weakref.ref(memory)

    @property
    def memory(self) -> SessionMigratorMemory | None:
        """The memory (``None`` once it is gone): the guard reads its store and session id."""
        return self._memory()

    def on_chat_start(self, messages: list[Any], model_dict: dict[str, Any], exact: bool) -> bool:
        memory = self._memory()
        return memory._observe(messages, model_dict, exact) if memory is not None else False
