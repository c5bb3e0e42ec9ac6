"""The window a runtime serves (session_migrator.models._runtime): asked once, cached, and
narrowed by a silent cut."""

from __future__ import annotations

import socket

import pytest

from session_migrator import lookup_model, narrowed, note_prompt_read, runtime_window, served_window
from session_migrator.models._runtime import is_hosted_openai


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_server_that_does_not_answer_leaves_the_table() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    assert served_window("ollama", url, "llama3.1:8b", timeout=0.2) is None
    assert runtime_window("llama3.1:8b", runtime="ollama", base_url=url, timeout=0.2) is None


def test_openai_itself_is_never_asked() -> None:
    assert is_hosted_openai(None)
    assert is_hosted_openai("https://api.openai.com/v1")
    assert not is_hosted_openai("http://127.0.0.1:8000/v1")
    assert runtime_window("gpt-4o", runtime="openai", base_url="https://api.openai.com/v1") is None


def test_unknown_runtime_is_refused() -> None:
    with pytest.raises(ValueError, match="runtime must be"):
        served_window("triton", "http://127.0.0.1:1", "m")


def test_a_cut_narrows_once_and_a_full_read_does_not() -> None:
    window = lookup_model("llama3.1:8b")
    assert note_prompt_read(window, 10_000, 9_000) is None  # an estimate above the real count
    with pytest.warns(RuntimeWarning, match="read 4,000 of the 20,000"):
        cut = note_prompt_read(window, 20_000, 4_000)
    assert cut is not None
    assert (cut.max_input_tokens, cut.source) == (4_000, f"{window.source}+read:4000")
    assert narrowed(window) == cut
    assert note_prompt_read(window, 20_000, 4_000) is None  # warned once
