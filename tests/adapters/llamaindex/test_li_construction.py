"""Making a SessionMigratorMemory: the constructor as ChatMemoryBuffer users write it, private
sessions by default, and mistakes that fail when the memory is made."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from llama_index.core.base.llms.types import ChatMessage, LLMMetadata
from llama_index.core.llms import MockLLM

from llamaindex_session_migrator import SessionMigratorMemory
from session_migrator import (
    SessionMigratorError,
    StoreError,
    UnknownModelError,
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


# -- private sessions by default -------------------------------------------------------------


def test_memories_made_without_a_key_share_nothing() -> None:
    alice = SessionMigratorMemory.from_defaults(llm=MockLLM())  # the default SQLite store
    bob = SessionMigratorMemory.from_defaults(llm=MockLLM())
    try:
        alice.put(ChatMessage(role="user", content="my card ends 4242"))
        assert alice.session_id != bob.session_id
        assert bob.get_all() == []
        assert bob.get() == []
        bob.put(ChatMessage(role="user", content="hello"))
        assert [m.content for m in alice.get()] == ["my card ends 4242"]
    finally:
        alice.close()
        bob.close()


def test_a_shared_conversation_needs_its_key(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    first = SessionMigratorMemory(chat_store_key="user-42", store=url)
    first.put(ChatMessage(role="user", content="remember me"))
    first.close()
    again = SessionMigratorMemory(chat_store_key="user-42", store=url)
    assert [m.content for m in again.get_all()] == ["remember me"]
    again.close()


def test_running_a_snippet_twice_starts_a_new_conversation(tmp_path: Path) -> None:
    snippet = textwrap.dedent(
        """
        from llama_index.core.llms import ChatMessage, MockLLM
        from llamaindex_session_migrator import SessionMigratorMemory

        memory = SessionMigratorMemory.from_defaults(llm=MockLLM())
        memory.put(ChatMessage(role="user", content="hello"))
        print(len(memory.get_all()))
        """
    )
    env = {"SESSION_MIGRATOR_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-c", snippet], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == "1"  # not 2: the first run's conversation is not continued
    assert (tmp_path / "home" / "sessions.db").exists()  # both were stored


# -- mistakes fail when the memory is made -----------------------------------------------------


def test_a_bad_store_url_fails_in_from_defaults() -> None:
    with pytest.raises(StoreError, match="unknown store URL"):
        SessionMigratorMemory.from_defaults(llm=MockLLM(), store="mysql://localhost/db")
    with pytest.raises(StoreError, match="three slashes"):
        SessionMigratorMemory(store="sqlite://sessions.db")
    with pytest.raises(TypeError, match="store URL"):
        SessionMigratorMemory(store=42)  # type: ignore[arg-type]


def test_a_sqlite_url_in_a_missing_folder_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    with pytest.raises(StoreError, match="does not exist"):
        SessionMigratorMemory.from_defaults(store=f"sqlite:///{missing / 's.db'}")
    assert not missing.exists()  # nothing made on the way
    SessionMigratorMemory(store=f"sqlite:///{tmp_path / 's.db'}").close()  # an existing folder


class _NoWindowLLM(MockLLM):
    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=-1, num_output=256, model_name="local-gguf")


def test_an_llm_without_a_window_is_refused_with_the_fix() -> None:
    with pytest.raises(UnknownModelError, match="context_window=-1") as caught:
        SessionMigratorMemory.from_defaults(llm=_NoWindowLLM(), store="memory://")
    assert "model=" in str(caught.value)
    # the fix it names: pin the window on the memory
    memory = SessionMigratorMemory.from_defaults(
        llm=_NoWindowLLM(), model="gpt-4o-mini", store="memory://"
    )
    memory.put(ChatMessage(role="user", content="hi"))
    assert [m.content for m in memory.get()] == ["hi"]
    assert memory.model_window is not None
    assert memory.model_window.name == "gpt-4o-mini"
