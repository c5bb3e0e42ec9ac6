"""``--recall-scope`` on ``sessions show`` and ``migrate``, end to end on a real SQLite store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from session_migrator.store import open_store
from tests.cli.test_sessions_cli import run
from tests.core.test_related import filled_sqlite


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return filled_sqlite(tmp_path / "cli.db")


def _excerpts(messages: list[dict[str, Any]]) -> list[str]:
    return [
        m["content"]
        for m in messages
        if m["role"] == "system" and "from other sessions" in str(m["content"])
    ]


def test_sessions_show_recalls_from_the_users_other_sessions(
    capsys: pytest.CaptureFixture[str], store_url: str
) -> None:
    show = ("sessions", "show", "today", "--model", "gpt-4o", "--strategy", "auto")
    code, out, _ = run(capsys, *show, "--recall-scope", "user", "--json", "--store", store_url)
    assert code == 0
    data = json.loads(out)
    (text,) = _excerpts(data["messages"])
    assert 'From your session "trip-planning" on 2026-11-22 (9 days ago):' in text
    assert "Hotel Sakura Kyoto" in text
    assert "Hotel Bobby" not in text
    assert "trip-1" in data["report"]["related_ids"]
    code, out, _ = run(capsys, *show, "--recall-scope", "user", "--store", store_url)
    assert code == 0
    assert "note: recalled" in out
    assert "'trip-planning' (2026-11-22)" in out
    # the default scope: only the session's own turns, as before
    code, out, _ = run(capsys, *show, "--json", "--store", store_url)
    data = json.loads(out)
    assert _excerpts(data["messages"]) == []
    assert data["report"]["related_ids"] == {}
    with open_store(store_url) as store:
        assert len(store.load("today")) == 4  # the store is not changed


def test_workspace_scope_stays_in_the_workspace(
    capsys: pytest.CaptureFixture[str], store_url: str
) -> None:
    show = ("sessions", "show", "today", "--model", "gpt-4o", "--strategy", "auto", "--json")
    code, out, _ = run(capsys, *show, "--recall-scope", "workspace", "--store", store_url)
    assert code == 0
    data = json.loads(out)
    (text,) = _excerpts(data["messages"])
    assert "Offsite" not in text
    assert set(data["report"]["related_ids"]) <= {"trip-1", "groceries", "bob-trip"}


def test_migrate_a_file_with_the_stored_sessions_user(
    capsys: pytest.CaptureFixture[str], store_url: str, tmp_path: Path
) -> None:
    exported = tmp_path / "today.json"
    s = ("--store", store_url)
    assert run(capsys, "sessions", "export", "today", "-o", str(exported), *s)[0] == 0
    migrate = ("migrate", str(exported), "--to", "gpt-4o")
    code, out, _ = run(capsys, *migrate, "--recall-scope", "user", "--session", "today", *s)
    assert code == 0
    assert "from other sessions  6 message(s) of 2 session(s)" in out
    code, out, _ = run(
        capsys, *migrate, "--recall-scope", "user", "--session", "today", "--json", *s
    )
    data = json.loads(out)
    assert list(data["report"]["related_ids"]) == ["trip-1", "ann-work"]
    assert "Hotel Sakura Kyoto" in _excerpts(data["messages"])[0]
    code, out, _ = run(capsys, *migrate, "--json")
    assert json.loads(out)["report"]["related_ids"] == {}
    assert "from other sessions" not in run(capsys, *migrate)[1]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("migrate", "FILE", "--to", "gpt-4o", "--recall-scope", "user"), "needs --session ID"),
        (("migrate", "FILE", "--to", "gpt-4o", "--session", "today"), "add --recall-scope"),
        (
            ("migrate", "FILE", "--to", "gpt-4o", "--recall-scope", "user", "--session", "nope"),
            "No session 'nope'",
        ),
        (("sessions", "show", "today", "--recall-scope", "user"), "needs --strategy"),
        (("sessions", "show", "today", "--recall-scope", "team"), "invalid choice: 'team'"),
    ],
)
def test_mistakes_are_one_line_errors(
    capsys: pytest.CaptureFixture[str],
    store_url: str,
    tmp_path: Path,
    argv: tuple[str, ...],
    message: str,
) -> None:
    exported = tmp_path / "today.json"
    exported.write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    argv = tuple(str(exported) if a == "FILE" else a for a in argv)
    try:
        code, _out, err = run(capsys, *argv, "--store", store_url)
    except SystemExit as exc:  # argparse refuses a choice itself
        code, err = int(exc.code or 0), capsys.readouterr().err
    assert code == 2
    assert message in err
    assert "Traceback" not in err
