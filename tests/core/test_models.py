"""Model window lookup: names, figures, prefixes, errors, explicit values, overrides, live cache."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from session_migrator import UnknownModelError
from session_migrator._errors import SessionMigratorError
from session_migrator.models import _live
from session_migrator.models import _lookup as _models
from session_migrator.models import _table as _model_table
from session_migrator.models._lookup import (
    infer_tokenizer,
    known_models,
    load_overrides,
    lookup_model,
    normalize_model_name,
    register_model,
    route_name,
    unregister_model,
)
from session_migrator.models._windows import ModelWindow


@pytest.fixture(autouse=True)
def _fresh_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_models, "_registered", {})
    monkeypatch.setattr(_models, "_env_cache", None)


# name, window, input cap, output cap
FIGURES = [
    ("gpt-4o", 128_000, 128_000, 16_384),
    ("openai/gpt-4o-2024-08-06", 128_000, 128_000, 16_384),
    ("gpt-4o-mini", 128_000, 128_000, 16_384),
    ("gpt-4.1", 1_047_576, 1_047_576, 32_768),
    ("gpt-5", 400_000, 272_000, 128_000),
    ("o3", 200_000, 200_000, 100_000),
    ("gpt-4", 8_192, 8_192, 8_192),
    ("gpt-3.5-turbo", 16_385, 16_385, 4_096),
    ("claude-3-haiku-20240307", 200_000, 200_000, 4_096),
    ("anthropic.claude-3-haiku-20240307-v1:0", 200_000, 200_000, 4_096),
    ("claude-3-5-sonnet-20240620", 200_000, 200_000, 8_192),
    ("claude-3-5-sonnet@20240620", 200_000, 200_000, 8_192),
    ("claude-3-7-sonnet-latest", 200_000, 200_000, 64_000),
    ("claude-sonnet-4-5", 200_000, 200_000, 64_000),
    ("claude-sonnet-4-20250514", 200_000, 200_000, 64_000),
    ("gemini-1.5-pro", 2_097_152, 2_097_152, 8_192),
    ("models/gemini-1.5-pro-latest", 2_097_152, 2_097_152, 8_192),
    ("gemini-2.5-pro", 1_048_576, 1_048_576, 65_535),
    ("ft:gpt-4o-mini-2024-07-18:acme::abc123", 128_000, 128_000, 16_384),
    ("openrouter/anthropic/claude-3-haiku", 200_000, 200_000, 4_096),
    ("deepseek/deepseek-chat", 1_000_000, 1_000_000, 384_000),
    ("gpt-5.4", 1_050_000, 922_000, 128_000),
]


@pytest.mark.parametrize(("name", "window", "cap", "output"), FIGURES)
def test_known_figures(name: str, window: int, cap: int, output: int) -> None:
    found = lookup_model(name)
    assert (found.context_window, found.max_input_tokens, found.max_output_tokens) == (
        window,
        cap,
        output,
    )
    assert found.source.startswith("bundled:")
    assert found.as_of


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("gpt-4o", "gpt-4o"),
        ("openai/gpt-4o-2024-08-06", "gpt-4o-2024-08-06"),
        ("anthropic.claude-3-haiku-20240307-v1:0", "claude-3-haiku-20240307"),
        ("claude-3-5-sonnet@20240620", "claude-3-5-sonnet-20240620"),
        ("claude-3-7-sonnet-latest", "claude-3-7-sonnet-20250219"),
        ("openrouter/anthropic/claude-3-haiku", "claude-3-haiku-20240307"),
        ("models/gemini-1.5-pro-latest", "gemini-1.5-pro"),
        ("gpt-4o-mini-foo", "gpt-4o-mini"),
        ("GPT-4o", "gpt-4o"),
    ],
)
def test_returned_name_is_the_table_name(name: str, canonical: str) -> None:
    assert lookup_model(name).name == canonical


def test_fine_tune_resolves_as_its_base() -> None:
    tuned = lookup_model("ft:gpt-4o-mini-2024-07-18:acme::abc123")
    base = lookup_model("gpt-4o-mini")
    assert tuned.max_input_tokens == base.max_input_tokens
    assert tuned.max_output_tokens == base.max_output_tokens
    assert tuned.tokenizer == base.tokenizer == "o200k_base"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("gpt-4o", "gpt-4o"),
        ("openai/gpt-4o-2024-08-06", "gpt-4o"),
        ("anthropic/claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
        ("anthropic.claude-3-haiku-20240307-v1:0", "claude-3-haiku"),
        ("us.anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet"),
        ("bedrock/eu.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("claude-3-5-sonnet@20240620", "claude-3-5-sonnet"),
        ("vertex_ai/claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("models/gemini-1.5-pro-latest", "gemini-1.5-pro"),
        ("google/gemini-1.5-pro-002", "gemini-1.5-pro"),
        ("vertex_ai/gemini-2.0-flash-001", "gemini-2.0-flash"),
        ("openrouter/meta-llama/llama-3.3-70b-instruct:free", "llama-3.3-70b-instruct"),
        ("openrouter/anthropic/claude-3.5-sonnet:beta", "claude-3-5-sonnet"),
        ("openrouter/anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("together_ai/meta-llama/Meta-Llama-3.1-8B-Instruct", "meta-llama-3.1-8b-instruct"),
        ("azure/gpt-4o-mini", "gpt-4o-mini"),
        ("ft:gpt-4o-mini-2024-07-18:acme::abc123", "gpt-4o-mini"),
        ("ft:gpt-3.5-turbo-0125:org:custom:id", "gpt-3.5-turbo"),
        ("gpt-4-0613", "gpt-4"),
        ("mistral/mistral-large-2411", "mistral-large"),
        ("chatgpt-4o-latest", "chatgpt-4o"),
        ("meta.llama3-1-70b-instruct-v1:0", "llama3-1-70b-instruct"),
        ("ollama/llama3:70b", "llama3-70b"),
    ],
)
def test_normalize_model_name(name: str, expected: str) -> None:
    assert normalize_model_name(name) == expected


def test_route_name_keeps_dates_and_versions() -> None:
    assert route_name("openai/gpt-4o-2024-08-06") == "gpt-4o-2024-08-06"
    assert route_name("vertex_ai/claude-3-5-sonnet@20240620") == "claude-3-5-sonnet-20240620"
    assert route_name("vertex_ai/jamba-1.5-large@001") == "jamba-1.5-large"
    assert route_name("bedrock/anthropic.claude-v2:1") == "claude-v2:1"  # model 2.1, not an API tag
    assert route_name("deepseek.v3.2") == "deepseek-v3.2"
    assert route_name("claude-4-opus") == "claude-opus-4"
    assert route_name("claude-2.1") == "claude-2.1"


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("gpt-4o", "o200k_base"),
        ("chatgpt-4o-latest", "o200k_base"),
        ("gpt-4.1-mini", "o200k_base"),
        ("gpt-4.5-preview", "o200k_base"),
        ("o1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("gpt-5.4", "o200k_base"),
        ("openai/gpt-oss-120b", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("gpt-35-turbo", "cl100k_base"),  # Azure's name for it
        ("gpt-35-turbo-16k-0613", "cl100k_base"),
        ("gpt-10", "o200k_base"),
        ("claude-3-5-sonnet-20240620", "claude"),
        ("claude-opus-4-6", "claude"),
        ("claude-opus-4-7", "claude-4.7"),
        ("claude-sonnet-5", "claude-4.7"),
        ("gemini-2.5-pro", "gemini"),
        ("gemma-3-27b-it", "gemini"),
        ("mistral-large-2411", "mistral"),
        ("codestral-latest", "mistral"),
        ("pixtral-large-latest", "mistral"),
        ("ministral-8b-latest", "mistral"),
        ("magistral-medium-latest", "mistral"),
        ("devstral-small-latest", "mistral"),
        ("open-mistral-7b", "mistral-spm"),
        ("open-mixtral-8x7b", "mistral-spm"),
        ("mistral-large-2402", "mistral-spm"),
        ("qwen3-235b-a22b", "qwen"),
        ("qwq-32b", "qwen"),
        ("deepseek-chat", "deepseek"),
        ("llama-3.3-70b-instruct", "llama"),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama"),
        ("llama-2-13b-chat", "other"),
        ("grok-4", "other"),
        ("command-r-plus", "other"),
        ("kimi-k2-thinking", "other"),
        ("glm-4.6", "other"),
    ],
)
def test_infer_tokenizer(name: str, family: str) -> None:
    assert infer_tokenizer(name) == family


def test_every_bundled_openai_model_has_the_tokenizer_its_name_says() -> None:
    assert lookup_model("azure/gpt-35-turbo").tokenizer == "cl100k_base"
    for window in known_models("gpt-35"):
        assert window.tokenizer == "cl100k_base", window.name


def test_misspelt_name_raises_with_suggestion() -> None:
    with pytest.raises(UnknownModelError) as info:
        lookup_model("gpt-4o-mnii")
    assert info.value.model == "gpt-4o-mnii"
    assert "gpt-4o-mini" in info.value.suggestions
    assert "register_model" in str(info.value)
    # the advice works as written: lookup_model with the window, or a ModelWindow in its place
    assert "lookup_model('gpt-4o-mnii', context_window=N)" in str(info.value)
    assert lookup_model("gpt-4o-mnii", context_window=9_000).context_window == 9_000


def test_an_entry_point_gives_its_own_remedy_and_pickling_keeps_it() -> None:
    import pickle

    with pytest.raises(UnknownModelError) as info:
        lookup_model("acme-llm")
    cli = info.value.with_remedy("Pass --context-window N.")
    assert str(cli) == "Unknown model 'acme-llm': no context window is known for it. " + (
        "Pass --context-window N."
    )
    again = pickle.loads(pickle.dumps(cli))
    assert (str(again), again.model, again.remedy) == (str(cli), "acme-llm", cli.remedy)


@pytest.mark.parametrize("name", ["gpt-4o-minix", "claude-opus-4-9", "gpt-6", "my-local-llm"])
def test_no_silent_guess(name: str) -> None:
    with pytest.raises(UnknownModelError):
        lookup_model(name)


def test_prefix_match_accepts_variant_suffixes() -> None:
    assert lookup_model("gpt-4o-mini-foo").name == "gpt-4o-mini"
    assert lookup_model("claude-sonnet-4-5-thinking").name == "claude-sonnet-4-5"


def test_empty_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="empty"):
        lookup_model("  ")


# -- explicit values ---------------------------------------------------------------------------


def test_explicit_window_for_unknown_model() -> None:
    found = lookup_model("acme/my-llama-3-finetune", context_window=32_768, max_output_tokens=4_096)
    assert found.source == "explicit"
    assert (found.context_window, found.max_input_tokens, found.max_output_tokens) == (
        32_768,
        32_768,
        4_096,
    )
    assert found.tokenizer == "llama"
    assert found.provider == "custom"
    assert lookup_model("my-model", context_window=8_000).tokenizer == "other"


def test_explicit_values_override_found_fields() -> None:
    found = lookup_model("gpt-4o", max_output_tokens=1_000)
    assert (found.context_window, found.max_input_tokens, found.max_output_tokens) == (
        128_000,
        128_000,
        1_000,
    )
    assert found.source == "explicit+bundled:checked"
    smaller = lookup_model("gpt-5", context_window=100_000)
    assert (smaller.context_window, smaller.max_input_tokens) == (100_000, 100_000)
    wider = lookup_model("gpt-4", max_input_tokens=16_000)
    assert (wider.context_window, wider.max_input_tokens) == (16_000, 16_000)
    assert lookup_model("gpt-4o", tokenizer="claude").tokenizer == "claude"


def test_explicit_values_are_validated() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        lookup_model("gpt-4o", context_window=1_000, max_input_tokens=2_000)
    with pytest.raises(ValueError, match="unknown tokenizer"):
        lookup_model("gpt-4o", tokenizer="nope")
    with pytest.raises(ValueError, match="integer"):
        lookup_model("gpt-4o", context_window="8k")  # type: ignore[arg-type]


# -- overrides ---------------------------------------------------------------------------------


def test_register_and_unregister() -> None:
    window = register_model("acme-7b", context_window=32_000, max_output_tokens=2_000)
    assert window.source == "override"
    assert lookup_model("acme-7b") == window
    assert lookup_model("together_ai/acme/acme-7b") == window
    unregister_model("acme-7b")
    with pytest.raises(UnknownModelError):
        lookup_model("acme-7b")
    unregister_model("never-registered")  # ignored


def test_registration_beats_the_bundled_table() -> None:
    register_model("gpt-4o", context_window=64_000, provider="openai")
    assert lookup_model("gpt-4o").context_window == 64_000
    assert lookup_model("openai/gpt-4o-2024-08-06").context_window == 64_000
    assert lookup_model("gpt-4o-mini").context_window == 128_000
    unregister_model("gpt-4o")
    assert lookup_model("gpt-4o").source == "bundled:checked"


def test_host_specific_registration_covers_only_that_name() -> None:
    register_model("azure/gpt-4o", context_window=32_000)
    assert lookup_model("azure/gpt-4o").context_window == 32_000
    assert lookup_model("gpt-4o").context_window == 128_000


def test_register_validates() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        register_model("x", context_window=1_000, max_input_tokens=2_000)
    with pytest.raises(ValueError, match="positive"):
        register_model("x", context_window=0)
    with pytest.raises(ValueError, match="unknown tokenizer"):
        register_model("x", context_window=1_000, tokenizer="bpe")


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_override_file_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = {
        "models": {
            "acme-7b": {"context_window": 32_000, "max_output_tokens": 2_000, "provider": "acme"},
            "gpt-4o": {"context_window": 100_000, "max_input_tokens": 90_000},
        }
    }
    path = _write(tmp_path / "models.json", json.dumps(data))
    monkeypatch.setenv("SESSION_MIGRATOR_MODELS", str(path))
    acme = lookup_model("acme-7b")
    assert (acme.context_window, acme.max_output_tokens, acme.provider) == (32_000, 2_000, "acme")
    assert acme.source == "override"
    assert lookup_model("gpt-4o").max_input_tokens == 90_000
    assert {"acme-7b", "gpt-4o"} <= {w.name for w in known_models() if w.source == "override"}


def test_override_file_toml_both_shapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(
        tmp_path / "models.toml",
        '[models."acme-7b"]\ncontext_window = 16384\ntokenizer = "llama"\n',
    )
    monkeypatch.setenv("SESSION_MIGRATOR_MODELS", str(path))
    assert lookup_model("acme-7b").context_window == 16_384
    assert lookup_model("acme-7b").tokenizer == "llama"
    listed = _write(
        tmp_path / "list.toml",
        '[[models]]\nname = "beta-1"\ncontext_window = 8192\nmax_output_tokens = 1024\n',
    )
    assert load_overrides(listed) == 1
    assert lookup_model("beta-1").max_output_tokens == 1_024


def test_override_file_is_reread_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "m.json", '{"models": {"acme": {"context_window": 1000}}}')
    monkeypatch.setenv("SESSION_MIGRATOR_MODELS", str(path))
    assert lookup_model("acme").context_window == 1_000
    _write(path, '{"models": {"acme": {"context_window": 2000}}}')
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000))
    assert lookup_model("acme").context_window == 2_000
    other = _write(tmp_path / "n.json", '[{"name": "acme", "context_window": 3000}]')
    monkeypatch.setenv("SESSION_MIGRATOR_MODELS", str(other))
    assert lookup_model("acme").context_window == 3_000
    monkeypatch.delenv("SESSION_MIGRATOR_MODELS")
    with pytest.raises(UnknownModelError):
        lookup_model("acme")


def test_registration_beats_the_override_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "m.json", '{"models": {"acme": {"context_window": 1000}}}')
    monkeypatch.setenv("SESSION_MIGRATOR_MODELS", str(path))
    register_model("acme", context_window=5_000)
    assert lookup_model("acme").context_window == 5_000
    unregister_model("acme")
    assert lookup_model("acme").context_window == 1_000


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "malformed"),
        ('{"models": 3}', "expected"),
        ('{"models": {"a": {"max_output_tokens": 10}}}', "context_window is required"),
        ('{"models": {"a": {"context_window": 10, "colour": "red"}}}', "unknown field"),
        ('{"models": {"a": {"context_window": -1}}}', "positive"),
        ('{"models": {"a": {"context_window": 10, "max_input_tokens": 20}}}', "exceeds"),
        ('[{"context_window": 10}]', "needs a name"),
    ],
)
def test_bad_override_file_names_the_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    path = _write(tmp_path / "bad.json", text)
    with pytest.raises(SessionMigratorError, match=message):
        load_overrides(path)
    monkeypatch.setenv("SESSION_MIGRATOR_MODELS", str(path))
    with pytest.raises(SessionMigratorError, match=r"bad\.json"):
        lookup_model("gpt-4o")


def test_missing_override_file_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSION_MIGRATOR_MODELS", str(tmp_path / "absent.toml"))
    with pytest.raises(SessionMigratorError, match="does not exist"):
        lookup_model("gpt-4o")


def test_load_overrides_is_all_or_nothing(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "m.json",
        '{"models": {"good": {"context_window": 10}, "bad": {"context_window": 0}}}',
    )
    with pytest.raises(SessionMigratorError):
        load_overrides(path)
    with pytest.raises(UnknownModelError):
        lookup_model("good")


# -- the live cache layer ----------------------------------------------------------------------


def test_live_cache_sits_between_overrides_and_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    live = ModelWindow("gpt-4o", "openai", 120_000, 120_000, 8_000, "o200k_base", "cache:x", "d")

    def fake(name: str) -> ModelWindow | None:
        seen.append(name)
        return live if name == "gpt-4o" else None

    monkeypatch.setattr(_live, "lookup_cached", fake)
    assert lookup_model("openai/gpt-4o-2024-08-06") is live
    assert seen == ["gpt-4o"]  # called with the normalised name
    assert lookup_model("gpt-4.1").source.startswith("bundled:")
    register_model("gpt-4o", context_window=50_000)
    assert lookup_model("gpt-4o").source == "override"


# -- listing and loading -----------------------------------------------------------------------


def test_known_models_filters() -> None:
    everything = known_models()
    assert len(everything) >= 1_000
    assert [w.name for w in everything] == sorted(w.name for w in everything)
    claude = known_models("claude-3-5")
    assert {w.name for w in claude} >= {"claude-3-5-sonnet-20240620", "claude-3-5-haiku-20241022"}
    assert all(w.provider == "anthropic" for w in known_models(provider="Anthropic"))
    assert known_models("openai/gpt-4o-2024-08-06")  # normalised query
    assert known_models("no-such-model-anywhere") == []


def test_known_models_shows_overrides_in_place() -> None:
    register_model("gpt-4o", context_window=64_000)
    register_model("acme-7b", context_window=4_000)
    names = [w.name for w in known_models("gpt-4o") if w.name == "gpt-4o"]
    assert names == ["gpt-4o"]
    assert next(w for w in known_models("gpt-4o") if w.name == "gpt-4o").source == "override"
    assert [w.name for w in known_models("acme")] == ["acme-7b"]


def test_table_loads_once_under_concurrency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_model_table, "_table", None)
    loads: list[int] = []
    real = json.loads

    def counting(text: str | bytes) -> object:
        loads.append(1)
        return real(text)

    monkeypatch.setattr(json, "loads", counting)
    barrier = threading.Barrier(8)
    results: list[ModelWindow] = []

    def worker() -> None:
        barrier.wait()
        results.append(lookup_model("gpt-4o"))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 8
    assert len({id(r) for r in results}) == 1
    assert len(loads) == 1


# -- issue 24: the model's own facts, whoever serves it; Ollama's names ------------------------


@pytest.mark.parametrize(
    ("name", "window"),
    [
        ("mistralai/Mistral-7B-Instruct-v0.3", 32_768),  # a reseller said 127,000
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", 131_072),  # 8,192
        ("llama-3.1-8b-instruct", 131_072),  # 16,384
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 10_000_000),  # Meta: 10M (was 8,192)
        ("mistral-small-2506", 128_000),  # 32,000
        ("minimax-m1-80k", 1_000_000),  # 4,096
        ("codestral-latest", 256_000),  # 32,000
        ("llama3:8b", 8_192),  # 8,000
        ("ollama_chat/llama3.1", 131_072),  # 8,192, while llama3.1:8b said 128,000
        ("llama3.1:8b", 131_072),
        ("llama3.1:8b-instruct-q4_K_M", 131_072),
        ("llama3.1:latest", 131_072),
        ("fireworks_ai/accounts/fireworks/models/llama-v3p1-8b-instruct", 131_072),
        ("bedrock/meta.llama3-1-8b-instruct-v1:0", 131_072),
    ],
)
def test_the_model_s_own_window_wins_over_resellers(name: str, window: int) -> None:
    assert lookup_model(name).context_window == window


@pytest.mark.parametrize(
    ("name", "model", "window"),
    [
        ("qwen2.5:7b", "qwen2.5-7b-instruct", 32_768),
        ("qwen2.5-coder:32b", "qwen2.5-coder-32b-instruct", 32_768),
        ("gemma2:9b", "gemma-2-9b-it", 8_192),
        ("gemma2", "gemma-2-9b-it", 8_192),  # the default tag
        ("phi3:mini", "phi-3-mini-4k-instruct", 4_096),
        ("phi3:medium-128k", "phi-3-medium-128k-instruct", 131_072),
        ("ollama/mistral:7b-instruct-q8_0", "mistral-7b-instruct-v0.3", 32_768),
        ("qwen2.5:7b-instruct-fp16", "qwen2.5-7b-instruct", 32_768),
        ("llama3.2", "llama-3.2-3b-instruct", 131_072),
    ],
)
def test_ollama_tags_resolve_to_the_base_model(name: str, model: str, window: int) -> None:
    found = lookup_model(name)
    assert (found.name, found.context_window) == (model, window)


def test_a_host_tag_is_not_dropped_as_a_routing_tag() -> None:
    assert route_name("phi3:mini") == "phi3-mini"
    assert route_name("openrouter/meta-llama/llama-3.1-8b-instruct:free") == "llama-3.1-8b-instruct"


@pytest.mark.parametrize(
    ("typed", "bare"),
    [
        ("ollama:llama3.1:8b", "llama3.1:8b"),
        ("openai:gpt-4o-mini", "gpt-4o-mini"),
        ("anthropic:claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("mistralai:mistral-large-latest", "mistral-large-latest"),
    ],
)
def test_a_frameworks_provider_colon_name_is_the_models_own(typed: str, bare: str) -> None:
    """LangChain's init_chat_model("provider:model") names resolve in the core's one lookup,
    for every surface (the CLI, the MCP server, migrate()), as the bare name does."""
    assert _models.lookup_model(typed) == _models.lookup_model(bare)


def test_an_ollama_size_tag_is_not_a_provider() -> None:
    assert _models.lookup_model("llama3:70b").context_window == 8192


def test_a_frameworks_facts_merge_with_the_tables_the_same_way_for_every_adapter() -> None:
    """The lookup's last source: a framework's facts (a LangChain profile, a LlamaIndex
    LLM's metadata) keep the table's provider and tokenizer, replace its window where they give
    one, never lift the table's input cap on the table's own window, and describe alone a
    model nothing else knows."""
    table = _models.lookup_model("gpt-5")
    same = _models.lookup_model("gpt-5", max_input_tokens=table.context_window, framework="profile")
    assert same.max_input_tokens == table.max_input_tokens  # the cap stays
    assert (same.provider, same.tokenizer, same.source) == (
        table.provider,
        table.tokenizer,
        "profile",
    )
    smaller = _models.lookup_model("gpt-5", context_window=32_000, framework="metadata")
    assert (smaller.context_window, smaller.max_input_tokens) == (32_000, 32_000)
    alone = _models.lookup_model(
        "house-model-7",
        max_input_tokens=6_000,
        max_output_tokens=1_000,
        framework="profile",
        provider="acme",
    )
    assert (alone.context_window, alone.max_input_tokens, alone.provider) == (7_000, 6_000, "acme")
    assert alone.source == "profile"
    with pytest.raises(UnknownModelError):
        _models.lookup_model("house-model-7", framework="profile")
