"""The bundled model table: its contract, its fixes, and that the script regenerates it exactly."""

from __future__ import annotations

import importlib.resources
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from session_migrator import UnknownModelError, lookup_model
from session_migrator.counting._encodings import ENCODINGS
from session_migrator.counting._tokens import FAMILY_MULTIPLIERS
from session_migrator.models._names import normalize_model_name, route_name, spelling_key
from session_migrator.models._tokenizers import EXACT_ENCODINGS

REPO = Path(__file__).parents[2]
SCRIPT = REPO / "scripts" / "build_model_table.py"
DATA = REPO / ".." / "shared" / "data"
#: Base models that are not chat models (kept out of the table).
NOT_CHAT = re.compile(r"embed|rerank|tts|whisper|image|speech|transcri")
COMMITTED = REPO / "shared" / "session_migrator" / "_data" / "models.json"


@pytest.fixture(scope="module")
def table() -> dict[str, Any]:
    resource = importlib.resources.files("session_migrator") / "_data" / "models.json"
    data: dict[str, Any] = json.loads(resource.read_text(encoding="utf-8"))
    return data


def test_size(table: dict[str, Any]) -> None:
    rows = table["models"]
    assert len(rows) >= 1_500
    assert len({r["provider"] for r in rows.values()}) >= 60  # makers
    hosts = {h for r in rows.values() for h in r.get("hosts", ())}
    assert len(hosts | {r["provider"] for r in rows.values()}) >= 100
    assert table["counts"]["models"] == len(rows)
    assert table["counts"]["providers"] >= 100
    assert table["counts"]["listings"] >= 3_000  # (provider, model) listings folded into rows


def test_the_models_layer_names_the_encodings_the_counting_layer_loads() -> None:
    assert set(EXACT_ENCODINGS) == set(ENCODINGS)


def test_every_row_keeps_its_contract(table: dict[str, Any]) -> None:
    families = set(ENCODINGS) | set(FAMILY_MULTIPLIERS)
    for name, row in table["models"].items():
        assert name == name.lower().strip(), name
        assert 0 < row["max_input_tokens"] <= row["context_window"], name
        output = row["max_output_tokens"]
        assert output is None or 0 < output <= row["context_window"], name
        assert row["tokenizer"] in families, name
        assert row["source"], name
        assert row["as_of"], name
        assert row["provider"], name
        assert isinstance(row["context_window"], int), name


def test_aliases_point_at_rows(table: dict[str, Any]) -> None:
    rows, aliases = table["models"], table["aliases"]
    for alias, target in aliases.items():
        assert target in rows, alias
        assert alias not in rows, alias
        assert alias != target, alias


def _facts(name: str) -> tuple[int, int, int | None]:
    w = lookup_model(name)
    return (w.context_window, w.max_input_tokens, w.max_output_tokens)


def test_every_spelling_of_one_model_has_the_same_facts(table: dict[str, Any]) -> None:
    """Issue 24: ollama_chat/llama3.1 was 8,192 and llama3.1:8b 128,000. Names that share a
    spelling key (one model) and every alias resolve to the same facts, over the whole table."""
    names = [*table["models"], *table["aliases"]]
    by_key: dict[str, set[tuple[int, int, int | None]]] = defaultdict(set)
    for name in names:
        by_key[spelling_key(name)].add(_facts(name))
    split = {key: facts for key, facts in by_key.items() if len(facts) > 1}
    assert not split, f"{len(split)} models with differing facts, e.g. {sorted(split)[:5]}"
    for alias, target in table["aliases"].items():
        assert _facts(alias) == _facts(target), alias


def _names(name: str) -> set[str]:
    routed = route_name(name)
    return {routed, normalize_model_name(routed), spelling_key(routed)}


def _at_most(facts: tuple[int, int, int | None], limit: tuple[int, int, int | None]) -> bool:
    """Whether no figure of ``facts`` (window, input, output: as :func:`_facts`) exceeds its
    figure in ``limit`` (``None``: not stated); an output cap not stated is the window."""
    window, cap, output = facts
    ours = (window, cap, output or window)
    return all(b is None or a <= b for a, b in zip(ours, limit, strict=True))


def test_every_provider_spelling_of_a_base_model_has_its_facts(table: dict[str, Any]) -> None:
    """Every models.dev provider row that names its base model, looked up as the provider spells
    it (``meta-llama/llama-4-scout`` at OpenRouter), gets the base model's facts; with the
    provider in front (``openrouter/meta-llama/llama-4-scout``), those or the provider's own
    smaller caps (see test_model_listings.py), never more."""
    root = DATA / "models.dev" / "providers"
    if not root.is_dir():
        pytest.fail(f"{root} is missing: shared/data must sit beside the repository")
    checked = 0
    mislinked: set[str] = set()
    names = {*table["models"], *table["aliases"]}
    for path in sorted(root.glob("*/models/**/*.toml")):
        text = path.read_text(encoding="utf-8")
        match = re.search(r'^base_model = "[^/"]+/([^"]+)"', text, re.M)
        if match is None or NOT_CHAT.search(match.group(1).lower()):
            continue
        host = path.relative_to(root).parts[0]
        local = path.relative_to(root / host / "models").with_suffix("").as_posix()
        spelling = f"{host}/{local}"
        base = match.group(1)
        try:
            base_facts = _facts(base)
        except UnknownModelError:
            continue  # a base model that is not a chat model (filtered out of the table)
        if _facts(route_name(spelling)) == base_facts:
            assert _at_most(_facts(spelling), base_facts), spelling
            checked += 1
            continue
        # else the host's name must be another model's (neon: claude-sonnet-4 -> base
        # claude-sonnet-4-5), whose own facts win, as the build has it
        own = _names(spelling)
        assert own & names, (spelling, base)
        assert not own & _names(base), (spelling, base)
        mislinked.add(spelling)
    assert checked >= 1_000
    assert len(mislinked) < 100, sorted(mislinked)


def test_source_errors_are_fixed_not_copied(table: dict[str, Any]) -> None:
    rows = {**table["models"]}
    rows.update({a: table["models"][t] for a, t in table["aliases"].items()})
    gpt5 = rows["gpt-5"]
    assert (gpt5["context_window"], gpt5["max_input_tokens"]) == (400_000, 272_000)
    assert "note" in gpt5
    assert rows["gpt-5.4"]["max_input_tokens"] < rows["gpt-5.4"]["context_window"]
    assert rows["claude-sonnet-4-20250514"]["context_window"] == 200_000
    assert rows["claude-sonnet-4-6"]["context_window"] == 1_000_000  # 1M by default from 4.6
    assert rows["deepseek-chat"]["context_window"] == rows["deepseek-v4-flash"]["context_window"]
    for retired in (
        "claude-3-5-sonnet-20240620",
        "claude-3-5-sonnet-20241022",
        "claude-3-5-haiku-20241022",
        "gemini-1.5-pro",
        "gemini-1.5-flash",
        "gemini-1.5-flash-8b",
    ):
        assert rows[retired]["source"] == "checked", retired
    assert rows["gemini-1.5-pro"]["context_window"] == 2_097_152


def test_no_claude_before_4_6_claims_a_1m_window(table: dict[str, Any]) -> None:
    for name, row in table["models"].items():
        if row["provider"] == "anthropic" and row["context_window"] > 200_000:
            assert row["tokenizer"] == "claude-4.7" or "4-6" in name, name


def test_tokenizer_families(table: dict[str, Any]) -> None:
    rows = table["models"]
    expected = {
        "gpt-4o": "o200k_base",
        "gpt-4": "cl100k_base",
        "o3": "o200k_base",
        "claude-3-haiku-20240307": "claude",
        "claude-opus-4-7": "claude-4.7",
        "gemini-2.5-pro": "gemini",
        "mistral-large-2411": "mistral",
        "open-mixtral-8x7b": "mistral-spm",
        "deepseek-chat": "deepseek",
    }
    for name, family in expected.items():
        row = rows.get(name) or rows[table["aliases"][name]]
        assert row["tokenizer"] == family, name


def _build(*args: str) -> subprocess.CompletedProcess[str]:
    if not DATA.is_dir():
        pytest.fail(
            f"{DATA.resolve()} is missing: the table's sources (LiteLLM's list and "
            "model_windows.csv) must sit in shared/data beside the repository"
        )
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(DATA), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_script_regenerates_the_committed_file_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "models.json"
    result = _build("--out", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == COMMITTED.read_bytes(), (
        "the committed models.json is stale: run `python scripts/build_model_table.py`"
    )


def test_check_mode_notices_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "models.json"
    stale.write_text(COMMITTED.read_text(encoding="utf-8").replace("128000", "128001", 1))
    result = _build("--check", "--out", str(stale))
    assert result.returncode == 1
    assert "out of date" in result.stderr  # (a fresh file passes: see the byte-for-byte test)
