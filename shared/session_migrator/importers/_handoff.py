"""A coding agent's session continued in another agent: read, fitted to the target model,
written where the target looks for its sessions (:func:`handoff`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from session_migrator._errors import ImportFormatError
from session_migrator.importers._claude_code import import_claude_code
from session_migrator.importers._claude_code_writer import write_claude_code
from session_migrator.importers._codex import import_codex
from session_migrator.importers._import_result import ImportResult
from session_migrator.migration._migrate import migrate
from session_migrator.migration._report import MigrationReport

__all__ = ["TARGETS", "Handoff", "handoff"]

#: The agents a session can be handed to.
TARGETS = ("claude-code",)


@dataclass(frozen=True)
class Handoff:
    """A session handed off: its new id, the file written, the command that resumes it, and
    the fit's report."""

    session_id: str
    path: Path
    command: str
    cwd: str
    messages: int
    source_messages: int
    report: MigrationReport


def _read(path: Path, source: str | None) -> ImportResult:
    readers = {"codex": import_codex, "claude-code": import_claude_code}
    errors: list[str] = []
    for kind in [source] if source else list(readers):
        try:
            return readers[kind](path)
        except (ImportFormatError, OSError, ValueError) as exc:
            errors.append(f"{kind}: {exc}")
    raise ImportFormatError(
        f"cannot read {str(path)!r} as a Codex or Claude Code session ({'; '.join(errors)})"
    )


def handoff(
    path: str | Path,
    *,
    to: str,
    model: str,
    home: str | Path | None = None,
    cwd: str | None = None,
    session_id: str | None = None,
    source: str | None = None,
) -> Handoff:
    """Continue the session of ``path`` (a Codex rollout or a Claude Code session; ``source``
    says which, else both are tried) in agent ``to`` on ``model``: fitted to the model's window
    and written under ``home`` (default ``~``) where that agent looks for its sessions, in the
    session's working directory (``cwd`` overrides it) and branch."""
    if to not in TARGETS:
        raise ValueError(f"to must be one of {', '.join(TARGETS)}, not {to!r}")
    file = Path(path).expanduser()
    if not file.is_file():
        raise ImportFormatError(f"no session file at {str(file)!r}: give a .jsonl session's path")
    result = _read(file, source)
    session = result.session
    fitted = migrate(list(session.messages), model, source_model=result.source_model)
    where = cwd or str(session.metadata.get("cwd") or Path.cwd())
    branch = str(session.metadata.get("git_branch") or "")
    sid, written = write_claude_code(
        fitted.messages,
        home=Path(home).expanduser() if home is not None else Path.home(),
        cwd=where,
        git_branch=branch,
        session_id=session_id,
        model=model,
    )
    return Handoff(
        session_id=sid,
        path=written,
        command=f"cd {where} && claude --resume {sid} --model {model}",
        cwd=where,
        messages=len(fitted.messages),
        source_messages=len(session.messages),
        report=fitted.report,
    )
