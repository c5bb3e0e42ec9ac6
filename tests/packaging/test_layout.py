"""The layout contracts: what each package imports, and what it exposes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_IN_CORE = (
    "langchain_core",
    "langchain",
    "llama_index",
    "mcp",
    "openai",
    "redis",
    "psycopg",
    "anthropic",
    "google.genai",
    "langgraph",
    # the local embedding model's libraries: loaded by local_embeddings() only
    "safetensors",
    "tokenizers",
)


def _modules_after(code: str, tmp_path: Path) -> list[str]:
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def test_core_imports_no_framework_or_optional_client(tmp_path: Path) -> None:
    code = (
        "import session_migrator, session_migrator.cli, session_migrator.store, "
        "session_migrator.importers\n"
        "from session_migrator import migrate, plan, lookup_model, open_store\n"
        "session_migrator.migrate([session_migrator.Message('user', 'hi')], 'gpt-4o')\n"
        "from session_migrator.cli._app import build_parser\n"
        "build_parser()"
    )
    modules = _modules_after(code, tmp_path)
    leaked = [m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN_IN_CORE)]
    assert leaked == []


@pytest.mark.parametrize(
    ("package", "other"),
    [
        ("langchain_session_migrator", "llama_index"),
        ("llamaindex_session_migrator", "langchain_core"),
    ],
)
def test_adapters_do_not_import_each_other(tmp_path: Path, package: str, other: str) -> None:
    modules = _modules_after(f"import {package}", tmp_path)
    assert package in modules
    assert not [m for m in modules if m == other or m.startswith(other + ".")]
    sibling = (
        "llamaindex_session_migrator"
        if package.startswith("langchain")
        else "langchain_session_migrator"
    )
    assert sibling not in modules


def test_shared_is_not_importable_from_elsewhere(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import shared"], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "No module named 'shared'" in result.stderr


def test_one_copy_of_the_core_on_sys_path(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import session_migrator; print(session_migrator.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(out.stdout.strip()).parent == ROOT / "shared" / "session_migrator"


def test_every_package_is_typed() -> None:
    for folder in (
        "shared/session_migrator",
        "langchain_session_migrator",
        "llamaindex_session_migrator",
    ):
        assert (ROOT / folder / "py.typed").is_file()
