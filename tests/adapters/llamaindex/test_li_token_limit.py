"""token_limit as ChatMemoryBuffer users rely on it: tiny limits degrade, never fail."""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import ChatMessage

from llamaindex_session_migrator import SessionMigratorMemory


def _memory(token_limit: int, *contents: str) -> SessionMigratorMemory:
    history = [
        ChatMessage(role="user" if i % 2 == 0 else "assistant", content=c)
        for i, c in enumerate(contents)
    ]
    return SessionMigratorMemory.from_defaults(
        store="memory://", token_limit=token_limit, chat_history=history
    )


def test_a_limit_too_small_for_the_chat_format_keeps_fewer_messages_and_says_so() -> None:
    memory = _memory(5, "first message", "first answer", "second message", "second answer")
    got = memory.get()  # 5 tokens hold no message with its chat-format overhead
    assert [m.content for m in got] == ["second message", "second answer"]  # as upstream
    report = memory.last_report
    assert report is not None
    assert report.decision == "compressed"
    assert any("token_limit=5" in note for note in report.notes)
    assert len(report.dropped_ids) == 2
    assert len(memory.get_all()) == 4  # the log is whole
    tiny = _memory(1, "first message", "first answer", "second message", "second answer")
    assert [m.content for m in tiny.get()] == ["second answer"]  # nothing fits: the newest


def test_an_initial_token_count_over_the_limit_raises_as_upstream() -> None:
    memory = _memory(49, "hello")
    with pytest.raises(ValueError, match="Initial token count exceeds token limit"):
        memory.get(initial_token_count=50)
    assert [m.content for m in memory.get(initial_token_count=10)] == ["hello"]


def test_a_number_given_as_input_is_accepted() -> None:
    memory = _memory(1000, "hello", "hi")
    assert [m.content for m in memory.get(5)] == ["hello", "hi"]  # type: ignore[arg-type]
