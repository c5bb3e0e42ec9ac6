"""``models refresh`` through the two functions the CLI wires in, with a parser built here."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest

from session_migrator.cli._refresh_cmd import add_refresh_arguments, run_refresh
from session_migrator.models._live import cache_path

MODELS = {"data": [{"id": "qwen3-coder", "max_model_len": 262144}, {"id": "no-window"}]}


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="session-migrator models refresh")
    add_refresh_arguments(parser)
    return parser.parse_args(argv)


def models_server(serve: Any) -> Any:
    return serve(lambda r: (200, MODELS) if r.path == "/v1/models" else (404, {}))


def test_human_output(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    server = models_server(serve)
    assert run_refresh(parse("--from", server.url)) == 0
    out = capsys.readouterr().out
    assert server.url in out
    assert "vllm" in out
    assert f"1 model windows cached in {cache_path()}" in out


def test_json_output_with_a_failed_source(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    good = models_server(serve)
    bad = serve(lambda r: (500, b"oops"))
    code = run_refresh(parse("--from", good.url, "--from", bad.url, "--json"))
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    assert report["models_found"] == 1
    first, second = report["sources"]
    assert (first["ok"], first["models"], first["skipped"]) == (True, 1, ["no-window"])
    assert second["ok"] is False
    assert "HTTP 500" in second["error"]


def test_every_source_failing_exits_2_with_one_line(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = serve(lambda r: (200, b"<html>"))
    assert run_refresh(parse("--from", bad.url, "--timeout", "2")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("error: every source failed: ")
    assert bad.url in err
    assert not cache_path().exists()


def test_kind_and_api_key_env(
    serve: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = models_server(serve)
    monkeypatch.setenv("MY_VLLM_KEY", "dummy-key")
    args = parse(
        "--from", f"{server.url}/v1/models", "--kind", "openai", "--api-key-env", "MY_VLLM_KEY"
    )
    assert run_refresh(args) == 0
    assert server.requests[0].headers["authorization"] == "Bearer dummy-key"
    assert "openai" in capsys.readouterr().out


def test_unset_key_variable_and_bad_timeout(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_refresh(parse("--from", "http://127.0.0.1:1", "--api-key-env", "NOPE_KEY")) == 2
    assert "NOPE_KEY is not set" in capsys.readouterr().err
    assert run_refresh(parse("--from", "http://127.0.0.1:1", "--timeout", "0")) == 2
    assert "--timeout must be positive" in capsys.readouterr().err


def test_unknown_kind_is_an_argparse_error() -> None:
    with pytest.raises(SystemExit):
        parse("--kind", "bedrock")
