"""``migrate -o -``: the migrated messages on standard output, the report on standard error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from session_migrator import messages_from_openai
from session_migrator.cli import main

SMALL = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": "Hi."},
]


def test_migrate_dash_o_dash_writes_the_messages_to_standard_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "in.json"
    source.write_text(json.dumps(SMALL), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["migrate", str(source), "--to", "gpt-4o", "-o", "-"]) == 0
    out, err = capsys.readouterr()
    assert not (tmp_path / "-").exists()  # no file named '-'
    assert [m.text for m in messages_from_openai(json.loads(out))] == [
        "You are terse.",
        "hello",
        "Hi.",
    ]
    assert "fits" in err  # the report goes to standard error, out of the way of a pipe


def test_migrate_dash_o_dash_with_json_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.json"
    source.write_text(json.dumps(SMALL), encoding="utf-8")
    assert main(["migrate", str(source), "--to", "gpt-4o", "-o", "-", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "standard output" in err
