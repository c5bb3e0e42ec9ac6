"""A coding agent's session continued in another agent: read, fitted to the target model,
written where the target looks for its sessions (:func:`handoff`)."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from session_migrator._errors import ImportFormatError
from session_migrator.importers._claude_code import import_claude_code
from session_migrator.importers._claude_code_writer import write_claude_code
from session_migrator.importers._codex import import_codex
from session_migrator.importers._codex_writer import write_codex
from session_migrator.importers._gemini_writer import write_gemini
from session_migrator.importers._import_result import ImportResult
from session_migrator.importers._opencode_writer import write_opencode
from session_migrator.messages._messages import Message
from session_migrator.migration._migrate import migrate
from session_migrator.migration._report import MigrationReport
from session_migrator.models._lookup import lookup_model
from session_migrator.summaries._memory_doc import export_markdown

__all__ = ["TARGETS", "Handoff", "handoff"]

#: The agents a session can be handed to.
TARGETS = ("claude-code", "codex", "gemini-cli", "opencode")
#: How the blocks begin that a source agent's harness puts in the conversation to describe itself
#: to its model (Codex's sandbox and permissions, skills, environment, collaboration mode, a
#: model switch): the target describes its own, so a message made only of one is not handed
#: over (the source file keeps it).
HARNESS_BLOCKS = (
    "<environment_context>",
    "<permissions instructions>",
    "<skills_instructions>",
    "<collaboration_mode>",
    "<model_switch>",
    "<apps_instructions>",
)
#: The brief's largest size in characters (the Markdown memory of the source session).
BRIEF_CHARS = 1_500
#: The prompt of the headless resume command printed after a handoff.
RESUME_PROMPT = "Where were we? Continue from the last state."
#: What each target agent sends besides the session on every turn (its own harness prompt, tool
#: schemas, skills and environment), kept free of the handed-off session, at most an eighth of
#: the window. Measured against the loopback emulators with a one-line session: Codex 0.169
#: about 8.3k tokens; Claude Code 2.1 about 27k (38k by the Messages API emulator's upper bound),
#: and it asks for ``max_tokens`` 32,000, within the output reserve of the fit. Gemini CLI: not
#: measured (its system prompt and tool declarations are estimated at about 15k tokens);
#: OpenCode: not measured either (the same estimate).
HARNESS_TOKENS = {"claude-code": 30_000, "codex": 9_000, "gemini-cli": 15_000, "opencode": 15_000}


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
    #: every command that resumes it: interactive first, then headless (``codex exec resume``)
    commands: tuple[str, ...] = field(default=())
    #: a short brief of the whole source session (its Markdown memory: the goal, the files
    #: touched, the facts and decisions, the last exchange), at most :data:`BRIEF_CHARS`
    brief: str = ""
    #: messages of the source agent's harness left out (see :data:`HARNESS_BLOCKS`)
    harness_messages: int = 0


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
    says which, else both are tried) in agent ``to`` (one of :data:`TARGETS`) on
    ``model``: fitted to the model's window and written under ``home`` (default ``~``) where that
    agent looks for its sessions (``~/.claude/projects/...``; ``~/.codex/sessions/...``, or
    ``$CODEX_HOME`` when ``home`` is not given; ``~/.gemini/tmp/<project>/chats/...``, or under
    ``$GEMINI_CLI_HOME``; for OpenCode an export under ``~/.local/share/opencode/handoff/`` that
    the printed command brings in with ``opencode import``, ``model`` as ``provider/model``), in
    the session's working directory (``cwd`` overrides it) and branch. What the source agent's
    harness told its model about itself is left out (:data:`HARNESS_BLOCKS`): the target tells
    its own. Room for the target's own
    harness prompt and tools is kept free (:data:`HARNESS_TOKENS`). For Codex and Gemini CLI
    ``session_id`` must be a UUID; for OpenCode it starts with ``ses``."""
    if to not in TARGETS:
        raise ValueError(f"to must be one of {', '.join(TARGETS)}, not {to!r}")
    file = Path(path).expanduser()
    if not file.is_file():
        raise ImportFormatError(f"no session file at {str(file)!r}: give a .jsonl session's path")
    result = _read(file, source)
    session = result.session
    kept = [m for m in session.messages if not _harness(m)]
    reserved = min(HARNESS_TOKENS[to], lookup_model(model).context_window // 8)
    fitted = migrate(kept, model, source_model=result.source_model, extra_reserved=reserved)
    where = cwd or str(session.metadata.get("cwd") or Path.cwd())
    branch = str(session.metadata.get("git_branch") or "")
    base = Path(home).expanduser() if home is not None else Path.home()
    at = f"cd {shlex.quote(where)} && "
    if to == "codex":
        codex_home = base / ".codex"
        if home is None and os.environ.get("CODEX_HOME"):
            codex_home = Path(os.environ["CODEX_HOME"]).expanduser()
        sid, written = write_codex(
            fitted.messages,
            codex_home=codex_home,
            cwd=where,
            git_branch=branch,
            session_id=session_id,
            model=model,
        )
        commands: tuple[str, ...] = (
            f"{at}codex resume {sid} -m {shlex.quote(model)}",
            f"{at}codex exec resume -m {shlex.quote(model)} {sid} {shlex.quote(RESUME_PROMPT)}",
        )
    elif to == "opencode":
        sid, written = write_opencode(
            fitted.messages, cwd=where, model=model, home=None if home is None else base,
            session_id=session_id, title=str(session.metadata.get("title") or ""),
        )  # fmt: skip
        load = f"{at}opencode import {shlex.quote(str(written))} && opencode"
        flags = f"--session {sid} -m {shlex.quote(model)}"
        commands = (f"{load} {flags}", f"{load} run {flags} {shlex.quote(RESUME_PROMPT)}")
    elif to == "gemini-cli":
        sid, written = write_gemini(
            fitted.messages, cwd=where, home=None if home is None else base, session_id=session_id,
            model=model,
        )  # fmt: skip
        flags = f"--resume {sid} -m {shlex.quote(model)}"
        commands = (f"{at}gemini {flags}", f"{at}gemini {flags} -p {shlex.quote(RESUME_PROMPT)}")
    else:
        sid, written = write_claude_code(
            fitted.messages,
            home=base,
            cwd=where,
            git_branch=branch,
            session_id=session_id,
            model=model,
        )
        flags = f"--resume {sid} --model {shlex.quote(model)}"
        commands = (f"{at}claude {flags}", f"{at}claude -p {shlex.quote(RESUME_PROMPT)} {flags}")
    return Handoff(
        session_id=sid,
        path=written,
        command=commands[0],
        cwd=where,
        messages=len(fitted.messages),
        source_messages=len(session.messages),
        report=fitted.report,
        commands=commands,
        brief=export_markdown(session, max_chars=BRIEF_CHARS),
        harness_messages=len(session.messages) - len(kept),
    )


def _harness(message: Message) -> bool:
    """Whether ``message`` is only what the source agent's harness told its model about itself."""
    return (
        message.role in ("system", "user")
        and message.text.lstrip().startswith(HARNESS_BLOCKS)
        and message.text.rstrip().endswith(">")
    )
