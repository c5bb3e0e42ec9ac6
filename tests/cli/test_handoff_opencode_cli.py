"""The real OpenCode (``opencode-ai`` 1.18 from the npm registry, installed by ``.ci/run`` into
``.ci/agents``, or named by ``SESSION_MIGRATOR_OPENCODE_BIN``) resumes a session handed off to it
and sends it to a model: ``opencode import <file>`` then ``opencode run --session <id> "..."``,
with an ``opencode.json`` whose custom provider (``@ai-sdk/openai-compatible``, bundled in
OpenCode's binary: nothing is fetched at run time) points at a loopback emulator of OpenAI's Chat
Completions API. The check: the handed-off history arrives (tool calls paired as ``tool_calls``
and ``tool`` messages, within the model's window), and OpenCode writes the reply into its own
storage (``opencode export <id>`` gives it back)."""

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
from session_migrator.importers import handoff, write_codex
from session_migrator.importers._handoff import RESUME_PROMPT
from tests.conformance._http import Text
from tests.conformance._openai_api import OpenAIEmulator

ROOT = Path(__file__).resolve().parents[2]
OPENCODE = Path(
    os.environ.get(
        "SESSION_MIGRATOR_OPENCODE_BIN",
        ROOT / ".ci" / "agents" / "node_modules" / ".bin" / "opencode",
    )
)
FIXTURES = ROOT / "tests" / "importers" / "fixtures"
CLAUDE = FIXTURES / "claude_code" / "-home-dev-shop" / "5b1c9e2a-7d4f-4c3b-9a8e-1f2d3c4b5a69.jsonl"
#: the emulator's model, served under OpenCode's custom provider ``loopback``
MODEL_ID = "gpt-4o-mini"  # a 128k window: the long session must be fitted to it
MODEL = f"loopback/{MODEL_ID}"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not OPENCODE.exists() or shutil.which("node") is None,
        reason=f"OpenCode is not installed at {OPENCODE}, or node is missing (.ci/run installs "
        "opencode-ai with npm)",
    ),
]


def _config(home: Path, api: OpenAIEmulator) -> None:
    """OpenCode's global config: the loopback provider, its model's window (so that OpenCode's
    own compaction counts against the same window as the fit), nothing shared or updated."""
    window = lookup_model(MODEL_ID)
    folder = home / ".config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": MODEL,
        "provider": {
            "loopback": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "loopback",
                "options": {"baseURL": api.base_url, "apiKey": "test-key"},
                "models": {
                    MODEL_ID: {
                        "name": MODEL_ID,
                        "tool_call": True,
                        "limit": {
                            "context": window.context_window,
                            "output": window.max_output_tokens,
                        },
                    }
                },
            }
        },
    }
    (folder / "opencode.json").write_text(json.dumps(config, indent=1), encoding="utf-8")


def _opencode(
    home: Path, work: Path, *args: str, out: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real OpenCode; with ``out``, its standard output goes to that file (it exits
    before a pipe takes more than 128 KiB of it, so a large export is cut short in a pipe)."""
    env = {
        **os.environ,
        "HOME": str(home),
        # OpenCode takes its working directory from $PWD, not from the process's own
        "PWD": str(work),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",  # no models.dev: the provider is in the config
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "NO_COLOR": "1",
    }
    for kind in ("DATA", "CONFIG", "CACHE", "STATE"):
        env.pop(f"XDG_{kind}_HOME", None)
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OPENCODE_CONFIG"):
        env.pop(key, None)
    if out is not None:
        with out.open("w", encoding="utf-8") as sink:
            return subprocess.run(
                [str(OPENCODE), *args],
                cwd=work,
                env=env,
                stdout=sink,
                stderr=subprocess.PIPE,
                text=True,
                stdin=subprocess.DEVNULL,
                timeout=180,
                check=False,
            )
    return subprocess.run(
        [str(OPENCODE), *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=180,
        check=False,
    )


def _run_printed(home: Path, work: Path, command: str) -> subprocess.CompletedProcess[str]:
    """The headless command the handoff printed, as printed: ``cd <dir> && opencode import
    <file> && opencode run --session <id> -m <model> <prompt>``."""
    where, load, resume = command.split(" && ")
    assert where == f"cd {shlex.quote(str(work))}"
    for step in (load, resume):
        program, *args = shlex.split(step)
        assert program == "opencode"
        run = _opencode(home, work, *args)
        assert run.returncode == 0, run.stderr[-3000:]
    return run


def _turns(api: OpenAIEmulator) -> list[dict[str, Any]]:
    return [r.body for r in api.requests if not r.refused and r.body.get("model") == MODEL_ID]


def _paired(messages: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    calls = [str(c["id"]) for m in messages for c in m.get("tool_calls") or []]
    results = [str(m["tool_call_id"]) for m in messages if m.get("role") == "tool"]
    return calls, results


def _export(home: Path, work: Path, sid: str) -> dict[str, Any]:
    dump = home / f"export-{sid}.json"
    back = _opencode(home, work, "export", sid, out=dump)
    assert back.returncode == 0, back.stderr[-3000:]
    text = dump.read_text(encoding="utf-8")
    exported: dict[str, Any] = json.loads(text[text.index("{") :])
    return exported


def _texts(message: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in message["parts"] if p["type"] == "text")


def test_opencode_sends_a_handed_off_claude_code_session(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "shop"
    work.mkdir()
    api = OpenAIEmulator().start()
    try:
        _config(home, api)
        api.script(*[Text("We fixed the coupon: it is no longer multiplied by 100.")] * 3)
        done = handoff(CLAUDE, to="opencode", model=MODEL, home=home, cwd=str(work))
        assert done.report.decision != "compressed"
        prompt = "What did we fix?"
        command = done.commands[1].replace(shlex.quote(RESUME_PROMPT), shlex.quote(prompt))
        run = _run_printed(home, work, command)
        assert "We fixed the coupon" in run.stdout
        assert all(not r.refused for r in api.requests), api.report()
        turns = _turns(api)
        assert len(turns) == 1, api.report()  # one turn: no title, no compaction of its own
        messages = turns[0]["messages"]
        sent = json.dumps(messages)
        # the handed-off history: the request, the calls and their results, the answer
        assert "The cart total is wrong with a coupon. Fix it." in sent
        assert "Fixed: the coupon amount was multiplied by 100." in sent
        calls, results = _paired(messages)
        assert calls == results == [
            "toolu_01Grep", "toolu_01Read", "toolu_01Bash", "toolu_01Edit",
        ]  # fmt: skip
        names = [c["function"]["name"] for m in messages for c in m.get("tool_calls") or []]
        assert names == ["grep", "read", "bash", "edit"]  # OpenCode's own tools
        offered = {t["function"]["name"] for t in turns[0]["tools"]}
        assert set(names) <= offered
        assert "src/cart.py:41" in sent  # a result, as the tool message of its call
        assert messages[0]["role"] == "system"  # OpenCode's own harness prompt
        assert prompt in json.dumps(messages[-1])
        window = lookup_model(MODEL_ID).context_window
        assert all(r.prompt_tokens + (r.max_tokens or 0) <= window for r in api.requests)
        # OpenCode wrote its turn into its own storage, after the handed-off messages
        exported = _export(home, work, done.session_id)
        last = exported["messages"][-1]
        assert last["info"]["role"] == "assistant"
        assert (last["info"]["providerID"], last["info"]["modelID"]) == ("loopback", MODEL_ID)
        assert _texts(last) == "We fixed the coupon: it is no longer multiplied by 100."
        # (``opencode run`` quotes a message argument that holds a space)
        assert _texts(exported["messages"][-2]) == f'"{prompt}"'
        assert exported["info"]["directory"] == str(work)
        assert (
            len(exported["messages"])
            == len(json.loads(done.path.read_text(encoding="utf-8"))["messages"]) + 2
        )
    finally:
        api.stop()


def _long_session(turns: int) -> list[Message]:
    """``turns`` steps, each a user message with a pasted log of about 2.5k tokens and a shell
    call: about 150k tokens for 60 steps."""
    messages = [Message("user", "We keep the codeword OSPREY-7 for this refactor.")]
    messages.append(Message("assistant", "Noted: OSPREY-7."))
    for k in range(turns):
        log = "\n".join(
            f"2026-03-0{k % 9 + 1} 12:{j % 60:02d} worker-{k} handled request {j} in {j * 7} ms"
            for j in range(150)
        )
        args = json.dumps({"command": f"rg -c slow log_{k}"})
        call = ToolCall(f"call_{k:03d}", "shell_command", args)
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


def test_opencode_sends_a_long_codex_session_fitted_to_its_window(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "repo"
    work.mkdir()
    _, rollout = write_codex(_long_session(60), codex_home=tmp_path / ".codex", cwd=str(work))
    api = OpenAIEmulator().start()
    try:
        _config(home, api)
        api.script(*[Text("We picked PostgreSQL 16.")] * 3)
        done = handoff(rollout, to="opencode", model=MODEL, home=home)
        assert done.cwd == str(work)
        assert done.report.decision == "compressed"
        assert done.messages < done.source_messages
        assert done.report.tokens_after <= done.report.budget
        run = _run_printed(home, work, done.commands[1])
        assert "We picked PostgreSQL 16." in run.stdout
        assert all(not r.refused for r in api.requests), api.report()
        turns = _turns(api)
        assert len(turns) == 1, api.report()  # OpenCode did not compact it again
        window = lookup_model(MODEL_ID).context_window
        (request,) = api.requests
        assert request.prompt_tokens + (request.max_tokens or 0) <= window
        messages = turns[0]["messages"]
        sent = json.dumps(messages)
        assert "[session-migrator: summary of" in sent  # what the fit cut, summarized
        assert "PostgreSQL 16, for the JSONB indexes." in sent  # the newest turns, whole
        assert "Step 59: why is worker 59 slow?" in sent
        contents = [m["content"] for m in messages if isinstance(m.get("content"), str)]
        assert not any(c.startswith("Step 0: ") for c in contents)
        calls, results = _paired(messages)
        assert calls
        assert calls == results
        assert RESUME_PROMPT in json.dumps(messages[-1])
        exported = _export(home, work, done.session_id)
        last = exported["messages"][-1]
        assert last["info"]["role"] == "assistant"
        assert _texts(last) == "We picked PostgreSQL 16."
    finally:
        api.stop()
