"""``session-migrator import``: into the store, idempotent, damaged files, migrate in one step."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from session_migrator import messages_from_openai
from session_migrator.cli import main
from session_migrator.cli._import_cmd import Progress
from session_migrator.store import open_store

FIXTURES = Path(__file__).parents[1] / "importers" / "fixtures"
CODEX = FIXTURES / "codex"
CLAUDE = FIXTURES / "claude_code"
CLAUDE_2X = FIXTURES / "claude_code_2x"
CLAUDE_SID = "5b1c9e2a-7d4f-4c3b-9a8e-1f2d3c4b5a69"
CLAUDE_FILE = CLAUDE / "-home-dev-shop" / f"{CLAUDE_SID}.jsonl"


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'sessions.db'}"


def test_import_a_directory_tree_then_again(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "codex", str(CODEX), "--store", store_url]) == 0
    out, err = capsys.readouterr()
    assert "imported 3 session(s), 21 messages, 21 new, from 3 file(s)" in out
    assert "gpt-5-codex" in out
    assert "line 13: the last line is cut short" in err
    with open_store(store_url) as store:
        sessions = {s.id: s for s in store.list_sessions()}
        assert len(sessions) == 3
        info = sessions["0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"]
        assert info.message_count == 10
        assert info.metadata["source_model"] == "gpt-5-codex"
        assert info.metadata["observed_input_tokens"] == 6321
        before = store.load(info.id)
    assert main(["import", "codex", str(CODEX), "--store", store_url]) == 0
    out, _ = capsys.readouterr()
    assert "21 messages, 0 new" in out
    with open_store(store_url) as store:
        assert store.load(info.id) == before  # idempotent: same ids, nothing added


def test_json_summary(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "claude-code", str(CLAUDE), "--store", store_url, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["store"] == store_url
    assert data["totals"]["files"] == 3
    assert data["totals"]["failed"] == 0
    by_id = {f["session_id"]: f for f in data["files"]}
    first = by_id[CLAUDE_SID]
    assert first["appended"] == first["messages"] == 10
    assert first["source_model"] == "claude-sonnet-4-5-20250929"
    assert first["skipped"]["off_branch"] == 2
    damaged = by_id["9d8e7f60-aaaa-4bbb-8ccc-ddddeeeeffff"]
    assert damaged["repaired"] == {"non_utf8_line": 1, "placeholder_result": 2}


def test_one_unreadable_file_is_a_clear_error_and_stores_nothing(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "rollout-bad.jsonl"
    bad.write_bytes(b"\x00\x01binary\xff")
    assert main(["import", "codex", str(bad), "--store", store_url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert "line 1: binary data" in err
    assert str(bad) in err
    assert "Traceback" not in err
    with open_store(store_url) as store:
        assert store.list_sessions(None) == []


def test_a_bad_file_among_good_ones_fails_alone(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "rollout-good.jsonl").write_bytes(
        (CODEX / "rollout-2025-05-20T09-15-00-legacy.jsonl").read_bytes()
    )
    (folder / "rollout-empty.jsonl").write_bytes(b"")
    assert main(["import", "codex", str(folder), "--store", store_url]) == 1
    out, err = capsys.readouterr()
    assert "1 file(s) failed" in out
    assert "rollout-empty.jsonl: line 1: empty file" in err
    with open_store(store_url) as store:
        assert [s.id for s in store.list_sessions()] == ["7c1f2a90-0000-4000-8000-00000000beef"]


def test_migrate_in_the_same_step(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "out.json"
    argv = ["import", "claude-code", str(CLAUDE_FILE), "--store", store_url]
    assert main([*argv, "--session-id", "handoff", "--to", "gpt-4o", "-o", str(out_file)]) == 0
    out = capsys.readouterr().out
    assert "migrated to gpt-4o: fits" in out
    messages = messages_from_openai(json.loads(out_file.read_text()))
    assert len(messages) == 10
    assert messages[1].tool_calls[0].id == "toolu_01Grep"
    with open_store(store_url) as store:
        assert store.get_session("handoff") is not None
        (record,) = store.migrations("handoff")
        assert (record.from_model, record.to_model, record.decision) == (
            "claude-sonnet-4-5-20250929",
            "gpt-4o",
            "fits",
        )


def _long_rollout(path: Path, turns: int) -> None:
    lines = [{"type": "session_meta", "payload": {"id": "long", "cwd": "/w"}}]
    lines.append({"type": "turn_context", "payload": {"model": "gpt-5-codex"}})
    for i in range(turns):
        for item in (
            {"type": "message", "role": "user", "content": f"step {i}: look at file {i}"},
            {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": f"c{i}"},
            {"type": "function_call_output", "call_id": f"c{i}", "output": f"line {i} " * 300},
            {"type": "message", "role": "assistant", "content": f"file {i} looks fine"},
        ):
            lines.append({"type": "response_item", "payload": item})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def test_a_long_session_is_compressed_for_a_small_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out_file = tmp_path / "rollout-long.jsonl", tmp_path / "small.json"
    _long_rollout(src, 60)
    argv = ["import", "codex", str(src), "--no-store", "--to", "gpt-4", "-o", str(out_file)]
    assert main([*argv, "--strategy", "trim", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    report = data["migration"]
    assert report["decision"] == "compressed"
    assert report["tokens_after"] <= report["budget"] < report["tokens_before"]
    assert data["store"] is None
    messages = messages_from_openai(json.loads(out_file.read_text()))
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    called = {c.id for m in messages for c in m.tool_calls}
    assert answered == called  # no orphan either way
    assert not (tmp_path / "sm-home").exists()  # --no-store opened nothing


def test_output_without_migration_writes_the_imported_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "session.json"
    argv = ["import", "claude-code", str(CLAUDE_FILE), "--no-store", "-o", str(out_file)]
    assert main(argv) == 0
    assert "wrote the imported messages" in capsys.readouterr().out
    assert len(json.loads(out_file.read_text())) == 10
    assert not list(tmp_path.glob(".session.json.tmp-*"))


def test_output_to_stdout_keeps_the_summary_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        main(["import", "claude-code", str(CLAUDE / "plain.jsonl"), "--no-store", "-o", "-"]) == 0
    )
    out, err = capsys.readouterr()
    assert [m["content"] for m in json.loads(out)] == ["hi", "Hello! How can I help?"]
    assert "imported 1 session(s)" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--session-id", "x"], "work on one session; the paths hold 3 files"),
        (["--to", "gpt-4o"], "work on one session"),
    ],
)
def test_one_session_options_refuse_many_files(
    extra: list[str], message: str, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "codex", str(CODEX), "--store", store_url, *extra]) == 2
    assert message in capsys.readouterr().err


def test_user_mistakes_end_with_one_line(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "codex", str(tmp_path / "absent"), "--store", store_url]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    (tmp_path / "empty-dir").mkdir()
    assert main(["import", "codex", str(tmp_path / "empty-dir"), "--store", store_url]) == 2
    assert "no .jsonl session files found" in capsys.readouterr().err
    argv = ["import", "claude-code", str(CLAUDE_FILE), "--no-store", "--to", "no-such-model-x"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Unknown model 'no-such-model-x'" in err
    assert "Pass --context-window N" in err
    assert "Traceback" not in err
    assert main([*argv, "--context-window", "8000"]) == 0
    capsys.readouterr()
    # fitting options without --to would do nothing: refused
    plain = ["import", "claude-code", str(CLAUDE_FILE), "--no-store"]
    for extra in (["--strategy", "trim"], ["--context-window", "8000"]):
        assert main([*plain, *extra]) == 2
        assert "add --to" in capsys.readouterr().err


def test_progress_bar() -> None:
    stream = io.StringIO()
    bar = Progress(4, stream, width=8)
    for name in ("a", "b", "c", "d"):
        bar.step(name)
    bar.done()
    text = stream.getvalue()
    assert "[##......] 1/4 a" in text
    assert "[########] 4/4 d" in text
    assert text.endswith("\r")


def test_python_dash_m_in_a_subprocess(tmp_path: Path) -> None:
    env = {**os.environ, "SESSION_MIGRATOR_HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [sys.executable, "-m", "session_migrator", "import", "claude-code", str(CLAUDE), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["totals"]["sessions"] == 3
    assert (tmp_path / "home" / "sessions.db").exists()


def test_sessions_are_counted_by_id_not_by_file(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # a project folder: a session, an older copy of it, and its two sub-agent transcripts
    project = tmp_path / "-home-dev-api"
    shutil.copytree(CLAUDE_2X / "-home-dev-api", project)
    sid = "7e1f3a20-5c4b-4d8e-9f10-2a3b4c5d6e7f"
    lines = (project / f"{sid}.jsonl").read_text().splitlines(keepends=True)
    (project / "copy-of-session.jsonl").write_text("".join(lines[:4]))
    assert main(["import", "claude-code", str(project), "--store", store_url, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["totals"]["files"] == 4
    assert data["totals"]["sessions"] == 3
    (copy,) = [f for f in data["files"] if f["path"].endswith("copy-of-session.jsonl")]
    assert copy["session_id"] == sid
    assert copy["appended"] == 0  # an older copy, imported after the session: nothing changes
    agents = [f for f in data["files"] if f["parent_session_id"] == sid]
    assert sorted(f["session_id"] for f in agents) == [
        f"{sid}/agent-a4e80a2",
        f"{sid}/agent-b71c9d0",
    ]
    with open_store(store_url) as store:
        ids = {s.id for s in store.list_sessions()}
    assert ids == {sid, f"{sid}/agent-a4e80a2", f"{sid}/agent-b71c9d0"}
    assert main(["import", "claude-code", str(project), "--store", store_url]) == 0
    assert "imported 3 session(s)" in capsys.readouterr().out


def test_an_imported_session_exported_as_markdown(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = "019c4e2a-8b71-7d30-a5f2-6c1e9d0b3a47"
    assert main(["import", "codex", str(FIXTURES / "codex_current"), "--store", store_url]) == 0
    capsys.readouterr()
    out = tmp_path / "MEMORY.md"
    args = ["sessions", "export", sid, "--store", store_url, "--format", "markdown"]
    assert main([*args, "-o", str(out), "--max-chars", "600"]) == 0
    assert f"wrote the memory document of session '{sid}'" in capsys.readouterr().out
    doc = out.read_text(encoding="utf-8")
    assert doc.startswith("# Invoice totals are off by a cent.")
    assert len(doc) <= 600
    assert main(args) == 0  # to stdout, the default size
    whole = capsys.readouterr().out
    assert "## Files touched" in whole
    assert "- `src/totals.py`: mentioned" in whole
    assert len(whole) > len(doc)
    assert main([*args[:-1], "openai", "--max-chars", "600"]) == 2
    assert "these shape --format markdown; add it" in capsys.readouterr().err
    assert main([*args, "--summarizer-model", "m"]) == 2
    assert "these configure --summarizer openai; add it" in capsys.readouterr().err
