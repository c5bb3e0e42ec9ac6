"""Making a SessionMigratorMemory: the constructor as ChatMemoryBuffer users write it, private
sessions by default, and mistakes that fail when the memory is made."""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.base.llms.types import ChatMessage

from llamaindex_session_migrator import SessionMigratorMemory
from session_migrator import (
    SessionMigratorError,
    check_strategy,
    open_store,
)


def _turns(n: int) -> list[ChatMessage]:
    out = []
    for i in range(n):
        out.append(ChatMessage(role="user", content=f"question {i}: " + "blah " * 40))
        out.append(ChatMessage(role="assistant", content=f"answer {i}: " + "word " * 40))
    return out


# -- the direct constructor ------------------------------------------------------------------


def test_the_constructor_honours_every_argument_as_from_defaults_does(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    options = {"store": url, "strategy": "trim", "reserve_input": 700, "model": "gpt-4"}
    direct = SessionMigratorMemory(chat_store_key="direct", **options)
    made = SessionMigratorMemory.from_defaults(chat_store_key="made", **options)
    for memory in (direct, made):
        memory.put_messages(_turns(60))
        memory.get()
    reports = [direct.last_report, made.last_report]
    assert reports[0] is not None
    assert reports[1] is not None
    assert [r.strategy for r in reports] == ["trim", "trim"]
    assert reports[0].budget == reports[1].budget
    loose = SessionMigratorMemory(chat_store_key="loose", store=url, model="gpt-4", reserve_input=0)
    loose.put_messages(_turns(60))
    loose.get()
    assert loose.last_report is not None
    assert loose.last_report.budget - reports[0].budget == 700  # reserve_input was used
    for memory in (direct, made, loose):
        memory.close()
    with open_store(url) as store:  # written to the store given, not the default file
        assert {s.id for s in store.list_sessions()} == {"direct", "made", "loose"}
        assert len(store.load("direct")) == 120


def test_unknown_keywords_are_a_type_error_naming_what_is_taken() -> None:
    with pytest.raises(TypeError, match="chat_store_key") as caught:
        SessionMigratorMemory(session_id="user-1", store="memory://")
    message = str(caught.value)
    assert "session_id" in message
    for name in ("store", "strategy", "reserve_input", "token_limit", "llm"):
        assert name in message
    assert isinstance(caught.value, SessionMigratorError)
    with pytest.raises(TypeError, match="bogus"):
        SessionMigratorMemory.from_defaults(bogus=1, store="memory://")
    with pytest.raises(ValueError, match="Unexpected kwargs"):  # as LlamaIndex raises it
        SessionMigratorMemory.from_defaults(bogus=1, store="memory://")


def test_a_wrong_option_given_to_the_constructor_fails_there() -> None:
    with pytest.raises(ValueError, match="reserve_input"):
        SessionMigratorMemory(store="memory://", reserve_input=1.5)
    with pytest.raises(ValueError, match="reserve_output"):
        SessionMigratorMemory(store="memory://", reserve_output=-1)
    with pytest.raises(ValueError, match="slack"):
        SessionMigratorMemory(store="memory://", slack=0.9)
    with pytest.raises((ValueError, TypeError)):
        check_strategy("shorten")
    with pytest.raises((ValueError, TypeError), match="shorten"):
        SessionMigratorMemory(store="memory://", strategy="shorten")
