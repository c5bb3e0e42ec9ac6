"""A coding agent's session continued in another agent: read, fitted to the target model,
written where the target looks for its sessions (:func:`handoff`)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from session_migrator._errors import ImportFormatError
from session_migrator.counting._tokens import counter_for
from session_migrator.importers._claude_code import import_claude_code
from session_migrator.importers._claude_code_writer import write_claude_code
from session_migrator.importers._codex import import_codex
from session_migrator.importers._codex_writer import write_codex
from session_migrator.importers._gemini_writer import write_gemini
from session_migrator.importers._harness import HARNESS_BLOCKS, without_harness
from session_migrator.importers._import_result import ImportResult
from session_migrator.importers._locate import codex_home, newest_session
from session_migrator.importers._opencode_writer import write_opencode
from session_migrator.messages._messages import Session
from session_migrator.migration._migrate import migrate
from session_migrator.migration._report import MigrationReport
from session_migrator.models._lookup import lookup_model
from session_migrator.summaries._extractive import ExtractiveSummarizer
from session_migrator.summaries._memory_doc import export_markdown

if TYPE_CHECKING:
    from session_migrator.store import BaseSessionStore

__all__ = ["HARNESS_BLOCKS", "TARGETS", "Handoff", "brief_of", "handoff", "read_session"]

#: The agents a session can be handed to.
TARGETS = ("claude-code", "codex", "gemini-cli", "opencode")
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
#: OpenCode 1.18 about 8.1k (2.5k of system prompt, 5.5k for its 11 tool schemas, by the Chat
#: Completions emulator's count), with 15k kept: the fitted session then stays below the point
#: where OpenCode compacts a session itself (its window less its output cap).
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
    #: messages of the source agent's harness left out whole (see :data:`HARNESS_BLOCKS`)
    harness_messages: int = 0
    #: tokens (by the target model's count) of the source agent's harness left out: its own
    #: prompt (Codex's ``base_instructions``) and the blocks cut from the messages
    harness_tokens: int = 0
    #: what was left out, by kind (``base_instructions``, ``<permissions instructions>``,
    #: ``AGENTS.md``, ``<system-reminder>``, ...): how many of each
    harness_left_out: dict[str, int] = field(default_factory=dict)
    #: the session file read, and its format (``codex`` or ``claude-code``)
    source_path: Path | None = None
    source_format: str = ""
    #: the whole source session's id in the store (when ``store`` was given), and how many of
    #: its messages were newly stored
    stored_session_id: str | None = None
    stored_messages: int | None = None


def _read(
    path: Path, source: str | None, session_id: str | None = None, workspace: str = "default"
) -> tuple[str, ImportResult]:
    readers = {"codex": import_codex, "claude-code": import_claude_code}
    if source is not None and source not in readers:
        raise ValueError(f"source must be one of {', '.join(readers)}, not {source!r}")
    errors: list[str] = []
    for kind in [source] if source else list(readers):
        try:
            return kind, readers[kind](path, session_id=session_id, workspace=workspace)
        except (ImportFormatError, OSError, ValueError) as exc:
            errors.append(f"{kind}: {exc}")
    raise ImportFormatError(
        f"cannot read {str(path)!r} as a Codex or Claude Code session ({'; '.join(errors)})"
    )


def brief_of(session: Session) -> str:
    """A short brief of ``session`` (its Markdown memory, at most :data:`BRIEF_CHARS`), read
    without what the source agent's harness put in the conversation (its sandbox, environment,
    reminders and the copy of ``AGENTS.md``): the user's words and the work."""
    plain = without_harness(session.messages, to="codex").messages
    return export_markdown(replace(session, messages=tuple(plain)), max_chars=BRIEF_CHARS)


def read_session(
    path: str | Path | None = None,
    *,
    source: str | None = None,
    cwd: str | Path | None = None,
    home: str | Path | None = None,
    session_id: str | None = None,
    workspace: str = "default",
) -> tuple[str, ImportResult]:
    """Read a coding agent's session: the file ``path`` (``source`` says its format,
    ``codex`` or ``claude-code``; else both are tried), or without a path the newest session of
    working directory ``cwd`` (default: the current one) that agent ``source`` (default: either)
    keeps under ``home`` (see :func:`~session_migrator.importers._locate.newest_session`).
    ``session_id`` and ``workspace`` are the session's in the store (default: the file's id).
    Returns ``(format, result)``."""
    if path is None:
        source, file = newest_session(cwd if cwd is not None else Path.cwd(), source=source,
                                      home=home)  # fmt: skip
    else:
        file = Path(path).expanduser()
        if not file.is_file():
            raise ImportFormatError(
                f"no session file at {str(file)!r}: give a .jsonl session's path"
            )
    return _read(file, source, session_id, workspace)


def handoff(
    path: str | Path | None = None,
    *,
    to: str,
    model: str,
    home: str | Path | None = None,
    cwd: str | None = None,
    session_id: str | None = None,
    source: str | None = None,
    store: BaseSessionStore | None = None,
) -> Handoff:
    """Continue the session of ``path`` (a Codex rollout or a Claude Code session; ``source``
    says which, else both are tried) in agent ``to`` (one of :data:`TARGETS`) on
    ``model``: fitted to the model's window and written under ``home`` (default ``~``) where that
    agent looks for its sessions (``~/.claude/projects/...``; ``~/.codex/sessions/...``, or
    ``$CODEX_HOME`` when ``home`` is not given; ``~/.gemini/tmp/<project>/chats/...``, or under
    ``$GEMINI_CLI_HOME``; for OpenCode an export under ``~/.local/share/opencode/handoff/`` that
    the printed command brings in with ``opencode import``, ``model`` as ``provider/model``), in
    the session's working directory (``cwd`` overrides it) and branch.

    Without ``path``, the newest session of working directory ``cwd`` (default: the current
    one) is read, from agent ``source`` (default: Claude Code's or Codex's, whichever was written
    last), under ``home``: see :func:`read_session`.

    What the source agent's harness told its model about itself is left out (its own prompt, and
    the blocks of :data:`HARNESS_BLOCKS`; the copy of ``AGENTS.md`` for a target that reads it
    itself): the target sends its own, and the result says what was left out and its tokens.
    Room for the target's own harness prompt and tools is kept free (:data:`HARNESS_TOKENS`).
    With ``store``, the whole source session (harness included) is imported into it first. For
    Codex and Gemini CLI ``session_id`` must be a UUID; for OpenCode it starts with ``ses``."""
    if to not in TARGETS:
        raise ValueError(f"to must be one of {', '.join(TARGETS)}, not {to!r}")
    kind, result = read_session(path, source=source, cwd=None if path else cwd, home=home)
    session = result.session
    stored = result.save(store) if store is not None else None
    cut = without_harness(session.messages, to=to)
    kept = cut.messages
    window = lookup_model(model)
    counter = counter_for(window.tokenizer, model=window.name)
    left_out = dict(cut.kinds)
    harness_tokens = sum(counter.count_text(t) for t in cut.texts)
    if result.harness_prompt:
        left_out = {"base_instructions": 1, **left_out}
        harness_tokens += counter.count_text(result.harness_prompt)
    reserved = min(HARNESS_TOKENS[to], window.context_window // 8)
    # what is cut is summarized with every request of the user first (``Requests:``)
    fitted = migrate(
        kept,
        model,
        source_model=result.source_model,
        extra_reserved=reserved,
        summarizer=ExtractiveSummarizer(requests=True),
    )
    where = cwd or str(session.metadata.get("cwd") or Path.cwd())
    branch = str(session.metadata.get("git_branch") or "")
    base = Path(home).expanduser() if home is not None else Path.home()
    at = f"cd {shlex.quote(where)} && "
    if to == "codex":
        sid, written = write_codex(
            fitted.messages,
            codex_home=codex_home(home),
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
        brief=brief_of(session),
        harness_messages=cut.dropped,
        harness_tokens=harness_tokens,
        harness_left_out=left_out,
        source_path=result.path,
        source_format=kind,
        stored_session_id=session.id if store is not None else None,
        stored_messages=stored,
    )
