"""The real Gemini CLI (``@google/gemini-cli`` from the npm registry, installed by ``.ci/run`` into
``.ci/agents``, or named by ``SESSION_MIGRATOR_GEMINI_BIN``) resumes a session handed off to it:
``gemini --resume <id> -m <model> -p "..."``, with ``GOOGLE_GEMINI_BASE_URL`` pointing at a
loopback emulator of the Gemini API (``streamGenerateContent``), sends the handed-off history
(each ``functionCall`` answered by its ``functionResponse``, within the model's window), and
writes its reply into the session file."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from session_migrator import Message, ToolCall, register_model
from session_migrator.importers import handoff, write_claude_code
from session_migrator.importers._handoff import RESUME_PROMPT

ROOT = Path(__file__).resolve().parents[2]
GEMINI = Path(
    os.environ.get(
        "SESSION_MIGRATOR_GEMINI_BIN", ROOT / ".ci" / "agents" / "node_modules" / ".bin" / "gemini"
    )
)
FIXTURES = ROOT / "tests" / "importers" / "fixtures"
CLAUDE = FIXTURES / "claude_code" / "-home-dev-shop" / "5b1c9e2a-7d4f-4c3b-9a8e-1f2d3c4b5a69.jsonl"
MODEL = "gemini-2.5-flash"
REPLY = "We fixed the coupon scaling; the tests pass."

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not GEMINI.exists() or shutil.which("node") is None,
        reason=f"the Gemini CLI is not installed at {GEMINI}, or node is missing (.ci/run installs "
        "@google/gemini-cli with npm)",
    ),
]


class _GeminiApi:
    """A loopback Gemini API: records each request's path and body, answers every
    ``generateContent`` / ``streamGenerateContent`` with one text turn (``REPLY``)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(size) or b"{}")
                api.requests.append((self.path, body))
                if ":countTokens" in self.path:
                    out: dict[str, Any] = {"totalTokens": 100}
                else:
                    out = {
                        "candidates": [{"index": 0, "finishReason": "STOP",
                                        "content": {"role": "model", "parts": [{"text": REPLY}]}}],
                        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 9,
                                          "totalTokenCount": 109},
                        "modelVersion": MODEL,
                    }  # fmt: skip
                data = json.dumps(out).encode()
                self.send_response(200)
                if "alt=sse" in self.path:
                    self.send_header("content-type", "text/event-stream")
                    self.end_headers()
                    self.wfile.write(b"data: " + data + b"\r\n\r\n")
                else:
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def turns(self, model: str) -> list[dict[str, Any]]:
        return [b for p, b in self.requests if f"/models/{model}:" in p and "contents" in b]


@pytest.fixture
def api() -> Iterator[_GeminiApi]:
    emulator = _GeminiApi()
    emulator.thread.start()
    try:
        yield emulator
    finally:
        emulator.server.shutdown()
        emulator.server.server_close()


def _run_printed(command: str, home: Path, api: _GeminiApi) -> subprocess.CompletedProcess[str]:
    """The headless command a handoff printed (``cd <dir> && gemini ...``), as printed."""
    where, rest = command.split(" && ", 1)
    program, *args = shlex.split(rest)
    assert program == "gemini"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}},
                    "general": {"disableAutoUpdate": True},
                    "privacy": {"usageStatisticsEnabled": False},
                    "telemetry": {"enabled": False}}),
        encoding="utf-8",
    )  # fmt: skip
    env = {**os.environ, "HOME": str(home), "GEMINI_API_KEY": "test-key",
           "GOOGLE_GEMINI_BASE_URL": api.url, "GEMINI_CLI_TRUST_WORKSPACE": "true",
           "NO_COLOR": "1"}  # fmt: skip
    for key in ("GEMINI_CLI_HOME", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT"):
        env.pop(key, None)
    return subprocess.run(
        [str(GEMINI), *args],
        cwd=shlex.split(where)[1],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=180,
        check=False,
    )


def _check_paired(contents: list[dict[str, Any]]) -> list[str]:
    """Each model turn's ``functionCall`` ids are answered, in order, by the ``functionResponse``
    parts that open the next turn; the ids of the calls."""
    ids: list[str] = []
    for k, turn in enumerate(contents):
        calls = [p["functionCall"] for p in turn["parts"] if "functionCall" in p]
        if calls:
            answers = [
                p.get("functionResponse", {}) for p in contents[k + 1]["parts"][: len(calls)]
            ]
            assert [(a.get("id"), a["name"]) for a in answers] == [
                (c.get("id"), c["name"]) for c in calls
            ]
            ids += [str(c.get("id")) for c in calls]
    return ids


def test_gemini_cli_resumes_a_claude_code_session(tmp_path: Path, api: _GeminiApi) -> None:
    home, work = tmp_path / "home", tmp_path / "shop"
    work.mkdir()
    done = handoff(CLAUDE, to="gemini-cli", model=MODEL, home=home, cwd=str(work))
    run = _run_printed(done.commands[1], home, api)
    assert run.returncode == 0, run.stderr[-3000:]
    assert REPLY in run.stdout
    (body,) = api.turns(MODEL)
    contents = body["contents"]
    sent = json.dumps(contents)
    for text in ("The cart total is wrong with a coupon. Fix it.",
                 "Fixed: the coupon amount was multiplied by 100.", RESUME_PROMPT):  # fmt: skip
        assert text in sent
    assert _check_paired(contents) == [
        "toolu_01Grep", "toolu_01Read", "toolu_01Bash", "toolu_01Edit",
    ]  # fmt: skip
    names = [p["functionCall"]["name"] for c in contents for p in c["parts"] if "functionCall" in p]
    assert names == ["grep_search", "read_file", "run_shell_command", "replace"]
    # the reply is written back into the handed-off file, by Gemini CLI itself
    records = [json.loads(line) for line in done.path.read_text(encoding="utf-8").splitlines()]
    replies = [r for r in records if r.get("type") == "gemini" and r.get("content") == REPLY]
    assert replies
    assert replies[-1]["model"] == MODEL


def _long_session(turns: int) -> list[Message]:
    """About 2.5k tokens a step: a pasted log and a ``Bash`` call."""
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


def test_gemini_cli_resumes_a_long_session_fitted_to_its_window(
    tmp_path: Path, api: _GeminiApi
) -> None:
    small = "gemini-handoff-test-64k"
    register_model(small, context_window=65_536, max_output_tokens=8_192, provider="google")
    home, work = tmp_path / "home", tmp_path / "repo"
    work.mkdir()
    _, source = write_claude_code(
        _long_session(40), home=tmp_path / "claude", cwd=str(work), git_branch="main"
    )
    done = handoff(source, to="gemini-cli", model=small, home=home)
    assert done.report.decision == "compressed"
    assert done.messages < done.source_messages
    assert done.report.tokens_after <= done.report.budget
    run = _run_printed(done.commands[1], home, api)
    assert run.returncode == 0, run.stderr[-3000:]
    (body,) = api.turns(small)
    sent = json.dumps(body["contents"])
    assert "[session-migrator: summary of" in sent
    assert "PostgreSQL 16, for the JSONB indexes." in sent
    assert "Step 39: why is worker 39 slow?" in sent
    # the first step was cut (its log is not sent), its request kept in the summary
    assert "worker-0 handled request 149" not in sent
    assert "Step 0: why is worker 0 slow?" in sent
    assert _check_paired(body["contents"])
    # what the CLI sends, its own prompt and tools included, stays within the window (about 4
    # characters a token for this text)
    assert len(json.dumps(body)) / 4 < 65_536
