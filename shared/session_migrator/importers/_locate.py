"""The newest session an agent keeps for a working directory (:func:`newest_session`), so that a
caller names the project instead of the file: Claude Code's
``~/.claude/projects/<encoded cwd>/*.jsonl`` and Codex's
``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`` whose ``session_meta`` names that directory."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from session_migrator._errors import ImportFormatError
from session_migrator.importers._claude_code_writer import claude_project_dir

__all__ = ["SOURCES", "codex_home", "newest_session"]

#: The agents whose sessions can be found by working directory.
SOURCES = ("claude-code", "codex")
#: How much of a rollout's first line is read for its ``cwd`` (the base instructions make it
#: long), and how many lines of a Claude Code session are read for theirs.
_FIRST_LINE_LIMIT = 4 << 20
_CLAUDE_LINES = 50


def codex_home(home: str | Path | None) -> Path:
    """Codex's home: ``home/.codex``; without ``home``, ``$CODEX_HOME`` when it is set, else
    ``~/.codex``."""
    if home is None and os.environ.get("CODEX_HOME"):
        return Path(os.environ["CODEX_HOME"]).expanduser()
    base = Path(home).expanduser() if home is not None else Path.home()
    return base / ".codex"


def _same_dir(a: str, b: str) -> bool:
    return os.path.normpath(a) == os.path.normpath(b)


def _claude_cwd(path: Path) -> str | None:
    """The ``cwd`` the first entries of a Claude Code session name, if any."""
    try:
        with path.open("rb") as f:
            for _, raw in zip(range(_CLAUDE_LINES), f, strict=False):
                try:
                    entry = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(entry, dict) and isinstance(entry.get("cwd"), str):
                    return str(entry["cwd"])
    except OSError:
        return None
    return None


def _codex_cwd(path: Path) -> str | None:
    """The ``cwd`` of a rollout's ``session_meta`` (its first line), if any."""
    try:
        with path.open("rb") as f:
            first = json.loads(f.readline(_FIRST_LINE_LIMIT))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(first, dict):
        return None
    meta = first.get("payload") if first.get("type") == "session_meta" else first
    if isinstance(meta, dict) and isinstance(meta.get("meta"), dict):
        meta = meta["meta"]
    cwd = meta.get("cwd") if isinstance(meta, dict) else None
    return cwd if isinstance(cwd, str) else None


def _by_age(paths: Iterator[Path]) -> list[Path]:
    """``paths`` newest first (by the time each was last written: a resumed session is appended
    to)."""
    dated: list[tuple[float, str, Path]] = []
    for p in paths:
        try:
            dated.append((p.stat().st_mtime, p.name, p))
        except OSError:
            continue
    return [p for _, _, p in sorted(dated, reverse=True)]


def _claude_candidates(cwd: str, home: str | Path | None) -> Iterator[Path]:
    base = Path(home).expanduser() if home is not None else Path.home()
    folder = claude_project_dir(base, cwd)
    if not folder.is_dir():
        return
    # sub-agent transcripts sit in <session>/subagents/: only the folder's own files
    for path in _by_age(p for p in folder.glob("*.jsonl") if p.is_file()):
        # the folder's name is the directory with every non-alphanumeric character as "-": two
        # directories can share one; a file naming another directory is not this one's
        found = _claude_cwd(path)
        if found is None or _same_dir(found, cwd):
            yield path


def _codex_candidates(cwd: str, home: str | Path | None) -> Iterator[Path]:
    sessions = codex_home(home) / "sessions"
    if not sessions.is_dir():
        return
    for path in _by_age(p for p in sessions.rglob("rollout-*.jsonl") if p.is_file()):
        found = _codex_cwd(path)
        if found is not None and _same_dir(found, cwd):
            yield path


def newest_session(
    cwd: str | Path, *, source: str | None = None, home: str | Path | None = None
) -> tuple[str, Path]:
    """The newest session of working directory ``cwd``: ``(format, path)``.

    ``source`` is the agent to look in (``claude-code`` or ``codex``; default both, the file
    written last wins). Claude Code keeps a directory's sessions in
    ``<home>/.claude/projects/<cwd, each character that is not a letter or a digit as ->/``
    (sub-agent transcripts, in sub-folders, are not sessions of their own here); Codex keeps every
    session in ``<codex home>/sessions/YYYY/MM/DD/rollout-*.jsonl`` and names the directory in the
    first line's ``session_meta``. ``home`` is the home folder (default ``~``; for Codex,
    ``$CODEX_HOME`` when ``home`` is not given). Raises :class:`ImportFormatError` when there is
    none.
    """
    if source is not None and source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
    where = os.path.normpath(Path(cwd).expanduser().absolute())
    found: list[tuple[float, str, Path]] = []
    for kind in [source] if source else list(SOURCES):
        if kind == "claude-code":
            newest = next(_claude_candidates(where, home), None)
        else:
            newest = next(_codex_candidates(where, home), None)
        if newest is not None:
            found.append((newest.stat().st_mtime, kind, newest))
    if not found:
        looked = {
            "claude-code": str(
                claude_project_dir(
                    Path(home).expanduser() if home is not None else Path.home(), where
                )
            ),
            "codex": f"{codex_home(home) / 'sessions'} (rollouts whose cwd is {where})",
        }
        named = "; ".join(f"{k}: {looked[k]}" for k in ([source] if source else SOURCES))
        raise ImportFormatError(f"no session of {where} found ({named})")
    _, kind, path = max(found)
    return kind, path
