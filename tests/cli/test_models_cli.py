"""``session-migrator models | window | count``, in process and as a real subprocess."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from session_migrator.cli import _models_cmd, main

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is the capital of France?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"q": "France"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "Paris"},
    {"role": "assistant", "content": "Paris."},
]


@pytest.fixture
def conversation(tmp_path: Path) -> Path:
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps(MESSAGES), encoding="utf-8")
    return path


def test_models_lists_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "claude-3-5"]) == 0
    out = capsys.readouterr().out
    assert "claude-3-5-sonnet-20240620" in out
    assert "200,000" in out
    assert out.splitlines()[0].split() == [
        "model", "provider", "window", "input", "output", "tokenizer", "source",
    ]  # fmt: skip


def test_models_json_provider_and_limit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "--provider", "anthropic", "--limit", "3", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 3
    assert {r["provider"] for r in rows} == {"anthropic"}
    assert set(rows[0]) >= {"name", "context_window", "max_input_tokens", "max_output_tokens"}


def test_models_limit_says_what_is_hidden(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "gpt-4o", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "(showing 2; --limit 0 for all)" in out


def test_models_without_match(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "no-such-model-anywhere"]) == 0
    assert "no known model matching 'no-such-model-anywhere'" in capsys.readouterr().out
    assert main(["models", "no-such-model-anywhere", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_models_rejects_a_negative_limit(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["models", "--limit", "-1"])
    assert info.value.code == 2
    assert "--limit" in capsys.readouterr().err


def test_models_actions_run_instead_of_a_query(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def add(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--from", dest="urls", action="append")
        parser.add_argument("--json", action="store_true")

    def run(args: argparse.Namespace) -> int:
        print(f"refreshing {args.urls} json={args.json}")
        return 0

    monkeypatch.setitem(_models_cmd.MODELS_ACTIONS, "refresh", (add, run))
    assert main(["models", "refresh", "--from", "http://127.0.0.1:1", "--json"]) == 0
    assert capsys.readouterr().out == "refreshing ['http://127.0.0.1:1'] json=True\n"
    assert main(["models", "gpt-4.1", "--json"]) == 0  # a query still lists
    assert json.loads(capsys.readouterr().out)[0]["name"].startswith("gpt-4.1")


@pytest.mark.parametrize(
    "extra",
    [
        ["--from", "http://127.0.0.1:9"],
        ["--kind", "vllm"],
        ["--timeout", "1"],
        ["--api-key-env", "K"],
    ],
)
def test_refresh_options_without_refresh_are_refused(
    extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models", "gpt-4o", *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{extra[0]}: only `models refresh` reads these" in captured.err


def test_window_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["window", "gpt-5"]) == 0
    out = capsys.readouterr().out
    for expected in ("400,000", "272,000", "128,000", "o200k_base", "input budget", "note"):
        assert expected in out


def test_window_json_has_every_field_and_the_budget(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["window", "anthropic.claude-3-haiku-20240307-v1:0", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["name"] == "claude-3-haiku-20240307"
    assert record["context_window"] == 200_000
    assert record["max_output_tokens"] == 4_096
    assert record["tokenizer"] == "claude"
    assert record["exact"] is False
    assert record["reserved_output"] == 4_096
    assert record["safety_margin"] > 0
    assert record["input_budget"] == 200_000 - 4_096 - record["safety_margin"]
    assert record["source"] == "bundled:checked"


def test_window_and_models_show_a_provider_s_own_smaller_caps(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 24: Copilot serves Claude Sonnet 4 with 128,000 input and 16,000 output tokens."""
    assert main(["window", "github_copilot/claude-sonnet-4", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["context_window"], record["max_input_tokens"], record["max_output_tokens"]) == (
        200_000,
        128_000,
        16_000,
    )
    assert record["ref"] == "models.dev: providers/github-copilot/models/claude-sonnet-4"
    assert record["source"] == "bundled:models.dev@2026-07-02"
    assert record["input_budget"] <= 128_000
    assert main(["window", "claude-sonnet-4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["max_input_tokens"] == 200_000  # the model's own
    assert main(["models", "claude-sonnet-4-2025", "--provider", "github_copilot", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert (listed["name"], listed["max_input_tokens"]) == ("claude-sonnet-4-20250514", 128_000)


def test_window_unknown_model_is_one_line_with_suggestions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["window", "gpt-4o-mnii"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: Unknown model 'gpt-4o-mnii'")
    assert "'gpt-4o-mini'" in lines[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["window", "acme-llm"],
        ["count", "{file}", "--model", "acme-llm"],
        ["migrate", "{file}", "--to", "acme-llm"],
        ["sessions", "show", "s1", "--model", "acme-llm", "--store", "memory://"],
    ],
    ids=["window", "count", "migrate", "sessions"],
)
def test_an_unknown_model_error_names_the_option_that_describes_it(
    argv: list[str], conversation: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a.replace("{file}", str(conversation)) for a in argv]
    if argv[0] == "sessions":  # a stored session to show
        argv[-1] = f"sqlite:///{conversation.parent / 's.db'}"
        imported = ["sessions", "import", str(conversation), "--session-id", "s1"]
        assert main([*imported, "--store", argv[-1]]) == 0
        capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Unknown model 'acme-llm'")
    assert "Pass --context-window N" in err
    assert "context_window=" not in err  # not a CLI option
    assert "register_model" not in err
    # following the advice works
    assert main([*argv, "--context-window", "8000"]) == 0
    out = capsys.readouterr().out
    assert "acme-llm" in out or argv[0] == "migrate"


def test_context_window_must_be_positive(
    conversation: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["count", str(conversation), "--model", "acme-llm", "--context-window", "0"])
    assert "--context-window: must be 1 or more" in capsys.readouterr().err


def test_count_human(conversation: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["count", str(conversation), "--model", "openai/gpt-4o"]) == 0
    out = capsys.readouterr().out
    assert "(exact, o200k_base) in 5 messages" in out
    assert "of gpt-4o's input budget of 111,616 tokens: fits" in out
    for role in ("system", "user", "assistant", "tool", "(reply priming)"):
        assert role in out


def test_count_json_adds_up(conversation: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["count", str(conversation), "--model", "claude-3-5-sonnet", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["model"] == "claude-3-5-sonnet-20241022"
    assert record["exact"] is False
    assert record["counter"].startswith("estimate:claude")
    assert record["by_role"]["assistant"]["messages"] == 2
    per_role = sum(r["tokens"] for r in record["by_role"].values())
    assert record["tokens"] == per_role + record["reply_priming"]
    assert record["budget_share"] == pytest.approx(record["tokens"] / record["input_budget"], 1e-4)
    assert record["fits"] is True


def test_count_user_mistakes(
    tmp_path: Path, conversation: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["count", str(tmp_path / "absent.json"), "--model", "gpt-4o"]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("[{", encoding="utf-8")
    assert main(["count", str(bad), "--model", "gpt-4o"]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert main(["count", str(conversation), "--model", "gpt-4o-mnii"]) == 2
    assert "gpt-4o-mini" in capsys.readouterr().err


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SESSION_MIGRATOR_MODELS"}
    return subprocess.run(
        [sys.executable, "-m", "session_migrator", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )


def test_real_subprocess(conversation: Path) -> None:
    window = _run("window", "gpt-4o", "--json")
    assert window.returncode == 0, window.stderr
    assert json.loads(window.stdout)["max_output_tokens"] == 16_384
    count = _run("count", str(conversation), "--model", "gpt-4o-mini", "--json")
    assert count.returncode == 0, count.stderr
    assert json.loads(count.stdout)["exact"] is True
    unknown = _run("window", "gpt-4o-mnii")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("error: Unknown model")
    assert "Traceback" not in unknown.stderr


def test_a_missing_encoding_is_a_one_line_note(conversation: Path) -> None:
    """Without tiktoken's files the counts are estimates: the CLI says so in one line, not in
    Python's warning format (with the source line that raised it)."""
    code = f"""
import sys
from session_migrator.counting import _encodings
_encodings.encoding_search_paths = lambda: []  # no copy of the encodings anywhere
from session_migrator.cli import main
sys.exit(main(["count", {str(conversation)!r}, "--model", "gpt-4o"]))
"""
    result = subprocess.run(
        [sys.executable, "-W", "always", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "TIKTOKEN_CACHE_DIR": "/nonexistent", "DATA_GYM_CACHE_DIR": "/none"},
    )
    assert result.returncode == 0, result.stderr
    assert "(estimated" in result.stdout
    notes = [line for line in result.stderr.splitlines() if line]
    assert len(notes) == 1
    assert notes[0].startswith("note: No local copy of tiktoken's o200k_base encoding")
