"""The Gemini CLI writer: a Claude Code or Codex session written as Gemini CLI's own session file
(``~/.gemini/tmp/<project>/chats/session-*.jsonl``), read back as Gemini CLI reads it on
``--resume`` (the history it sends: user and model turns, each ``functionCall`` answered by a
``functionResponse`` with its id and name in the next turn), tools in Gemini CLI's vocabulary."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from session_migrator import Message, ToolCall
from session_migrator.cli import main
from session_migrator.importers import (
    gemini_chats_dir,
    handoff,
    import_claude_code,
    write_gemini,
)

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE = FIXTURES / "claude_code" / "-home-dev-shop" / "5b1c9e2a-7d4f-4c3b-9a8e-1f2d3c4b5a69.jsonl"
CODEX = next((FIXTURES / "codex_current" / "2026").rglob("rollout-*.jsonl"))


def _load(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The metadata line and the message records, as Gemini CLI's loadConversationRecord reads
    them (a line with an ``id`` is a message record)."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    meta = lines[0]
    assert "id" not in meta
    assert {"sessionId", "projectHash"} <= set(meta)
    return meta, lines[1:]


def _history(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history Gemini CLI sends on resume (its convertSessionToClientHistory for records
    without ``functionCall`` parts in their content)."""
    out: list[dict[str, Any]] = []
    for r in records:
        if r["type"] == "user":
            out.append({"role": "user", "parts": r["content"]})
        elif r["type"] == "gemini":
            calls = r.get("toolCalls", [])
            parts = [*r["content"]]
            parts += [{"functionCall": {"id": c["id"], "name": c["name"], "args": c["args"]}}
                      for c in calls]  # fmt: skip
            out.append({"role": "model", "parts": parts})
            responses = [p for c in calls for p in c["result"]]
            if responses:
                out.append({"role": "user", "parts": responses})
    return out


def _check_paired(history: list[dict[str, Any]]) -> None:
    assert history[0]["role"] == "user"
    for k, turn in enumerate(history):
        calls = [p["functionCall"] for p in turn["parts"] if "functionCall" in p]
        if calls:
            answers = [p["functionResponse"] for p in history[k + 1]["parts"]]
            assert [(a["id"], a["name"]) for a in answers] == [(c["id"], c["name"]) for c in calls]


def test_a_claude_code_session_is_written_where_gemini_cli_resumes_it(tmp_path: Path) -> None:
    source = import_claude_code(CLAUDE).session
    done = handoff(CLAUDE, to="gemini-cli", model="gemini-2.5-flash", home=tmp_path)
    gemini = tmp_path / ".gemini"
    assert json.loads((gemini / "projects.json").read_text()) == {
        "projects": {"/home/dev/shop": "shop"}
    }
    assert (gemini / "tmp" / "shop" / ".project_root").read_text() == "/home/dev/shop"
    assert done.path.parent == gemini / "tmp" / "shop" / "chats"
    assert done.path.name.startswith("session-")
    assert done.path.name.endswith(f"-{done.session_id[:8]}.jsonl")
    uuid.UUID(done.session_id)
    assert done.commands == (
        f"cd /home/dev/shop && gemini --resume {done.session_id} -m gemini-2.5-flash",
        f"cd /home/dev/shop && gemini --resume {done.session_id} -m gemini-2.5-flash "
        "-p 'Where were we? Continue from the last state.'",
    )
    meta, records = _load(done.path)
    assert meta["sessionId"] == done.session_id
    assert meta["projectHash"] == hashlib.sha256(b"/home/dev/shop").hexdigest()
    assert meta["kind"] == "main"
    history = _history(records)
    _check_paired(history)
    calls = [c for r in records for c in r.get("toolCalls", [])]
    # Claude Code's tools in Gemini CLI's vocabulary, their results kept with them
    assert [c["name"] for c in calls] == [
        "grep_search", "read_file", "run_shell_command", "replace",
    ]  # fmt: skip
    assert calls[0]["args"] == {"pattern": "coupon", "dir_path": "src"}
    assert calls[2]["status"] == "error"
    assert calls[3]["args"]["old_string"] == "coupon.amount * 100"
    # the conversation arrives: every user text and answer, with its source time
    texts = [p["text"] for t in history for p in t["parts"] if "text" in p]
    for m in source.messages:
        if m.role in ("user", "assistant") and m.text and isinstance(m.content, str):
            assert m.text in texts
    assert records[0]["timestamp"] == "2025-09-03T10:00:01.000Z"
    image = records[3]["content"][1]
    assert image["inlineData"]["mimeType"] == "image/png"


def test_a_codex_session_maps_its_shell_calls(tmp_path: Path) -> None:
    done = handoff(CODEX, to="gemini-cli", model="gemini-2.5-pro", home=tmp_path)
    _, records = _load(done.path)
    _check_paired(_history(records))
    names = {c["name"] for r in records for c in r.get("toolCalls", [])}
    assert "run_shell_command" in names
    assert not names & {"shell_command", "exec_command", "shell"}
    assert all(r["type"] in ("user", "gemini") for r in records)


def test_the_project_id_gemini_cli_gave_is_reused_and_a_taken_one_is_not(tmp_path: Path) -> None:
    gemini = tmp_path / ".gemini"
    (gemini / "tmp" / "api").mkdir(parents=True)
    (gemini / "tmp" / "api" / ".project_root").write_text("/srv/other/api")
    (gemini / "projects.json").write_text(json.dumps({"projects": {"/home/dev/web": "web-2"}}))
    assert gemini_chats_dir(gemini, "/home/dev/web") == gemini / "tmp" / "web-2" / "chats"
    assert gemini_chats_dir(gemini, "/home/dev/api") == gemini / "tmp" / "api-1" / "chats"
    registry = json.loads((gemini / "projects.json").read_text())["projects"]
    assert registry == {"/home/dev/web": "web-2", "/home/dev/api": "api-1"}
    # a folder Gemini CLI marked for the project (no registry entry) is found by its marker
    (gemini / "tmp" / "mine").mkdir()
    (gemini / "tmp" / "mine" / ".project_root").write_text("/home/dev/mine")
    assert gemini_chats_dir(gemini, "/home/dev/mine") == gemini / "tmp" / "mine" / "chats"


def test_unmapped_calls_keep_their_name_and_system_text_is_read(tmp_path: Path) -> None:
    messages = [
        Message("system", "Be brief."),
        Message("user", "Patch it."),
        Message("assistant", "", tool_calls=(ToolCall("c1", "apply_patch", '{"input": "x"}'),)),
        Message("tool", "Done", tool_call_id="c1"),
        Message("assistant", "Patched."),
    ]
    _sid, path = write_gemini(messages, cwd="/w", home=tmp_path, model="gemini-2.5-pro")
    _, records = _load(path)
    assert records[0]["content"] == [{"text": "[system] Be brief."}]
    (call,) = records[2]["toolCalls"]
    assert (call["name"], call["args"]) == ("apply_patch", {"input": "x"})
    assert call["result"][0]["functionResponse"]["response"] == {"output": "Done"}
    assert records[3]["content"] == [{"text": "Patched."}]
    assert records[3]["model"] == "gemini-2.5-pro"
    with pytest.raises(ValueError, match="UUID"):
        write_gemini(messages, cwd="/w", home=tmp_path, session_id="not-a-uuid")


def test_the_cli_hands_off_to_gemini_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["handoff", str(CLAUDE), "--to", "gemini-cli", "--model", "gemini-2.5-flash",
         "--home", str(tmp_path), "--no-brief"]
    )  # fmt: skip
    assert code == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("cd /home/dev/shop && gemini --resume ")
    assert list((tmp_path / ".gemini" / "tmp" / "shop" / "chats").glob("session-*.jsonl"))
