"""Every module of the three packages stays small enough to read top-down (under 500 lines)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = [
    ROOT / "shared" / "session_migrator",
    ROOT / "langchain_session_migrator",
    ROOT / "llamaindex_session_migrator",
]
LIMIT = 500


def test_every_module_is_under_500_lines() -> None:
    sizes = {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for package in PACKAGES
        for path in package.rglob("*.py")
    }
    assert len(sizes) > 50  # the walk found the packages
    over = {name: n for name, n in sorted(sizes.items()) if n >= LIMIT}
    assert not over, f"split these by concern: {over}"
