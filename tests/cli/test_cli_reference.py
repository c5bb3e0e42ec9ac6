"""docs/cli.md shows the CLI's current --help output (scripts/cli_reference.py writes it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_cli_reference_page_is_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "cli_reference.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def test_the_reference_covers_every_command() -> None:
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for command in ("migrate", "models", "window", "count", "import", "mcp", "demo", "sessions"):
        assert f"### `session-migrator {command}`" in page, command
