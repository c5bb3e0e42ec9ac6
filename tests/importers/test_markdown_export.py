"""Imported sessions as Markdown memory documents: offline extraction within the size limit, and
a topic summary from the real ``openai`` client against an OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from session_migrator import Message, OpenAISummarizer, Session, ToolCall, export_markdown
from session_migrator.importers import import_claude_code, import_codex

DESKTOP = "codex_current/2026/03/02/rollout-2026-03-02T09-14-05-" + (
    "019c4e2a-8b71-7d30-a5f2-6c1e9d0b3a47.jsonl"
)
PARALLEL = "claude_code_2x/-home-dev-api/7e1f3a20-5c4b-4d8e-9f10-2a3b4c5d6e7f.jsonl"
TOPIC = "Invoice rounding: totals are now rounded once, at the end, to two decimals."


def _section(doc: str, name: str) -> str:
    start = doc.index(f"## {name}\n")
    end = doc.find("\n## ", start + 1)
    return doc[start : end if end != -1 else len(doc)]


def test_a_codex_session_as_a_memory_document(fixtures: Path) -> None:
    doc = export_markdown(import_codex(fixtures / DESKTOP).session)
    assert doc.startswith("# Invoice totals are off by a cent. Find where we round.\n")
    assert "from codex (gpt-5.3-codex)" in doc
    assert "2026-03-02 09:14 to 09:16" in doc
    assert "round once at the end and keep two decimals" in _section(doc, "Decisions")
    files = _section(doc, "Files touched")
    assert "- `src/totals.py`: mentioned" in files
    assert "- `tests/test_totals.py`: mentioned" in files
    last = _section(doc, "Last exchange")
    assert "**User:** Add a test for three lines of 0.333." in last
    assert "## Summary" not in doc  # offline: no model was asked


def test_files_touched_come_from_the_tool_calls(fixtures: Path) -> None:
    doc = export_markdown(import_claude_code(fixtures / PARALLEL).session)
    files = _section(doc, "Files touched")
    assert "- `src/auth/validate.py`: read" in files  # relative to the session's cwd
    assert "- `tests/test_login.py`: read" in files


def _coding_session(turns: int) -> Session:
    messages: list[Message] = [Message("user", "Port the billing service to Python 3.12.")]
    for k in range(turns):
        call = ToolCall(f"c{k}", "Edit", json.dumps({"file_path": f"/w/src/billing/m{k}.py"}))
        messages += [
            Message("assistant", f"Module m{k} uses datetime.utcnow 3 times.", tool_calls=(call,)),
            Message("tool", f"edited m{k}", tool_call_id=f"c{k}"),
            Message("user", f"Ok. We decided to keep m{k}'s public API unchanged."),
        ]
    todo = {
        "todos": [
            {"content": "Port m1", "status": "completed", "activeForm": "Porting m1"},
            {"content": "Run the billing tests", "status": "in_progress", "activeForm": "x"},
            {"content": "Update the changelog", "status": "pending", "activeForm": "x"},
        ]
    }
    messages += [
        Message("assistant", "", tool_calls=(ToolCall("t", "TodoWrite", json.dumps(todo)),)),
        Message("tool", "Todos have been modified successfully.", tool_call_id="t"),
        Message("user", "Also bump the version in pyproject.toml?"),
    ]
    return Session("s-billing", tuple(messages), metadata={"cwd": "/w"})


@pytest.mark.parametrize("max_chars", [200, 400, 900, 2_000, 5_000, 50_000])
def test_the_document_stays_within_its_size_and_keeps_the_open_tasks_first(
    max_chars: int,
) -> None:
    session = _coding_session(60)
    doc = export_markdown(session, max_chars=max_chars)
    assert len(doc) <= max_chars
    if max_chars >= 900:
        tasks = _section(doc, "Open tasks")
        assert "- [ ] Unanswered: Also bump the version in pyproject.toml?" in tasks
        assert "- [ ] Run the billing tests (in progress)" in tasks
        assert "- [ ] Update the changelog" in tasks
        assert "Port m1" not in tasks  # completed
    if max_chars < 50_000:
        assert "more item(s) left out to stay within" in doc
    else:
        assert "left out" not in doc
        assert "- `src/billing/m59.py`: edited" in doc
        assert "We decided to keep m59's public API unchanged." in _section(doc, "Decisions")


def test_a_too_small_size_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 200"):
        export_markdown([Message("user", "hi")], max_chars=199)


# -- with an LLM summarizer ----------------------------------------------------------------


class _Server:
    def __init__(self, status: int) -> None:
        self.status = status
        self.requests: list[dict[str, Any]] = []


@pytest.fixture
def llm(request: pytest.FixtureRequest) -> Iterator[tuple[_Server, str]]:
    pytest.importorskip("openai")
    state = _Server(getattr(request, "param", 200))

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            state.requests.append({"path": self.path, "body": body})
            if state.status == 200:
                reply: dict[str, Any] = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": TOPIC},
                            "finish_reason": "stop",
                        }
                    ],
                }
            else:
                reply = {"error": {"message": "boom", "type": "server_error", "code": None}}
            data = json.dumps(reply).encode()
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_a_configured_summarizer_writes_the_topic_summary(
    fixtures: Path, llm: tuple[_Server, str]
) -> None:
    state, url = llm
    summarizer = OpenAISummarizer("summary-model", base_url=url, max_retries=0)
    doc = export_markdown(import_codex(fixtures / DESKTOP).session, summarizer=summarizer)
    assert _section(doc, "Summary").strip() == f"## Summary\n\n{TOPIC}"
    assert "## Decisions" in doc  # the offline sections follow
    (sent,) = state.requests
    assert sent["path"] == "/v1/chat/completions"
    assert sent["body"]["model"] == "summary-model"
    assert "Invoice totals are off by a cent" in sent["body"]["messages"][1]["content"]


@pytest.mark.parametrize("llm", [500], indirect=True)
def test_a_failing_summarizer_leaves_the_offline_document(
    fixtures: Path, llm: tuple[_Server, str]
) -> None:
    _, url = llm
    summarizer = OpenAISummarizer("summary-model", base_url=url, max_retries=0)
    doc = export_markdown(import_codex(fixtures / DESKTOP).session, summarizer=summarizer)
    assert "_No summary: openai:summary-model failed" in _section(doc, "Summary")
    assert "round once at the end" in _section(doc, "Decisions")


_WORDS = ["fix", "src/app.py", "we'll", "keep", "TODO", "42", "Alice", "need to", "the", "`x_y`"]


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(_WORDS), max_size=40).map(" ".join), min_size=0, max_size=30
    ),
    title=st.text(max_size=300),
    max_chars=st.integers(min_value=200, max_value=4_000),
)
def test_any_session_fits_its_size(texts: list[str], title: str, max_chars: int) -> None:
    messages = [Message("user" if k % 2 == 0 else "assistant", t) for k, t in enumerate(texts)]
    doc = export_markdown(
        Session("s", tuple(messages), metadata={"title": title or None}), max_chars=max_chars
    )
    assert len(doc) <= max_chars
    assert doc.startswith("# ")
