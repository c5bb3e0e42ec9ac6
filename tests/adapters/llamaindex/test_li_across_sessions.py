"""A user's memory across sessions through ``SessionMigratorMemory``: a new memory of the same
user recalls an old session's exchange and is sent the facts the user stated there (LlamaIndex's
own fact block lives in one memory); ``FittedMemory`` says which memory does this."""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.llms import ChatMessage, MockLLM

from llamaindex_session_migrator import FittedMemory, SessionMigratorMemory
from session_migrator.store import open_store


def _memory(url: str, key: str, **kwargs: object) -> SessionMigratorMemory:
    return SessionMigratorMemory.from_defaults(
        llm=MockLLM(), model="gpt-4o-mini", store=open_store(url), chat_store_key=key, **kwargs
    )


def test_a_new_memory_recalls_the_users_old_session_and_their_facts(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    ann = {"user_id": "ann"}
    old = _memory(url, "mon", metadata=ann, user_facts=True)
    for role, text in [
        ("user", "I'm vegetarian, and my daughter is allergic to peanuts."),
        ("assistant", "Noted."),
        ("user", "Book the Sakura restaurant for Friday at 8."),
        ("assistant", "Booked the Sakura for Friday at 8."),
    ]:
        old.put(ChatMessage(role=role, content=text))
    new = _memory(url, "tue", metadata=ann, recall_scope="user", user_facts=True)
    new.put(ChatMessage(role="user", content="Which restaurant did you book for Friday?"))
    sent = "\n".join(str(m.content) for m in new.get())
    assert "Booked the Sakura for Friday at 8." in sent
    assert "- I'm vegetarian." in sent


def test_fitted_memory_points_to_the_memory_that_does_it() -> None:
    with pytest.raises(ValueError, match="SessionMigratorMemory"):
        FittedMemory.from_defaults(
            llm=MockLLM(), model="gpt-4o-mini", store="memory://", recall_scope="user"
        )
