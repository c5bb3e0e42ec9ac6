"""Importers for agent session files: Codex CLI rollouts and Claude Code sessions.

Each importer reads one file into an :class:`ImportResult` whose ``session`` holds core
:class:`~session_migrator.Message` objects with tool calls paired to their results, stable ids
(importing a file twice gives the same ids, so a store append is idempotent) and metadata naming the
source model. Damage is counted, never fatal unless nothing can be read: see ``skipped``,
``repaired`` and ``warnings``.

>>> from session_migrator.importers import import_codex
>>> result = import_codex("~/.codex/sessions/2025/09/01/rollout-x.jsonl")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from session_migrator._errors import ImportFormatError
from session_migrator.importers._claude_code import import_claude_code
from session_migrator.importers._codex import import_codex
from session_migrator.importers._common import PLACEHOLDER_RESULT, ImportResult

__all__ = [
    "FORMATS",
    "PLACEHOLDER_RESULT",
    "ImportResult",
    "find_session_files",
    "import_claude_code",
    "import_codex",
    "import_file",
]

Importer = Callable[..., ImportResult]

#: Importer per format name, as the CLI spells it.
FORMATS: dict[str, Importer] = {"codex": import_codex, "claude-code": import_claude_code}
_PATTERNS = {"codex": "rollout-*.jsonl", "claude-code": "*.jsonl"}


def import_file(
    format: str, path: str | Path, *, session_id: str | None = None, workspace: str = "default"
) -> ImportResult:
    """Import ``path`` with the importer for ``format`` (``codex`` or ``claude-code``)."""
    try:
        importer = FORMATS[format]
    except KeyError:
        raise ImportFormatError(
            f"unknown session format {format!r}; choose one of {', '.join(FORMATS)}"
        ) from None
    return importer(path, session_id=session_id, workspace=workspace)


def find_session_files(format: str, path: str | Path) -> list[Path]:
    """The session files under ``path`` (itself when it is a file), sorted by path.

    Codex: ``rollout-*.jsonl`` (any ``*.jsonl`` when there is no rollout file); Claude Code: every
    ``*.jsonl``. Raises :class:`ImportFormatError` when ``path`` does not exist.
    """
    root = Path(path).expanduser()
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise ImportFormatError(f"{root}: no such file or directory")
    pattern = _PATTERNS.get(format, "*.jsonl")
    found = sorted(p for p in root.rglob(pattern) if p.is_file())
    if not found and pattern != "*.jsonl":
        found = sorted(p for p in root.rglob("*.jsonl") if p.is_file())
    return found
