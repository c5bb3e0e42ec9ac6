"""The real Codex CLI (``@openai/codex`` from the npm registry, installed by ``.ci/run`` into
``.ci/agents``, or named by ``SESSION_MIGRATOR_CODEX_BIN``) resumes a session handed off to it:
``codex exec resume <id> "..."``, with a ``config.toml`` whose model provider points at a
loopback emulator of OpenAI's Responses API, sends the handed-off history (tool calls paired,
within the model's window), finishes the turn and writes its reply into the rollout file."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from session_migrator import Message, ToolCall, lookup_model
from session_migrator.importers import (
    handoff,
    import_claude_code,
    import_codex,
    write_claude_code,
    write_codex,
)
from session_migrator.importers._handoff import RESUME_PROMPT
from tests.conformance._anthropic_api import AnthropicEmulator
from tests.conformance._http import Text
from tests.conformance._models import ServedModel, _served
from tests.conformance._responses_api import ResponsesEmulator

ROOT = Path(__file__).resolve().parents[2]
CODEX = Path(
    os.environ.get(
        "SESSION_MIGRATOR_CODEX_BIN", ROOT / ".ci" / "agents" / "node_modules" / ".bin" / "codex"
    )
)
FIXTURES = ROOT / "tests" / "importers" / "fixtures"
CLAUDE = (
    FIXTURES / "claude_code_2x" / "-home-dev-api" / "7e1f3a20-5c4b-4d8e-9f10-2a3b4c5d6e7f.jsonl"
)
MODEL = "gpt-5-codex"
SMALL = "gpt-4o-mini"  # a 128k window: a long session must be fitted to it

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CODEX.exists() or shutil.which("node") is None,
        reason=f"the Codex CLI is not installed at {CODEX}, or node is missing (.ci/run installs "
        "@openai/codex with npm)",
    ),
]


class _Responses(ResponsesEmulator):
    """The Responses API emulator serving the OpenAI models of the bundled table (Codex's
    models included)."""

    def model_for(self, name: str) -> ServedModel | None:
        return _served(name, "openai") if name in (MODEL, SMALL) else None


def _codex_home(home: Path, api: ResponsesEmulator) -> Path:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model = "{MODEL}"\n'
        'model_provider = "loopback"\n\n'
        "[model_providers.loopback]\n"
        'name = "loopback"\n'
        f'base_url = "{api.url}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "LOOPBACK_API_KEY"\n',
        encoding="utf-8",
    )
    return codex_home


def _codex(home: Path, work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "LOOPBACK_API_KEY": "test-key",
        "NO_COLOR": "1",
    }
    env.pop("OPENAI_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    return subprocess.run(
        [str(CODEX), *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=180,
        check=False,
    )


def _resume(
    home: Path, work: Path, sid: str, prompt: str, model: str
) -> subprocess.CompletedProcess[str]:
    return _codex(home, work, "exec", "--skip-git-repo-check", "resume", "-m", model, sid, prompt)


def _turns(api: ResponsesEmulator, model: str, since: int = 0) -> list[dict[str, Any]]:
    """The bodies of the turns ``api`` accepted for ``model`` from request ``since`` on."""
    return [r.body for r in api.requests[since:] if not r.refused and r.body.get("model") == model]


def _paired(items: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    calls = [
        str(i["call_id"]) for i in items if i.get("type") in ("function_call", "custom_tool_call")
    ]
    outputs = [
        str(i["call_id"])
        for i in items
        if i.get("type") in ("function_call_output", "custom_tool_call_output")
    ]
    return calls, outputs


def test_codex_resumes_a_claude_code_session(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "api"
    work.mkdir()
    api = _Responses().start()
    try:
        _codex_home(home, api)
        # Codex has run here before (its state databases exist, as on a user's machine)
        api.script(Text("Hi."))
        first = _codex(home, work, "exec", "--skip-git-repo-check", "Say hi.")
        assert first.returncode == 0, first.stderr[-3000:]
        assert list((home / ".codex").glob("state_*.sqlite"))
        seen = len(api.requests)
        api.script(*[Text("We decided to allow '+' in EMAIL; the login test covers it.")] * 3)
        done = handoff(CLAUDE, to="codex", model=MODEL, home=home, cwd=str(work))
        assert done.commands[1].startswith(f"cd {work} && codex exec resume -m {MODEL} ")
        run = _resume(home, work, done.session_id, "What did we decide?", MODEL)
        assert run.returncode == 0, run.stderr[-3000:]
        assert "We decided to allow '+'" in run.stdout
        turns = _turns(api, MODEL, since=seen)
        assert turns, api.report()
        items = turns[0]["input"]
        sent = json.dumps(items)
        # the handed-off history: the user's question, the calls and their results, the answer
        assert "Why does login fail for users with a plus sign" in sent
        assert "The EMAIL pattern in src/auth/validate.py has no '+'" in sent
        calls, outputs = _paired(items)
        assert (
            calls == outputs == ["toolu_01ReadValidator", "toolu_01GrepRoute", "toolu_01ReadTests"]
        )
        assert "What did we decide?" in sent
        assert all(not r.refused for r in api.requests), api.report()
        # Codex wrote its turn into the handed-off file, read back by the importer
        written = import_codex(done.path)
        assert written.warnings == []  # the lines Codex 0.169 added are known
        back = written.session.messages
        assert back[-2].text == "What did we decide?"
        assert back[-1].text == "We decided to allow '+' in EMAIL; the login test covers it."
        assert back[-1].role == "assistant"
    finally:
        api.stop()


def _long_claude_session(turns: int) -> list[Message]:
    """A Claude Code session of ``turns`` steps, each a user message with a pasted log of about
    2.5k tokens and a ``Bash`` call: about 150k tokens for 60 steps."""
    messages = [Message("user", "We keep the codeword OSPREY-7 for this refactor.")]
    messages.append(Message("assistant", "Noted: OSPREY-7."))
    for k in range(turns):
        log = "\n".join(
            f"2026-03-0{k % 9 + 1} 12:{j % 60:02d} worker-{k} handled request {j} in {j * 7} ms"
            for j in range(150)
        )
        call = ToolCall(f"toolu_{k:03d}", "Bash", json.dumps({"command": f"rg -c slow log_{k}"}))
        messages += [
            Message("user", f"Step {k}: why is worker {k} slow? The log:\n{log}"),
            Message("assistant", "", tool_calls=(call,)),
            Message("tool", f"{k + 3}", tool_call_id=call.id),
            Message("assistant", f"Worker {k} has {k + 3} slow requests."),
        ]
    messages += [
        Message("user", "Last: which database did we pick?"),
        Message("assistant", "PostgreSQL 16, for the JSONB indexes."),
    ]
    return messages


def test_codex_resumes_a_long_session_fitted_to_its_window(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "repo"
    work.mkdir()
    long = _long_claude_session(60)
    _, source = write_claude_code(long, home=tmp_path / "claude", cwd=str(work), git_branch="main")
    api = _Responses().start()
    try:
        _codex_home(home, api)
        api.script(*[Text("We picked PostgreSQL 16.")] * 3)
        done = handoff(source, to="codex", model=SMALL, home=home)
        assert done.report.decision == "compressed"
        assert done.messages < done.source_messages
        assert done.report.tokens_after <= done.report.budget
        # the headless command the handoff printed, as printed, in a git checkout as a user's
        # project is (Codex's exec refuses to run outside one)
        subprocess.run(["git", "init", "-q", str(work)], check=True, capture_output=True)
        where, command = done.commands[1].split(" && ", 1)
        assert where == f"cd {shlex.quote(str(work))}"
        program, *args = shlex.split(command)
        assert program == "codex"
        run = _codex(home, work, *args)
        assert run.returncode == 0, run.stderr[-3000:]
        turns = _turns(api, SMALL)
        assert turns, api.report()
        window = lookup_model(SMALL).context_window
        assert all(not r.refused and r.prompt_tokens <= window for r in api.requests), api.report()
        items = turns[0]["input"]
        sent = json.dumps(items)
        assert "[session-migrator: summary of" in sent  # the compaction, as Codex sends its own
        assert "PostgreSQL 16, for the JSONB indexes." in sent  # the newest turns, whole
        assert "Step 59: why is worker 59 slow?" in sent
        texts = [
            part.get("text", "")
            for item in items
            if item.get("type") == "message"
            for part in item["content"]
        ]
        assert not any(t.startswith("Step 0: ") for t in texts)  # cut: the summary has its place
        calls, outputs = _paired(items)
        assert calls
        assert calls == outputs
        assert RESUME_PROMPT in sent
    finally:
        api.stop()


# -- between the real CLIs: each resumes a session the other wrote --------------------------------

CLAUDE_BIN = Path(
    os.environ.get(
        "SESSION_MIGRATOR_CLAUDE_BIN", ROOT / ".ci" / "agents" / "node_modules" / ".bin" / "claude"
    )
)
CLAUDE_MODEL = "claude-sonnet-4-20250514"
needs_claude = pytest.mark.skipif(
    not CLAUDE_BIN.exists(),
    reason=f"the Claude Code CLI is not installed at {CLAUDE_BIN} (.ci/run installs it)",
)


def _claude(home: Path, work: Path, api_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": "test-key",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    return subprocess.run(
        [str(CLAUDE_BIN), *args, "--model", CLAUDE_MODEL],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=180,
        check=False,
    )


@needs_claude
def test_claude_code_resumes_a_session_the_real_codex_wrote(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "repo"
    work.mkdir()
    responses, messages = _Responses().start(), AnthropicEmulator().start()
    try:
        _codex_home(home, responses)
        responses.script(Text("Noted: the codeword is HERON-9."))
        wrote = _codex(
            home, work, "exec", "--skip-git-repo-check", "Remember the codeword: HERON-9."
        )
        assert wrote.returncode == 0, wrote.stderr[-3000:]
        rollout = next((home / ".codex" / "sessions").rglob("rollout-*.jsonl"))
        imported = import_codex(rollout)
        assert imported.warnings == []
        # what the real file holds is kept: each message's time, the model of each answer, cwd
        assert all(m.timestamp is not None for m in imported.session.messages)
        answers = [m for m in imported.session.messages if m.role == "assistant"]
        assert answers
        assert all(m.extra.get("source_model") == MODEL for m in answers)
        assert imported.session.metadata["cwd"] == str(work)
        done = handoff(rollout, to="claude-code", model=CLAUDE_MODEL, home=home)
        assert done.cwd == str(work)
        messages.script(*[Text("The codeword is HERON-9.")] * 5)
        run = _claude(home, work, messages.url, "-p", "What is the codeword?", "--resume",
                      done.session_id)  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        assert "HERON-9" in run.stdout
        turns = [r.body for r in messages.accepted if r.body.get("model") == CLAUDE_MODEL]
        assert turns, messages.report()
        sent = json.dumps(turns[0]["messages"])
        assert "Remember the codeword: HERON-9." in sent
        assert "Noted: the codeword is HERON-9." in sent
        assert "What is the codeword?" in sent
    finally:
        responses.stop()
        messages.stop()


@needs_claude
def test_codex_resumes_a_session_the_real_claude_code_wrote(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "repo"
    work.mkdir()
    responses, messages = _Responses().start(), AnthropicEmulator().start()
    try:
        messages.script(*[Text("Noted: the codeword is KESTREL-5.")] * 5)
        wrote = _claude(home, work, messages.url, "-p", "Remember the codeword: KESTREL-5.")
        assert wrote.returncode == 0, wrote.stderr[-3000:]
        session = next((home / ".claude" / "projects").rglob("*.jsonl"))
        imported = import_claude_code(session).session
        assert all(m.timestamp is not None for m in imported.messages)
        answers = [m for m in imported.messages if m.role == "assistant"]
        assert answers
        assert all(m.extra.get("source_model") == CLAUDE_MODEL for m in answers)
        assert imported.metadata["cwd"] == str(work)
        _codex_home(home, responses)
        responses.script(*[Text("The codeword is KESTREL-5.")] * 3)
        done = handoff(session, to="codex", model=MODEL, home=home)
        assert done.cwd == str(work)
        run = _resume(home, work, done.session_id, "What is the codeword?", MODEL)
        assert run.returncode == 0, run.stderr[-3000:]
        assert "KESTREL-5" in run.stdout
        turns = _turns(responses, MODEL)
        assert turns, responses.report()
        sent = json.dumps(turns[0]["input"])
        assert "Remember the codeword: KESTREL-5." in sent
        assert "Noted: the codeword is KESTREL-5." in sent
        assert "What is the codeword?" in sent
    finally:
        responses.stop()
        messages.stop()


@needs_claude
def test_claude_code_resumes_a_long_codex_session_fitted_to_its_window(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "repo"
    work.mkdir()
    # a 150k-token Codex rollout: more than a 200k window holds beside Claude Code's own prompt,
    # tools and the 32k it asks for
    _, rollout = write_codex(
        _long_claude_session(60), codex_home=tmp_path / ".codex", cwd=str(work)
    )
    messages = AnthropicEmulator().start()
    try:
        messages.script(*[Text("We picked PostgreSQL 16.")] * 5)
        done = handoff(rollout, to="claude-code", model=CLAUDE_MODEL, home=home)
        assert done.report.decision == "compressed"
        run = _claude(home, work, messages.url, "-p", "What did we decide?", "--resume",
                      done.session_id)  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        assert all(not r.refused for r in messages.requests), messages.report()
        turns = [r for r in messages.accepted if r.body.get("model") == CLAUDE_MODEL]
        assert turns, messages.report()
        assert all(r.prompt_tokens + (r.max_tokens or 0) <= r.window for r in turns)
        sent = json.dumps(turns[0].body["messages"])
        assert "[session-migrator: summary of" in sent
        assert "PostgreSQL 16, for the JSONB indexes." in sent
        assert "Step 59: why is worker 59 slow?" in sent
        assert "What did we decide?" in sent
    finally:
        messages.stop()
