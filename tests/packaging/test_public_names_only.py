"""The adapters and the examples use only the core's public API.

They are how someone writes an integration for another framework, so what they need is what the
core's public API must offer (docs/design.md lists it). The CLI and the MCP server live inside the
core and may use its internals.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
USERS = ["langchain_session_migrator", "llamaindex_session_migrator", "examples"]


def private_imports(path: Path) -> list[str]:
    """``line: module`` of each import of a private core module (or name) in ``path``."""
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            names = [a.name for a in node.names]
            if parts[0] == "session_migrator" and (
                any(p.startswith("_") for p in parts[1:])
                or any(n.startswith("_") and n != "__version__" for n in names)
            ):
                found.append(f"{where}:{node.lineno}: {node.module}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "session_migrator" and any(p.startswith("_") for p in parts[1:]):
                    found.append(f"{where}:{node.lineno}: {alias.name}")
    return found


def test_the_check_sees_a_private_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from session_migrator.migration._migrate import default_counter\n"
        "import session_migrator.fitting._fit\n"
        "from session_migrator import migrate\nfrom session_migrator.store import open_store\n"
    )
    assert len(private_imports(sample)) == 2


def test_adapters_and_examples_use_public_names_only() -> None:
    found = [
        hit for folder in USERS for path in sorted((ROOT / folder).rglob("*.py"))
        for hit in private_imports(path)
    ]  # fmt: skip
    assert not found, "private core imports (export them from session_migrator):\n" + "\n".join(
        found
    )
