"""A user's memory across sessions through the LangChain history: a new session of the same
user recalls an old session's exchange and is sent the facts the user stated there."""

from __future__ import annotations

from pathlib import Path

from langchain_session_migrator import FittedChatMessageHistory
from session_migrator.store import open_store


def test_a_new_session_recalls_the_users_old_one_and_their_facts(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    ann = {"user_id": "ann"}
    old = FittedChatMessageHistory(
        "mon", model="gpt-4o-mini", store=open_store(url), metadata=ann, user_facts=True
    )
    old.add_user_message("I'm vegetarian, and my daughter is allergic to peanuts.")
    old.add_ai_message("Noted.")
    old.add_user_message("Book the Sakura restaurant for Friday at 8.")
    old.add_ai_message("Booked the Sakura for Friday at 8.")
    old.close()
    new = FittedChatMessageHistory(
        "tue",
        model="gpt-4o-mini",
        store=open_store(url),  # (another process, a day later)
        metadata=ann,
        recall_scope="user",
        user_facts=True,
    )
    new.add_user_message("Which restaurant did you book for Friday?")
    sent = "\n".join(str(m.content) for m in new.messages)
    assert "Booked the Sakura for Friday at 8." in sent
    assert "- I'm vegetarian." in sent
    assert "- My daughter is allergic to peanuts." in sent
    bob = FittedChatMessageHistory(
        "bob-1", model="gpt-4o-mini", store=open_store(url), metadata={"user_id": "bob"},
        recall_scope="user", user_facts=True,
    )  # fmt: skip
    bob.add_user_message("Which restaurant did you book for Friday?")
    assert "Sakura" not in "\n".join(str(m.content) for m in bob.messages)  # never another's
