"""``session-migrator migrate`` and ``demo``: what a user runs, and what it writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from session_migrator import chat_rule_violations, counter_for, messages_from_openai
from session_migrator._demo import DEMO_FACTS, demo_messages
from session_migrator.cli import main


@pytest.fixture
def demo_file(tmp_path: Path) -> Path:
    path = tmp_path / "demo.json"
    path.write_text(json.dumps([m.to_openai() for m in demo_messages()]), encoding="utf-8")
    return path


def test_the_demo_conversation_is_long_and_realistic() -> None:
    messages = demo_messages()
    assert len(messages) >= 150
    assert counter_for("o200k_base").count_messages(messages) >= 40_000
    assert sum(1 for m in messages if m.tool_calls) >= 20
    assert max(counter_for("o200k_base").count_message(m) for m in messages) >= 10_000
    assert chat_rule_violations(messages) == []
    first = {name: next(i for i, m in enumerate(messages) if needle in m.text)
             for name, needle in DEMO_FACTS.items()}  # fmt: skip
    # facts the last question needs are stated early (the first messages) and along the way,
    # far from the end, where only a good migration keeps them
    assert sum(1 for i in first.values() if i < 10) >= 3
    assert sum(1 for i in first.values() if i < len(messages) * 0.75) >= 8


def test_migrate_writes_fitted_messages(
    demo_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.json"
    code = main(
        ["migrate", str(demo_file), "--to", "gpt-4", "--strategy", "recall", "-o", str(out)]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "compressed" in printed
    assert "recall" in printed
    migrated = messages_from_openai(json.loads(out.read_text(encoding="utf-8")))
    assert chat_rule_violations(migrated) == []
    assert counter_for("cl100k_base").count_messages(migrated) <= 8_192 - 2_048


def test_migrate_json_report(demo_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", str(demo_file), "--to", "gpt-4o", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    report = data["report"]
    assert report["decision"] == "compressed"
    assert report["tokens_after"] <= report["budget"] < report["tokens_before"]
    assert report["exact"] is True
    assert len(data["messages"]) == report["messages_after"]


def test_a_small_session_moves_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "small.json"
    messages = [{"role": "user", "content": "hi", "id": "u1"}]
    path.write_text(json.dumps(messages), encoding="utf-8")
    assert main(["migrate", str(path), "--to", "gpt-4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["report"]["decision"] == "fits"
    assert data["messages"] == [{"role": "user", "content": "hi", "id": "u1"}]


def test_reserve_output_and_explicit_window(
    demo_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["migrate", str(demo_file), "--to", "my-model", "--context-window", "10000",
            "--reserve-output", "1000", "--json"]  # fmt: skip
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)["report"]
    assert report["context_window"] == 10_000
    assert report["reserved_output"] == 1_000
    assert report["tokens_after"] <= report["budget"] <= 9_000


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["migrate", "missing.json", "--to", "gpt-4o"], "no such file"),
        (["migrate", "{bad}", "--to", "gpt-4o"], "not valid JSON"),
        (["migrate", "{msg}", "--to", "gpt-4o-mnii"], "gpt-4o-mini"),
        (["migrate", "{badrole}", "--to", "gpt-4o"], "message 0"),
    ],
)
def test_user_mistakes_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    (tmp_path / "bad.json").write_text("[{", encoding="utf-8")
    (tmp_path / "msg.json").write_text('[{"role": "user", "content": "x"}]', encoding="utf-8")
    (tmp_path / "badrole.json").write_text('[{"role": "robot", "content": "x"}]', encoding="utf-8")
    files = {"{bad}": "bad.json", "{msg}": "msg.json", "{badrole}": "badrole.json"}
    argv = [str(tmp_path / files[a]) if a in files else a for a in args]
    if argv[1] == "missing.json":
        argv[1] = str(tmp_path / "missing.json")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert needle in err
    assert "Traceback" not in err


def test_demo_runs_as_a_user_runs_it(tmp_path: Path) -> None:
    env = dict(os.environ, SESSION_MIGRATOR_HOME=str(tmp_path / "home"))
    result = subprocess.run(
        [sys.executable, "-m", "session_migrator", "demo"],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "178 messages" in out
    for model in ("gpt-4.1", "gpt-4o", "claude-3-haiku-20240307", "gpt-4"):
        assert model in out
    assert "Facts kept:" in out
    assert "Migration log in the store" in out
    assert (tmp_path / "home" / "sessions.db").is_file()  # stored in the embedded default


def test_lone_surrogates_are_written_and_shown_not_refused(tmp_path: Path) -> None:
    """JSON can carry a lone surrogate and UTF-8 cannot: the written file keeps it as a JSON
    escape (read back exactly), ``--json`` prints it so, and a table shows its escape.
    """
    messages: list[dict[str, str]] = [{"role": "system", "content": "You are terse."}]
    for i in range(40):
        topic = "the lockers code is 4412 \ud800" if i == 3 else f"topic {i}"
        messages.append({"role": "user", "content": f"{topic} " + "word " * 300})
        messages.append({"role": "assistant", "content": "noted " * 300})
    messages.append({"role": "user", "content": "What is the lockers code? \udfff"})
    source, out, store = tmp_path / "in.json", tmp_path / "out.json", tmp_path / "s.db"
    source.write_text(json.dumps(messages), encoding="utf-8")
    env = {**os.environ, "SESSION_MIGRATOR_HOME": str(tmp_path / "home"),
           "PYTHONIOENCODING": "utf-8"}  # fmt: skip

    def cli(*argv: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "session_migrator", *argv],
            env=env, capture_output=True, text=True, encoding="utf-8", errors="surrogateescape",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    cli("migrate", str(source), "--to", "gpt-3.5-turbo", "-o", str(out))
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written[-1]["content"] == "What is the lockers code? \udfff"
    assert any(m["content"].startswith("the lockers code is 4412 \ud800") for m in written)
    printed = json.loads(cli("migrate", str(source), "--to", "gpt-3.5-turbo", "--json"))
    assert printed["messages"][-1]["content"] == "What is the lockers code? \udfff"
    cli("sessions", "import", str(source), "--store", f"sqlite:///{store}", "--session-id", "s")
    shown = cli("sessions", "show", "s", "--store", f"sqlite:///{store}")
    assert "What is the lockers code? \\udfff" in shown


def test_what_migrate_writes_is_ready_to_send(demo_file: Path, tmp_path: Path) -> None:
    # plain OpenAI messages: no id, no session-migrator marker (a strict server rejects them)
    out, kept = tmp_path / "out.json", tmp_path / "kept.json"
    assert main(["migrate", str(demo_file), "--to", "gpt-4", "-o", str(out)]) == 0
    written = json.loads(out.read_text(encoding="utf-8"))
    allowed = {"role", "content", "name", "tool_calls", "tool_call_id"}
    assert all(set(m) <= allowed for m in written), [sorted(m) for m in written][:3]
    assert main(["migrate", str(demo_file), "--to", "gpt-4", "-o", str(kept), "--keep-ids"]) == 0
    assert all("id" in m for m in json.loads(kept.read_text(encoding="utf-8")))
