"""Providers' listings: a provider-qualified name gets that provider's smaller caps, never more.

Issue 24: ``github_copilot/claude-sonnet-4`` gave Claude Sonnet 4's own 200,000 input tokens
where Copilot serves 128,000; a fit by that window is one Copilot rejects. The table-wide tests
read the sources in ``shared/data`` (beside the repository, as test_model_table.py does) with
the build script's own readers, so they check every listing the table was built from.
"""

from __future__ import annotations

import importlib
import importlib.resources
import json
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from session_migrator import UnknownModelError, known_models, lookup_model
from session_migrator.models._names import provider_prefix, route_name
from session_migrator.models._windows import ModelWindow

REPO = Path(__file__).parents[2]
DATA = REPO / ".." / "shared" / "data"
Facts = tuple[int, int, int | None]


def _facts(window: ModelWindow) -> Facts:
    return (window.max_input_tokens, window.context_window, window.max_output_tokens)


def _at_most(facts: Facts, limit: tuple[int | None, int | None, int | None]) -> bool:
    """Whether no figure of ``facts`` (input, window, output) exceeds its figure in ``limit``
    (``None``: not stated); an output cap not stated is the window, the most a reply can take."""
    cap, window, output = facts
    ours = (cap, window, output or window)
    return all(b is None or a <= b for a, b in zip(ours, limit, strict=True))


@pytest.fixture(scope="module")
def table() -> dict[str, Any]:
    resource = importlib.resources.files("session_migrator") / "_data" / "models.json"
    data: dict[str, Any] = json.loads(resource.read_text(encoding="utf-8"))
    return data


def _script(name: str) -> ModuleType:
    if not DATA.is_dir():
        pytest.fail(f"{DATA.resolve()} is missing: shared/data must sit beside the repository")
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(REPO / "scripts"))


@pytest.fixture(scope="module")
def build() -> ModuleType:
    """The build script, whose readers give every provider row the table was built from."""
    return _script("build_model_table")


@pytest.fixture(scope="module")
def listings(build: ModuleType) -> ModuleType:
    """The build's rules for listings (``LOCAL_RUNTIMES``, ``qualified_id``)."""
    return _script("model_listings")


@pytest.fixture(scope="module")
def listed(build: ModuleType) -> list[Any]:
    """Every provider row of models.dev and LiteLLM that the build read (``model_sources.Row``)."""
    sources = build.MODELS_DEV, build.LITELLM_FILE
    bases = build.read_models_dev_bases(DATA / sources[0])
    return [
        *build.read_models_dev_providers(DATA / sources[0], bases, build.owner_of),
        *build.read_litellm(DATA / sources[1], build.owner_of, build.FIRST_PARTY),
    ]


# -- the example and others from the data ------------------------------------------------


@pytest.mark.parametrize(
    "name", ["github_copilot/claude-sonnet-4", "github-copilot/claude-sonnet-4"]
)
def test_copilot_serves_claude_sonnet_4_with_its_own_smaller_caps(name: str) -> None:
    found = lookup_model(name)
    assert found.name == "claude-sonnet-4-20250514"
    # models.dev: context 216,000 (above the model's 200,000: never raised), input 128,000
    assert _facts(found) == (128_000, 200_000, 16_000)
    assert found.source == "bundled:models.dev@2026-07-02"
    assert found.ref == "models.dev: providers/github-copilot/models/claude-sonnet-4"
    assert found.as_of == "2026-07-02"
    own = lookup_model("claude-sonnet-4")  # the model's own facts, whoever serves it
    assert _facts(own) == (200_000, 200_000, 64_000)
    assert own.source == "bundled:checked"


@pytest.mark.parametrize(
    ("name", "facts", "source"),
    [
        # a smaller output cap only: Vertex serves Claude 3.7 Sonnet with 8,192 of 64,000
        ("vertex_ai/claude-3-7-sonnet@20250219", (200_000, 200_000, 8_192), "litellm@2026-08-01"),
        # a smaller window (models.dev) and input cap (both sources) than DeepSeek's 1M alias
        (
            "openrouter/deepseek/deepseek-chat",
            (65_536, 128_000, 8_192),
            "models.dev@2026-07-02+litellm@2026-08-01",
        ),
        # a smaller input cap; LiteLLM states no window, so the model's stays
        (
            "fireworks_ai/accounts/fireworks/models/llama-v3p1-8b-instruct",
            (16_384, 131_072, 16_384),
            "litellm@2026-08-01",
        ),
        # a bare LiteLLM key of Bedrock's, with Bedrock named in front
        ("bedrock/meta.llama3-1-8b-instruct-v1:0", (128_000, 131_072, 2_048), "litellm@2026-08-01"),
    ],
)
def test_a_provider_s_smaller_listing_wins_for_its_own_name(
    name: str, facts: Facts, source: str
) -> None:
    found = lookup_model(name)
    assert _facts(found) == facts
    assert found.source == f"bundled:{source}"
    assert found.ref.startswith(("models.dev: providers/", "litellm: "))
    assert _at_most(facts, _facts(lookup_model(route_name(name))))


def test_a_host_s_larger_figure_never_wins() -> None:
    """OVHcloud's LiteLLM entry says 127,000 for Mistral 7B v0.3, whose window is 32,768."""
    found = lookup_model("ovhcloud/Mistral-7B-Instruct-v0.3")
    assert (found.name, found.context_window, found.max_input_tokens) == (
        "mistral-7b-instruct-v0.3",
        32_768,
        32_768,
    )


@pytest.mark.parametrize(
    ("name", "bare"),
    [
        ("deepseek/deepseek-chat", "deepseek-chat"),  # LiteLLM still says 131,072: fixed in the row
        ("mistral/codestral-latest", "codestral-latest"),  # LiteLLM still says 32,000
        ("ollama_chat/llama3.1", "llama3.1:8b"),  # Ollama's 8,192 is a default num_ctx
        ("ollama/llama3.1", "llama3.1:8b"),
        ("lm_studio/qwen2.5-7b-instruct", "qwen2.5-7b-instruct"),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b-instruct"),  # an organisation
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b-instruct-v0.3"),
    ],
)
def test_the_maker_s_api_and_local_runtimes_give_the_model_s_facts(name: str, bare: str) -> None:
    assert lookup_model(name) == lookup_model(bare)
    assert lookup_model("ollama_chat/llama3.1").context_window == 131_072


def test_known_models_of_a_provider_show_its_listings() -> None:
    copilot = {w.name: w for w in known_models(provider="github_copilot")}
    assert copilot == {w.name: w for w in known_models(provider="GitHub-Copilot")}
    assert _facts(copilot["claude-sonnet-4-20250514"]) == (128_000, 200_000, 16_000)
    assert copilot["claude-sonnet-4-20250514"] == lookup_model("github_copilot/claude-sonnet-4")
    for name, window in copilot.items():
        assert window == lookup_model(f"github-copilot/{name}"), name
        assert _at_most(_facts(window), _facts(lookup_model(name))), name
    anthropic = {w.name: w for w in known_models(provider="anthropic")}
    assert _facts(anthropic["claude-sonnet-4-20250514"]) == (200_000, 200_000, 64_000)


# -- over the whole table ------------------------------------------------------------------------


def test_every_provider_model_id_resolves_within_its_listing_and_its_row(
    build: ModuleType, listings: ModuleType, listed: list[Any], table: dict[str, Any]
) -> None:
    """Every models.dev provider row (``provider/id``) and every LiteLLM chat or responses key
    the table was built from resolves; with the provider named, never above that provider's
    listing (the maker's own API and local runtimes aside: they give the row) nor the row."""
    local = listings.LOCAL_RUNTIMES
    ids: set[str] = set()
    lowered = 0
    for row in listed:
        name = listings.qualified_id(row)
        ids.add(name.lower())
        found = lookup_model(name)  # raises UnknownModelError if it does not resolve
        own = lookup_model(route_name(name))
        assert found.name == own.name, name
        assert _at_most(_facts(found), _facts(own)), name
        provider = provider_prefix(name)
        if provider in local:
            assert found == own, name
        elif row.rank == build.RANK_HOST:
            stated = (row.max_input_tokens, row.context_window or None, row.max_output_tokens)
            assert _at_most(_facts(found), stated), (name, _facts(found), stated)
        lowered += found != own
    counts = table["counts"]
    assert counts["provider_ids"] == len(ids) >= 3_000
    assert lowered >= 1_000
    kept = [(p, m) for m, r in table["models"].items() for p in r.get("listings", {})]
    assert counts["smaller_listings"] == len(kept) >= 1_000
    assert len({p for p, _ in kept}) >= 100
    assert not {p for p, _ in kept} & local


def test_every_listing_is_smaller_than_its_row_and_never_larger(table: dict[str, Any]) -> None:
    sources = {key.split("@")[0] for key in table["sources"] if "@" in key}
    for name, row in table["models"].items():
        own = (row["max_input_tokens"], row["context_window"], row["max_output_tokens"])
        for provider, (cap, window, output, refs) in row.get("listings", {}).items():
            assert (cap, window, output) != own, (name, provider)
            limit = (own[0], own[1], own[2] or window)
            assert _at_most((cap, window, output), limit), (name, provider)
            assert 0 < cap <= window, name
            assert output is None or 0 < output <= window, name
            assert provider == provider_prefix(f"{provider}/"), provider
            for ref in refs.split("; "):
                assert ref.split(":")[0] in sources, (name, ref)
            found = lookup_model(f"{provider}/{name}")
            assert _facts(found) == (cap, window, output), (name, provider)
            assert found.ref == refs


NOT_CHAT = re.compile(
    r"embed|rerank|tts|whisper|image|speech|transcri|flux|dall-e|imagen|veo-|sora"
)
ROUTERS = {"auto", "free", "bodybuilder", "router"}  # openrouter/auto picks a model per request


def _models_dev_chat_rows() -> list[str]:
    """``provider/id`` of every models.dev provider row of a chat model with a stated window."""
    root = DATA / "models.dev" / "providers"
    names = []
    for path in sorted(root.glob("*/models/**/*.toml")):
        host = path.relative_to(root).parts[0]
        local = path.relative_to(root / host / "models").with_suffix("").as_posix()
        text = path.read_text(encoding="utf-8").strip()
        if text.endswith(".toml") and "\n" not in text:  # a symbolic link stored as text
            target = path.parent / text
            if not target.is_file():
                continue
            text = target.read_text(encoding="utf-8")
        data = tomllib.loads(text)
        output = data.get("modalities", {}).get("output", ["text"])
        stated = data.get("limit", {}).get("context", 0) > 0 or "base_model" in data
        chat = "text" in output and not NOT_CHAT.search(local.lower())
        if stated and chat and route_name(local) not in ROUTERS:
            names.append(f"{host}/{local}")
    return names


def test_every_litellm_chat_key_and_models_dev_row_resolves() -> None:
    """The raw sources, read apart from the build: every LiteLLM ``chat`` / ``responses`` key
    with an input limit and every models.dev provider row of a chat model resolves (routers,
    embedding, speech and image models are not chat models)."""
    if not DATA.is_dir():
        pytest.fail(f"{DATA.resolve()} is missing: shared/data must sit beside the repository")
    litellm = json.loads((DATA / "litellm_model_prices_and_context_window.json").read_text())
    keys = [
        key
        for key, entry in litellm.items()
        if isinstance(entry, dict)
        and entry.get("mode") in ("chat", "responses")
        and (entry.get("max_input_tokens") or 0) > 0
        and not NOT_CHAT.search(key.lower())
        and route_name(key) not in ROUTERS
    ]
    rows = _models_dev_chat_rows()
    unknown = []
    for name in (*keys, *rows):
        try:
            lookup_model(name)
        except UnknownModelError:
            unknown.append(name)
    assert not unknown, unknown
    assert len(keys) >= 2_000
    assert len(rows) >= 4_500
