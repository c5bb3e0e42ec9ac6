"""Live window refresh against real HTTP servers on loopback, in every supported format."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from session_migrator.models import _live
from session_migrator.models._live import (
    cache_path,
    is_stale,
    lookup_cached,
    refresh,
    stale_hint,
)
from session_migrator.models._names import normalize_model_name


def norm(name: str) -> str:
    """The name as the lookup normalises it before asking the cache."""
    return normalize_model_name(name)


def models_route(data: Any, path: str = "/v1/models") -> Any:
    def route(request: Any) -> tuple[Any, ...]:
        if request.path == path:
            return 200, data
        return 404, {"error": "not found"}

    return route


VLLM = {
    "object": "list",
    "data": [
        {
            "id": "meta-llama/Llama-3.1-8B-Instruct",
            "object": "model",
            "owned_by": "vllm",
            "max_model_len": 32768,
        }
    ],
}

OPENROUTER = {
    "data": [
        {
            "id": "anthropic/claude-3-haiku",
            "context_length": 200000,
            "top_provider": {"context_length": 200000, "max_completion_tokens": 4096},
        },
        {"id": "openai/gpt-4o", "context_length": 128000, "top_provider": {}},
        {"id": "example/partial", "context_length": None, "top_provider": None},
        "not an object",
        {"context_length": 1000},
    ]
}


def test_vllm_models_are_cached_and_looked_up(serve: Any) -> None:
    server = serve(models_route(VLLM))
    result = refresh([server.url])
    assert result.ok
    (source,) = result.sources
    assert (source.kind, source.models, source.error) == ("vllm", 1, None)
    window = lookup_cached(norm("meta-llama/Llama-3.1-8B-Instruct"))
    assert window is not None
    assert window.context_window == window.max_input_tokens == 32768
    assert window.max_output_tokens is None
    assert window.source == f"cache:{server.url}"
    assert window.as_of == datetime.now(UTC).date().isoformat()
    assert (window.provider, window.tokenizer) == ("vllm", "llama")
    assert server.paths() == ["/v1/models"]
    saved = json.loads(cache_path().read_text())
    assert saved["sources"][server.url]["kind"] == "vllm"


def test_generic_openai_compatible_fields_and_partial_answers(serve: Any) -> None:
    data = {
        "data": [
            {"id": "qwen3-32b", "context_window": 131072, "max_output_tokens": 8192},
            {"id": "mistral-large", "max_context_length": "65536"},
            {"id": "no-window"},
            {"id": "broken", "context_length": -5},
            {"id": "flag", "context_length": True},
        ]
    }
    server = serve(models_route(data))
    result = refresh([f"{server.url}/v1"])
    (source,) = result.sources
    assert (source.ok, source.kind, source.models) == (True, "openai", 2)
    assert set(source.skipped) == {"no-window", "broken", "flag"}
    qwen = lookup_cached(norm("qwen3-32b"))
    assert qwen is not None
    assert (qwen.context_window, qwen.max_output_tokens, qwen.tokenizer) == (131072, 8192, "qwen")
    mistral = lookup_cached(norm("mistral-large"))
    assert mistral is not None
    assert mistral.context_window == 65536
    assert lookup_cached(norm("no-window")) is None


def test_openrouter_ids_and_output_caps(serve: Any) -> None:
    server = serve(models_route(OPENROUTER, "/api/v1/models"))
    result = refresh([f"{server.url}/api/v1/models"])
    (source,) = result.sources
    assert (source.kind, source.models) == ("openrouter", 2)
    assert set(source.skipped) == {"example/partial", "<item 3>", "<item 4>"}
    haiku = lookup_cached(norm("anthropic/claude-3-haiku"))
    assert haiku is not None
    assert (haiku.context_window, haiku.max_output_tokens) == (200000, 4096)
    assert (haiku.provider, haiku.tokenizer) == ("anthropic", "claude")
    gpt = lookup_cached(norm("openai/gpt-4o"))
    assert gpt is not None
    assert (gpt.provider, gpt.tokenizer, gpt.max_output_tokens) == ("openai", "o200k_base", None)


def ollama_route(request: Any) -> tuple[Any, ...]:
    if request.path == "/api/tags":
        return 200, {
            "models": [
                {"name": "llama3.2:latest", "model": "llama3.2:latest"},
                {"name": "qwen2.5:7b", "model": "qwen2.5:7b"},
                {"name": "gone:latest", "model": "gone:latest"},
                {"name": "", "model": ""},
            ]
        }
    if request.path == "/api/show" and request.method == "POST":
        model = request.body["model"]
        if model == "llama3.2:latest":
            return 200, {
                "parameters": 'num_ctx                        8192\nstop "<|eot_id|>"',
                "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
            }
        if model == "qwen2.5:7b":
            return 200, {
                "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}
            }
        return 404, {"error": f"model {model!r} not found"}
    return 404, {"error": "not found"}


def test_ollama_tags_then_show(serve: Any) -> None:
    server = serve(ollama_route)
    result = refresh([server.url])  # a bare URL: /v1/models is 404, then Ollama
    (source,) = result.sources
    assert (source.ok, source.kind, source.models) == (True, "ollama", 2)
    assert set(source.skipped) == {"gone:latest", "<item 3>"}
    assert server.paths()[:2] == ["/v1/models", "/api/tags"]
    llama = lookup_cached(norm("llama3.2"))  # num_ctx, the window Ollama serves
    assert llama is not None
    assert (llama.context_window, llama.provider, llama.tokenizer) == (8192, "ollama", "llama")
    qwen = lookup_cached(norm("qwen2.5:7b"))  # no num_ctx: the model's trained length
    assert qwen is not None
    assert qwen.context_window == 32768
    # the detected kind is remembered: the next refresh goes straight to Ollama
    server.requests.clear()
    assert refresh([server.url]).ok
    assert server.paths()[0] == "/api/tags"


def test_explicit_kind_ollama_with_tags_url(serve: Any) -> None:
    server = serve(ollama_route)
    result = refresh([f"{server.url}/api/tags"], kind="ollama")
    assert result.sources[0].models == 2
    assert "/v1/models" not in server.paths()


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ((200, b"{not json"), "did not answer JSON"),
        ((200, {"object": "list"}), "expected an object with a 'data' list"),
        ((200, [1, 2]), "expected an object with a 'data' list"),
        ((500, b"upstream exploded"), "HTTP 500"),
        ((200, {"data": [{"id": "gpt-4o", "object": "model"}]}), "none states a context window"),
    ],
)
def test_bad_answers_fail_and_keep_the_previous_cache(
    serve: Any, reply: tuple[Any, ...], message: str
) -> None:
    answers = [(200, VLLM), reply]
    server = serve(lambda request: answers[0] if len(server.requests) == 1 else answers[1])
    url = f"{server.url}/v1/models"
    assert refresh([url]).ok
    before = cache_path().read_bytes()
    result = refresh([url])
    assert not result.ok
    (source,) = result.sources
    assert source.error is not None
    assert message in source.error
    assert url in source.error
    assert cache_path().read_bytes() == before
    window = lookup_cached(norm("meta-llama/Llama-3.1-8B-Instruct"))
    assert window is not None
    assert window.context_window == 32768


def test_timeout_is_reported(serve: Any) -> None:
    server = serve(lambda request: (200, VLLM, {"delay": 1.0}))
    result = refresh([f"{server.url}/v1/models"], timeout=0.2)
    assert not result.ok
    assert result.sources[0].error == f"{server.url}/v1/models did not answer within 0.2s"
    assert not cache_path().exists()


def test_unreachable_and_non_http_sources() -> None:
    result = refresh(["http://127.0.0.1:9/v1/models", "file:///etc/passwd"], timeout=1)
    assert [s.ok for s in result.sources] == [False, False]
    assert result.sources[0].error is not None
    assert "cannot reach" in result.sources[0].error
    assert "only http and https" in (result.sources[1].error or "")
    assert result.errors[1].startswith("file:///etc/passwd: ")


def test_a_failed_source_keeps_its_entries_while_others_refresh(serve: Any) -> None:
    healthy = {"ok": True}
    flaky = serve(lambda r: (200, VLLM) if healthy["ok"] else (503, b"down"))
    steady_models = {"data": [{"id": "qwen3-8b", "max_model_len": 4096}]}
    steady = serve(models_route(steady_models))
    assert refresh([flaky.url, steady.url]).ok
    healthy["ok"] = False
    steady_models["data"][0]["max_model_len"] = 8192
    result = refresh([flaky.url, steady.url])
    assert result.ok
    assert [s.ok for s in result.sources] == [False, True]
    assert "HTTP 503" in (result.sources[0].error or "")
    kept = lookup_cached(norm("meta-llama/Llama-3.1-8B-Instruct"))
    assert kept is not None
    assert kept.source == f"cache:{flaky.url}"
    fresh = lookup_cached(norm("qwen3-8b"))
    assert fresh is not None
    assert fresh.context_window == 8192


def test_no_urls_refreshes_the_cached_sources(serve: Any) -> None:
    server = serve(models_route(VLLM))
    refresh([server.url])
    server.requests.clear()
    result = refresh()
    assert [s.url for s in result.sources] == [server.url]
    assert server.paths() == ["/v1/models"]


def test_lookup_picks_up_a_new_refresh_and_reads_the_file_only_when_it_changes(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = {"data": [{"id": "deepseek-v4", "context_length": 65536}]}
    server = serve(models_route(data))
    refresh([server.url])
    reads: list[object] = []
    real_read = _live._read_sources

    def counting_read(path: Any) -> Any:
        reads.append(path)
        return real_read(path)

    monkeypatch.setattr(_live, "_read_sources", counting_read)
    first = lookup_cached(norm("deepseek-v4"))
    for _ in range(50):
        assert lookup_cached(norm("deepseek-v4")) == first
    assert first is not None
    assert first.context_window == 65536
    assert len(reads) <= 1
    data["data"][0]["context_length"] = 1_000_000
    refresh([server.url])
    second = lookup_cached(norm("deepseek-v4"))
    assert second is not None
    assert second.context_window == 1_000_000


def test_most_recent_source_wins(serve: Any) -> None:
    small = serve(models_route({"data": [{"id": "llama-3.3-70b", "max_model_len": 8192}]}))
    large = serve(models_route({"data": [{"id": "llama-3.3-70b", "max_model_len": 131072}]}))
    refresh([small.url])
    refresh([large.url])
    window = lookup_cached(norm("llama-3.3-70b"))
    assert window is not None
    assert window.source == f"cache:{large.url}"
    sources = json.loads(cache_path().read_text())["sources"]
    sources[small.url]["fetched_at"] = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    cache_path().write_text(json.dumps({"version": 1, "sources": sources}))
    window = lookup_cached(norm("llama-3.3-70b"))
    assert window is not None
    assert window.context_window == 8192


def test_no_cache_means_no_answer_and_no_staleness() -> None:
    assert lookup_cached("gpt-4o") is None
    assert not is_stale()
    assert stale_hint() is None


def test_corrupt_cache_is_ignored_then_replaced(serve: Any) -> None:
    path = cache_path()
    path.parent.mkdir(parents=True)
    path.write_text("{ this is not json")
    assert lookup_cached("gpt-4o") is None
    server = serve(models_route(VLLM))
    assert refresh([server.url]).ok
    assert lookup_cached(norm("meta-llama/Llama-3.1-8B-Instruct")) is not None


def test_stale_cache_still_answers_with_a_hint(
    serve: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = serve(models_route(VLLM))
    refresh([server.url])
    assert not is_stale()
    old = datetime.now(UTC) - timedelta(days=10)
    sources = json.loads(cache_path().read_text())["sources"]
    sources[server.url]["fetched_at"] = old.isoformat()
    cache_path().write_text(json.dumps({"version": 1, "sources": sources}))
    assert is_stale()
    assert not is_stale(timedelta(days=30))
    from session_migrator import models_cache_is_stale  # the public name

    assert models_cache_is_stale()
    assert not models_cache_is_stale(ttl=timedelta(days=30))
    hint = stale_hint()
    assert hint is not None
    assert "10 days old" in hint
    assert "session-migrator models refresh" in hint
    with caplog.at_level(logging.WARNING, logger="session_migrator.live"):
        window = lookup_cached(norm("meta-llama/Llama-3.1-8B-Instruct"))
        lookup_cached(norm("meta-llama/Llama-3.1-8B-Instruct"))
    assert window is not None
    assert window.as_of == old.date().isoformat()
    hints = [r for r in caplog.records if "models refresh" in r.getMessage()]
    assert len(hints) == 1


def test_invalid_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="kind must be one of"):
        refresh(["http://127.0.0.1:1"], kind="bedrock")


def test_an_api_key_is_sent_as_a_bearer_token(serve: Any) -> None:
    server = serve(models_route(VLLM))
    refresh([server.url], api_key="sk-test-dummy")
    assert server.requests[0].headers["authorization"] == "Bearer sk-test-dummy"


def test_the_lookup_uses_the_cache_between_overrides_and_the_table(serve: Any) -> None:
    from session_migrator.models._lookup import lookup_model, register_model, unregister_model

    offline = lookup_model("gpt-4o")
    assert offline.source.startswith("bundled:")
    server = serve(
        models_route({"data": [{"id": "openai/gpt-4o-2024-08-06", "max_model_len": 64000}]})
    )
    refresh([server.url])
    live = lookup_model("gpt-4o")
    assert (live.source, live.context_window) == (f"cache:{server.url}", 64000)
    assert live.tokenizer == "o200k_base"
    register_model("gpt-4o", context_window=50_000)
    try:
        assert lookup_model("gpt-4o").source == "override"
    finally:
        unregister_model("gpt-4o")
    cache_path().unlink()
    assert lookup_model("gpt-4o") == offline
