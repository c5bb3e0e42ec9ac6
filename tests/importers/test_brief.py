"""The hand-off brief (the Markdown memory of a session) on sessions written as Codex 0.169 and
Claude Code 2.1 write them: what a harness injected is not the user's words, work the final
answer closed is not open, the commands the agent ran, the files shell commands touched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from session_migrator import ExtractiveSummarizer, Message, counter_for, export_markdown
from session_migrator.importers import import_claude_code, import_codex
from session_migrator.importers._handoff import BRIEF_CHARS, handoff
from session_migrator.summaries._notes import own_words, useful
from tests.importers._rollout import CWD, SKILL, Rollout


def _section(doc: str, name: str) -> str:
    if f"## {name}\n" not in doc:
        return ""
    start = doc.index(f"## {name}\n")
    end = doc.find("\n## ", start + 1)
    return doc[start : end if end != -1 else len(doc)]


def _codex_session(tmp_path: Path) -> Path:
    r = Rollout()
    r.user("Add a hello.js that prints hello and wire it into the npm test script.")
    r.plan([("Create hello.js", "in_progress"), ("Run npm test", "pending")])
    r.shell("cat > hello.js <<'EOF'\nconsole.log('hello')\nEOF")
    r.patch(
        "*** Begin Patch\n*** Update File: package.json\n@@\n"
        '-    "test": "echo no tests"\n+    "test": "node hello.js"\n*** End Patch\n'
    )
    r.shell("npm test", exit_code=1, output="Error: Cannot find module 'hello'")
    r.shell("sed -n 1,40p package.json", output="{}")
    r.shell("npm test", output="hello")
    r.answer("hello.js prints hello and npm test runs it. I still need to run the build.")
    r.user("Release notes next, then check the build.", injected=SKILL)
    r.shell("npm run build", output="built in 1.2s")
    r.shell("git status --short", output=" M package.json")
    r.patch("*** Begin Patch\n*** Add File: NOTES.md\n+Added hello.js.\n*** End Patch\n")
    r.answer("Done: NOTES.md has the release notes and npm run build passes.")
    r.user("Actually we don't need hello.js, remove it.")
    r.plan([("Remove hello.js", "in_progress"), ("Run npm test again", "pending")])
    r.shell("rm hello.js && mv NOTES.md docs/NOTES.md")
    r.shell("npm test", output="ok")
    r.answer("Done: removed hello.js, moved the notes to docs/NOTES.md; npm test passes.")
    return r.write(tmp_path)


def test_injected_text_is_not_the_users_words(tmp_path: Path) -> None:
    session = import_codex(_codex_session(tmp_path)).session
    doc = export_markdown(session, max_chars=BRIEF_CHARS)
    assert doc.startswith("# Add a hello.js that prints hello and wire it into the npm test")
    assert "AGENTS.md" not in doc
    assert "INSTRUCTIONS" not in doc
    assert "environment_context" not in doc
    assert "<skill>" not in doc
    full = export_markdown(session)  # no size limit to hide them
    for rule in ("linter", "two-space", "named exports", "past tense", "ticket numbers"):
        assert rule not in full
    skill_turn = next(m for m in session.messages if m.text.startswith("<skill>"))
    assert own_words(skill_turn.text) == ""  # Codex writes a skill as a user turn of its own


def test_the_users_words_after_injected_context_are_kept() -> None:
    text = "<user_instructions>\nBe terse.\n</user_instructions>\n\nAdd a --json flag."
    assert own_words(text) == "Add a --json flag."
    ide = "# Context from my IDE setup:\n\n## Active file: a.ts\n\n## My request for Codex:\nFix it"
    assert own_words(ide) == "Fix it"
    assert own_words("Fix the <b> tag in index.html") == "Fix the <b> tag in index.html"
    doc = export_markdown([Message("user", text), Message("assistant", "Added it.")])
    assert doc.startswith("# Add a --json flag.\n")
    assert "terse" not in doc


def test_work_the_final_answer_closed_is_not_open(tmp_path: Path) -> None:
    doc = export_markdown(import_codex(_codex_session(tmp_path)).session, max_chars=BRIEF_CHARS)
    assert _section(doc, "Open tasks") == ""  # the plan's steps, "I still need to run the build"
    assert "npm test passes" in _section(doc, "Last exchange")


def test_an_open_plan_the_final_answer_leaves_open_stays(tmp_path: Path) -> None:
    r = Rollout()
    r.user("Port the build to esbuild.")
    r.plan([("Swap webpack for esbuild", "completed"), ("Update the CI job", "pending")])
    r.answer("Swapped webpack for esbuild; I could not update the CI job: it needs a token.")
    doc = export_markdown(import_codex(r.write(tmp_path)).session, max_chars=BRIEF_CHARS)
    assert "- [ ] Update the CI job" in _section(doc, "Open tasks")
    assert "Swap webpack" not in _section(doc, "Open tasks")  # completed


def test_the_commands_the_agent_ran(tmp_path: Path) -> None:
    doc = export_markdown(import_codex(_codex_session(tmp_path)).session, max_chars=BRIEF_CHARS)
    commands = _section(doc, "Commands").splitlines()[2:]
    assert commands[:2] == [
        "- `npm test`: passed (exit 0), 3 runs",  # the last run passed, the first failed
        "- `npm run build`: passed (exit 0)",
    ]
    listed = "\n".join(commands)
    assert "sed -n" not in listed
    assert "git status" not in listed
    assert len(doc) <= BRIEF_CHARS


def test_files_touched_through_shell_commands(tmp_path: Path) -> None:
    doc = export_markdown(import_codex(_codex_session(tmp_path)).session)
    files = _section(doc, "Files touched")
    assert "- `hello.js`: deleted\n" in files  # written by `cat >`, then `rm hello.js`
    assert "- `package.json`: edited" in files  # apply_patch
    assert "- `NOTES.md`: moved" in files  # added by a patch, then moved away
    assert "- `docs/NOTES.md`: written" in files


CLAUDE_ID = "5e460046-0000-4000-8000-000000000046"


def _claude_session(tmp_path: Path) -> Path:
    entries: list[dict[str, Any]] = []

    def add(kind: str, message: dict[str, Any], **extra: Any) -> None:
        n = len(entries)
        entries.append({
            "parentUuid": entries[-1]["uuid"] if entries else None, "isSidechain": False,
            "userType": "external", "cwd": CWD, "sessionId": CLAUDE_ID, "version": "2.1.37",
            "gitBranch": "main", "type": kind, "uuid": f"e0000000-0000-4000-8000-{n:012d}",
            "timestamp": f"2026-04-02T09:00:{n:02d}.000Z", "message": message, **extra,
        })  # fmt: skip

    def user(content: Any, **extra: Any) -> None:
        add("user", {"role": "user", "content": content}, **extra)

    def assistant(*blocks: dict[str, Any]) -> None:
        n = len(entries)
        add("assistant", {"model": "claude-sonnet-4-5-20250929", "id": f"msg_{n:04d}",
            "type": "message", "role": "assistant", "content": list(blocks),
            "stop_reason": None, "stop_sequence": None})  # fmt: skip

    def bash(command: str, result: str, *, error: bool = False) -> None:
        n = len(entries)
        assistant({"type": "tool_use", "id": f"toolu_{n:04d}", "name": "Bash",
                   "input": {"command": command, "description": "run"}})  # fmt: skip
        user([{"type": "tool_result", "tool_use_id": f"toolu_{n:04d}", "content": result,
               "is_error": error}])  # fmt: skip

    user(
        "Caveat: The messages below were generated by the user while running local commands. "
        "DO NOT respond to these messages or otherwise consider them in your response unless "
        "the user explicitly asks you to.",
        isMeta=True,
    )
    user("<command-name>/clear</command-name>\n            <command-message>clear"
         "</command-message>\n            <command-args></command-args>")  # fmt: skip
    user("<local-command-stdout></local-command-stdout>")
    user(
        "<system-reminder>\nAs you answer the user's questions, you can use the following "
        "context:\n# claudeMd\nAlways use pnpm, never npm.\n</system-reminder>\n"
        "Make the header sticky and keep the tests green."
    )
    n = len(entries)
    assistant({"type": "tool_use", "id": f"toolu_{n:04d}", "name": "TodoWrite", "input": {
        "todos": [{"content": "Make the header sticky", "status": "in_progress",
                   "activeForm": "Making the header sticky"},
                  {"content": "Run the tests", "status": "pending",
                   "activeForm": "Running the tests"}]}})  # fmt: skip
    user([{"type": "tool_result", "tool_use_id": f"toolu_{n:04d}",
           "content": "Todos have been modified successfully."}])  # fmt: skip
    bash("sed -i 's/relative/sticky/' src/Header.css", "")
    bash("pnpm test", "Exit code 1\nFAIL src/Header.test.tsx", error=True)
    bash("touch src/Header.snap && pnpm test -u", "Tests: 4 passed")
    user("Base directory for this skill: /home/dev/.claude/skills/commit\n\n# Commit\n"
         "Always sign off commits. Never push to main.", isMeta=True)  # fmt: skip
    assistant({"type": "text", "text": "Done: the header is sticky and all 4 tests pass."})
    (tmp_path / "-home-dev-web").mkdir(parents=True, exist_ok=True)
    path = tmp_path / "-home-dev-web" / f"{CLAUDE_ID}.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


def test_a_claude_code_brief(tmp_path: Path) -> None:
    session = import_claude_code(_claude_session(tmp_path)).session
    doc = export_markdown(session, max_chars=BRIEF_CHARS)
    assert doc.startswith("# Make the header sticky and keep the tests green.\n")
    full = export_markdown(session)
    for harness in ("Caveat", "command-name", "/clear", "system-reminder", "pnpm, never npm",
                    "sign off", "push to main", "Base directory"):  # fmt: skip
        assert harness not in full
    assert _section(doc, "Open tasks") == ""  # the to-do list, closed by the final answer
    commands = _section(doc, "Commands")
    assert "- `pnpm test`: failed (exit 1)" in commands
    assert "- `touch src/Header.snap && pnpm test -u`: passed" in commands
    files = _section(full, "Files touched")
    assert "- `src/Header.css`: edited" in files
    assert "- `src/Header.snap`: created" in files


REQUESTS = (
    "Add a /health endpoint to server.js that returns the git commit.",
    "Switch the logger from winston to pino, keep the JSON format.",
    "Make npm test run the integration tests under tests/integration too.",
    "Rename the config key DB_URL to DATABASE_URL everywhere.",
    "Cache the product list in Redis for five minutes.",
    "Add a Dockerfile based on node:22-alpine with a non-root user.",
    "Bump express to version 5 and fix what breaks.",
    "Write a README section on running the service locally.",
)


def test_a_handoff_to_an_8k_model_keeps_every_request(tmp_path: Path) -> None:
    r = Rollout()
    for k, request in enumerate(REQUESTS):
        r.user(request)
        for j in range(3):
            lines = (
                f"const v{i} = require('./dep{i}'); // line {i} of module {k}" for i in range(60)
            )
            r.shell(f"sed -n 1,200p src/mod{k}_{j}.js", output="\n".join(lines))
        r.shell("npm test", output="\n".join(f"ok {i} test case {i} passes" for i in range(40)))
        r.answer(f"Done with request {k}: changed src/mod{k}_0.js; the tests pass. " * 8)
    done = handoff(r.write(tmp_path), to="claude-code", model="apertus-8b-instruct", home=tmp_path)
    assert done.report.context_window == 8192
    assert done.report.summary is not None  # the earlier turns were cut, and summarized
    assert done.report.tokens_after <= done.report.budget
    written = done.path.read_text()
    for request in REQUESTS:  # each request, cut or kept, reaches the written file
        assert json.dumps(request)[1:-1] in written
    summary = done.report.summary["text"]
    assert summary.startswith("Requests:\n")  # before any other detail
    assert "AGENTS.md" not in summary
    assert "linter" not in summary


def test_the_summary_of_a_cut_part_sees_shell_files(tmp_path: Path) -> None:
    session = import_codex(_codex_session(tmp_path)).session
    summary = ExtractiveSummarizer(requests=True).summarize(
        session.messages, max_tokens=400, counter=counter_for("o200k_base")
    )
    files = summary[summary.index("Files:") :]
    assert "`hello.js`: deleted" in files  # `cat > hello.js`, then `rm hello.js`
    assert "`docs/NOTES.md`: written" in files
    requests = summary[: summary.index("\n", summary.index("Actually we don't need"))]
    assert requests.startswith("Requests:\n")
    for asked in ("Add a hello.js", "Release notes next", "Actually we don't need hello.js"):
        assert asked in requests  # every request, done or not, first
    assert "linter" not in summary  # the AGENTS.md skill rules are no request


def test_a_command_is_useful_by_its_words_not_its_paths() -> None:
    assert useful("npm run build")
    assert useful("python -m pytest tests/unit -q")
    assert useful("cd web && ./gradlew build")
    assert not useful("cp build/app.js dist/app.js")
    assert not useful("git commit -m 'run the tests'")
