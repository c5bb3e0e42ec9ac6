"""``session-migrator facts list|set|delete``: a user's facts from the shell, on a real SQLite
store in the test's tmp dir."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from session_migrator import Message, SessionFitter
from session_migrator.cli import main
from session_migrator.store import open_store, user_facts


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'facts.db'}"


def test_the_facts_learnt_in_a_session_are_listed_edited_and_deleted(
    capsys: pytest.CaptureFixture[str], store_url: str
) -> None:
    store = open_store(store_url)
    fitter = SessionFitter("mon", store=store, metadata={"user_id": "ann"}, user_facts=True)
    fitter.append([Message("user", "I'm vegetarian, and my daughter is allergic to peanuts.")])
    store.close()

    code, out, _ = run(capsys, "facts", "list", "ann", "--store", store_url)
    assert code == 0
    assert "I'm vegetarian." in out
    assert "My daughter is allergic to peanuts." in out
    assert "2 fact(s) of user 'ann'" in out

    code, out, _ = run(capsys, "facts", "list", "ann", "--store", store_url, "--json")
    data = json.loads(out)
    assert data["user"] == "ann"
    assert data["count"] == 2
    by_key = {f["key"]: f for f in data["facts"]}
    assert by_key["i am vegetarian"]["source_id"]  # (the message it was read from)
    assert by_key["i am vegetarian"]["stated_at"]

    code, out, _ = run(
        capsys, "facts", "set", "ann", "i am vegetarian", "I eat fish now.", "--store", store_url
    )
    assert code == 0
    assert "I eat fish now." in out
    code, out, _ = run(capsys, "facts", "delete", "ann", "daughter allergic to peanuts",
                       "--store", store_url, "--json")  # fmt: skip
    assert json.loads(out) == {
        "user": "ann",
        "key": "daughter allergic to peanuts",
        "deleted": True,
    }

    with open_store(store_url) as again:
        facts = user_facts(again, "ann")
    assert [(f.key, f.text, f.source_id) for f in facts] == [
        ("i am vegetarian", "I eat fish now.", None)
    ]


def test_a_missing_fact_or_user_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], store_url: str
) -> None:
    code, out, _ = run(capsys, "facts", "list", "bob", "--store", store_url)
    assert code == 0
    assert "No facts kept for user 'bob'" in out
    code, _, err = run(capsys, "facts", "delete", "bob", "diet", "--store", store_url)
    assert code == 2
    assert err.startswith("error: user 'bob' has no fact 'diet'")
    assert "session-migrator facts list bob" in err
    code, _, err = run(capsys, "facts", "set", "bob", "diet", " ", "--store", store_url)
    assert code == 2
    assert "must not be empty" in err
    code, out, _ = run(capsys, "facts", "delete", "bob", "diet", "--store", store_url, "--json")
    assert code == 0
    assert json.loads(out)["deleted"] is False
