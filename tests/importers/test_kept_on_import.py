"""What the importers used to lose (issue 46): web searches and the structured results of tools.

Codex's ``web_search_call`` items (run by the API, with no result in the file) and Claude Code's
``server_tool_use`` / ``web_search_tool_result`` blocks become tool calls paired with a result
the model can read; Claude Code's ``toolUseResult`` objects and the JSON of earlier Codex shell
outputs are kept beside the result's text as ``extra["source_result"]``, which round-trips through
the store and is never sent to a model. The lines are written as the CLIs write them (shapes from
Codex's protocol and Claude Code 2.1's ``sdk-tools.d.ts``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from session_migrator import messages_to_openai
from session_migrator.importers import handoff, import_claude_code, import_codex
from session_migrator.store import open_store

SID = "0199c0de-0000-7000-8000-000000000046"
CC_SID = "46464646-0000-4000-8000-000000000046"


def _jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _codex_file(tmp_path: Path) -> Path:
    def item(ts: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": f"2026-03-02T09:{ts}Z", "type": "response_item", "payload": payload}

    return _jsonl(tmp_path / f"rollout-2026-03-02T09-00-00-{SID}.jsonl", [
        {"timestamp": "2026-03-02T09:00:00Z", "type": "session_meta",
         "payload": {"id": SID, "cwd": "/home/dev/shop", "cli_version": "0.169.1",
                     "base_instructions": {"text": "You are Codex."},
                     "git": {"branch": "main", "commit_hash": "3f9e1c2",
                             "repository_url": "git@github.com:dev/shop.git"}}},
        {"timestamp": "2026-03-02T09:00:01Z", "type": "turn_context",
         "payload": {"cwd": "/home/dev/shop", "model": "gpt-5.3-codex"}},
        item("00:02", {"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "Which Django is current?"}]}),
        item("00:03", {"type": "web_search_call", "id": "ws_01", "status": "completed",
                       "action": {"type": "search", "query": "django latest release"}}),
        item("00:04", {"type": "web_search_call", "id": "ws_02", "status": "completed",
                       "action": {"type": "open_page", "url": "https://www.djangoproject.com/"}}),
        item("00:05", {"type": "function_call", "name": "shell", "call_id": "call_pip",
                       "arguments": json.dumps({"command": ["pip", "show", "django"]})}),
        item("00:06", {"type": "function_call_output", "call_id": "call_pip",
                       "output": json.dumps({"output": "Version: 5.2\n",
                                             "metadata": {"exit_code": 0,
                                                          "duration_seconds": 0.4}})}),
        item("00:07", {"type": "message", "role": "assistant",
                       "content": [{"type": "output_text", "text": "Django 5.2; you have it."}]}),
    ])  # fmt: skip


def _claude_file(tmp_path: Path) -> Path:
    n = iter(range(1, 100))
    last: list[str | None] = [None]

    def entry(kind: str, message: dict[str, Any], **more: Any) -> dict[str, Any]:
        uid = f"c4600000-0000-4000-8000-{next(n):012d}"
        line = {"parentUuid": last[0], "isSidechain": False, "cwd": "/home/dev/shop",
                "sessionId": CC_SID, "version": "2.1.12", "gitBranch": "main", "type": kind,
                "uuid": uid, "timestamp": f"2026-03-02T10:00:{len(uid) % 60 + next(n):02d}Z",
                "message": message, **more}  # fmt: skip
        last[0] = uid
        return line

    def said(block: dict[str, Any]) -> dict[str, Any]:
        # Claude Code 2.x writes one entry per content block of a response
        return entry("assistant", {"id": "msg_search", "role": "assistant",
                                   "model": "claude-sonnet-4-5", "content": [block]})  # fmt: skip

    return _jsonl(tmp_path / f"{CC_SID}.jsonl", [
        entry("user", {"role": "user", "content": "Is our Django current? Fix settings too."}),
        said({"type": "text", "text": "Let me check the latest release."}),
        said({"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
              "input": {"query": "django latest release"}}),
        said({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
              "content": [{"type": "web_search_result", "title": "Django 5.2 released",
                           "url": "https://www.djangoproject.com/weblog/2025/apr/02/",
                           "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1", "page_age": "2025"}]}),
        said({"type": "text", "text": "Django 5.2 is current."}),
        said({"type": "tool_use", "id": "toolu_bash", "name": "Bash",
              "input": {"command": "pytest -q"}}),
        entry("user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_bash", "content": "..F"}]},
            toolUseResult={"stdout": "..F", "stderr": "", "interrupted": True,
                           "isImage": False}),
        entry("assistant", {"id": "msg_edit", "role": "assistant", "model": "claude-sonnet-4-5",
                            "content": [{"type": "tool_use", "id": "toolu_edit", "name": "Edit",
                                         "input": {"file_path": "/home/dev/shop/settings.py",
                                                   "old_string": "DEBUG = True",
                                                   "new_string": "DEBUG = False"}}]}),
        entry("user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_edit",
             "content": "The file /home/dev/shop/settings.py has been updated successfully."}]},
            toolUseResult={"filePath": "/home/dev/shop/settings.py", "oldString": "DEBUG = True",
                           "newString": "DEBUG = False",
                           "originalFile": "DEBUG = True\n" + "X = 1\n" * 5000,
                           "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1,
                                                "newLines": 1,
                                                "lines": ["-DEBUG = True", "+DEBUG = False"]}],
                           "userModified": False, "replaceAll": False}),
        entry("assistant", {"id": "msg_done", "role": "assistant", "model": "claude-haiku-4-5",
                            "content": [{"type": "text", "text": "Done: DEBUG is off."}]}),
    ])  # fmt: skip


def test_codex_web_searches_become_paired_calls(tmp_path: Path) -> None:
    result = import_codex(_codex_file(tmp_path))
    messages = result.session.messages
    assert "web_search_call" not in result.skipped
    # each call is answered before the next is made: call, result, call, result, ...
    roles = ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant"]
    assert [m.role for m in messages] == roles
    calls = [c for m in messages for c in m.tool_calls]
    assert [(c.id, c.name, json.loads(c.arguments)) for c in calls] == [
        ("ws_01", "web_search", {"type": "search", "query": "django latest release"}),
        ("ws_02", "web_search", {"type": "open_page", "url": "https://www.djangoproject.com/"}),
        ("call_pip", "shell", {"command": ["pip", "show", "django"]}),
    ]
    searched, opened, shell = (m for m in messages if m.role == "tool")
    assert searched.tool_call_id == "ws_01"
    assert "searched the web for 'django latest release'" in searched.text
    assert "opened https://www.djangoproject.com/" in opened.text
    assert searched.extra["source_result"] == {
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "django latest release"},
    }
    # an earlier release's JSON shell output: its output readable, its metadata kept apart
    assert shell.text == "Exit code: 0\nOutput:\nVersion: 5.2\n"
    assert shell.extra["source_result"] == {"metadata": {"exit_code": 0, "duration_seconds": 0.4}}
    # the model of each message, the commit and repository, the harness prompt
    assert messages[1].extra["source_model"] == messages[-1].extra["source_model"]
    assert messages[-1].extra["source_model"] == "gpt-5.3-codex"
    meta = result.session.metadata
    assert meta["git_commit"] == "3f9e1c2"
    assert meta["git_repository_url"] == "git@github.com:dev/shop.git"
    assert result.harness_prompt == "You are Codex."


def test_claude_code_server_searches_and_tool_results_are_kept(tmp_path: Path) -> None:
    result = import_claude_code(_claude_file(tmp_path))
    assert result.warnings == []
    assert "content:server_tool_use" not in result.skipped
    assert "content:web_search_tool_result" not in result.skipped
    messages = result.session.messages
    assert [(m.role, m.text) for m in messages] == [
        ("user", "Is our Django current? Fix settings too."),
        ("assistant", "Let me check the latest release."),
        ("tool", "Web search results:\n- Django 5.2 released: "
                 "https://www.djangoproject.com/weblog/2025/apr/02/ (2025)"),
        # the response goes on after the search's result, in its order
        ("assistant", "Django 5.2 is current."),
        ("tool", "..F\n[interrupted by the user]"),
        ("assistant", ""),
        ("tool", "The file /home/dev/shop/settings.py has been updated successfully."),
        ("assistant", "Done: DEBUG is off."),
    ]  # fmt: skip
    search, bash, edit = (m for m in messages if m.role == "tool")
    assert [c.name for c in messages[1].tool_calls] == ["web_search"]
    assert json.loads(messages[1].tool_calls[0].arguments) == {"query": "django latest release"}
    assert search.tool_call_id == "srvtoolu_01"
    # the encrypted page content is for the source model only
    assert search.extra["source_result"] == {
        "type": "web_search_tool_result",
        "results": [{"title": "Django 5.2 released", "page_age": "2025",
                     "url": "https://www.djangoproject.com/weblog/2025/apr/02/"}],
    }  # fmt: skip
    assert bash.extra["source_result"]["interrupted"] is True
    kept = edit.extra["source_result"]
    assert kept["structuredPatch"][0]["lines"] == ["-DEBUG = True", "+DEBUG = False"]
    assert "originalFile" not in kept  # the whole file before the edit: not kept
    assert [m.extra.get("source_model") for m in messages if m.role == "assistant"] == [
        "claude-sonnet-4-5", "claude-sonnet-4-5", "claude-sonnet-4-5", "claude-haiku-4-5",
    ]  # fmt: skip


def test_what_is_kept_round_trips_through_the_store_and_is_never_sent(tmp_path: Path) -> None:
    result = import_claude_code(_claude_file(tmp_path))
    with open_store(f"sqlite:///{tmp_path / 's.db'}") as store:
        result.save(store)
        back = store.load(result.session.id)
    assert [m.extra for m in back] == [m.extra for m in result.session.messages]
    sent = json.dumps(messages_to_openai(back, include_id=False))
    assert "source_result" not in sent
    assert "structuredPatch" not in sent


def test_a_handoff_writes_the_searches_as_calls_the_target_reads(tmp_path: Path) -> None:
    done = handoff(_claude_file(tmp_path), to="codex", model="gpt-5-codex", home=tmp_path)
    back = import_codex(done.path).session.messages
    calls = [c for m in back for c in m.tool_calls]
    assert [c.name for c in calls][:1] == ["web_search"]
    results = {m.tool_call_id: m.text for m in back if m.role == "tool"}
    assert "Django 5.2 released" in results["srvtoolu_01"]
    assert "Django 5.2 is current." in [m.text for m in back]


def test_a_session_the_real_claude_code_wrote_keeps_its_read_result(tmp_path: Path) -> None:
    # Claude Code 2.1.x, `claude -p` against a loopback Messages API emulator: a Read call, its
    # toolUseResult, and the harness's attachment entries (its agents' and skills' listings)
    path = next((Path(__file__).parent / "fixtures" / "claude_code_21").rglob("*.jsonl"))
    result = import_claude_code(path)
    assert result.warnings == []
    assert result.skipped["attachment:skill_listing"] == 1
    assert result.skipped["attachment:agent_listing_delta"] == 1
    read = next(m for m in result.session.messages if m.role == "tool")
    assert read.text == "1\tprint(1/0)\n2\t"
    assert read.extra["source_result"] == {
        "type": "text",
        "file": {"filePath": "/home/dev/app/app.py", "numLines": 2, "startLine": 1,
                 "totalLines": 2},
    }  # fmt: skip
