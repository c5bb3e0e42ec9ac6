"""Importers for agent session files: Codex CLI rollouts and Claude Code sessions; and the
writers of the agents' own session files (:func:`write_claude_code`, :func:`write_codex`,
:func:`write_gemini`, :func:`write_opencode`), for a handoff.

Each importer reads one file into an :class:`ImportResult` whose ``session`` holds core
:class:`~session_migrator.Message` objects with tool calls paired to their results, stable ids
(importing a file twice gives the same ids, so a store append is idempotent) and metadata naming the
source model. Damage is counted, never fatal unless nothing can be read: see ``skipped``,
``repaired`` and ``warnings``.

>>> from session_migrator.importers import import_codex
>>> result = import_codex("~/.codex/sessions/2025/09/01/rollout-x.jsonl")  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Callable
from fnmatch import fnmatch
from pathlib import Path

from session_migrator._errors import ImportFormatError
from session_migrator.importers._claude_code import import_claude_code
from session_migrator.importers._claude_code_writer import claude_project_dir, write_claude_code
from session_migrator.importers._codex import import_codex
from session_migrator.importers._codex_writer import codex_sessions_dir, write_codex
from session_migrator.importers._common import PLACEHOLDER_RESULT, ImportResult
from session_migrator.importers._gemini_writer import gemini_chats_dir, write_gemini
from session_migrator.importers._handoff import TARGETS, Handoff, handoff
from session_migrator.importers._locate import newest_session
from session_migrator.importers._opencode_writer import write_opencode

__all__ = [
    "FORMATS",
    "PLACEHOLDER_RESULT",
    "TARGETS",
    "Handoff",
    "ImportResult",
    "claude_project_dir",
    "codex_sessions_dir",
    "find_session_files",
    "gemini_chats_dir",
    "handoff",
    "import_claude_code",
    "import_codex",
    "import_file",
    "newest_session",
    "write_claude_code",
    "write_codex",
    "write_gemini",
    "write_opencode",
]

Importer = Callable[..., ImportResult]

#: Importer per format name, as the CLI spells it.
FORMATS: dict[str, Importer] = {"codex": import_codex, "claude-code": import_claude_code}
_PATTERNS = {"codex": "rollout-*.jsonl", "claude-code": "*.jsonl"}
#: How much of a first line is read to see whether it is a session_meta (base instructions make
#: it long).
_FIRST_LINE_LIMIT = 4 << 20


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

    Codex: ``rollout-*.jsonl`` and any other ``*.jsonl`` whose first line is a ``session_meta``
    (an exported or renamed rollout; any ``*.jsonl`` when there is neither); Claude Code: every
    ``*.jsonl`` (sub-agent transcripts included). Raises :class:`ImportFormatError` when ``path``
    does not exist.
    """
    root = Path(path).expanduser()
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise ImportFormatError(f"{root}: no such file or directory")
    every = sorted(p for p in root.rglob("*.jsonl") if p.is_file())
    if format != "codex":
        return every
    found = [p for p in every if fnmatch(p.name, _PATTERNS["codex"]) or _starts_a_rollout(p)]
    return found or every


def _starts_a_rollout(path: Path) -> bool:
    """Whether the first line of ``path`` is a Codex ``session_meta`` (or the older layout's
    bare meta object)."""
    try:
        with path.open("rb") as f:
            line = b""
            while not line.strip():
                line = f.readline(_FIRST_LINE_LIMIT)
                if not line:
                    return False
        first = json.loads(line)
    except (OSError, ValueError, RecursionError):
        return False
    if not isinstance(first, dict):
        return False
    if first.get("type") == "session_meta":
        return True
    return "type" not in first and "id" in first and "timestamp" in first
