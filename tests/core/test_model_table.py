"""The bundled model table: its contract, its fixes, and that the script regenerates it exactly."""

from __future__ import annotations

import importlib.resources
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from session_migrator._encodings import ENCODINGS
from session_migrator._model_names import normalize_model_name
from session_migrator._tokens import FAMILY_MULTIPLIERS

REPO = Path(__file__).parents[2]
SCRIPT = REPO / "scripts" / "build_model_table.py"
DATA = REPO / ".." / "shared" / "data"
COMMITTED = REPO / "shared" / "session_migrator" / "_data" / "models.json"


@pytest.fixture(scope="module")
def table() -> dict[str, Any]:
    resource = importlib.resources.files("session_migrator") / "_data" / "models.json"
    data: dict[str, Any] = json.loads(resource.read_text(encoding="utf-8"))
    return data


def test_size(table: dict[str, Any]) -> None:
    rows = table["models"]
    assert len(rows) >= 1_000
    assert len({r["provider"] for r in rows.values()}) >= 20
    assert table["counts"]["models"] == len(rows)


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
        assert normalize_model_name(alias) == normalize_model_name(target), alias


def test_source_errors_are_fixed_not_copied(table: dict[str, Any]) -> None:
    rows = table["models"]
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
        assert rows[name]["tokenizer"] == family, name


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
    assert "out of date" in result.stderr
    assert _build("--check", "--out", str(COMMITTED)).returncode == 0
