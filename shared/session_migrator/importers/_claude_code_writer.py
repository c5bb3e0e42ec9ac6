"""Writing a session as Claude Code keeps its own: ``~/.claude/projects/<project>/<id>.jsonl``,
so that ``claude --resume <id>`` (run in the session's working directory) continues it.

Each message becomes an entry as Claude Code writes them: ``user`` and ``assistant`` entries chained
by ``uuid`` and ``parentUuid``, with the ``sessionId``, ``cwd``, ``gitBranch``, ``version`` and
``timestamp`` of the session, and an Anthropic ``message``: an assistant's tool calls as
``tool_use`` blocks, each result as a ``tool_result`` block of the user entry after it (the calls
stay paired); Codex's shell calls (``shell_command``, ``exec_command``, ``shell``, ``local_shell``)
as Claude Code's own ``Bash``; Codex's ``apply_patch`` (as its own tool, or run through the shell)
as Claude Code's ``Edit`` (``file_path``, ``old_string``, ``new_string``) when the patch updates one
file in one hunk, as ``Write`` (``file_path``, ``content``) when it adds one file, else as a
``Bash`` call holding the patch, which the model can read; other calls with their own name. The
system prompt and the library's notes (a summary of what was cut) are a first user entry the model
reads, as Claude Code's own compaction summary is. The project folder is the working directory
with every character that is not a letter or a digit replaced by ``-`` (``/home/dev/api`` ->
``-home-dev-api``).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from session_migrator.messages._messages import Message

__all__ = ["CLAUDE_CODE_VERSION", "claude_code_entries", "claude_project_dir", "write_claude_code"]

#: The Claude Code version the entries say they were written by (a 2.1 release's format).
CLAUDE_CODE_VERSION = "2.1.0"


def claude_project_dir(home: Path, cwd: str) -> Path:
    """Where Claude Code keeps the sessions of working directory ``cwd`` under ``home``."""
    return home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", cwd)


def _stamp(message: Message, fallback: datetime) -> str:
    when = message.timestamp or fallback
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


#: Codex's shell tools, and where each keeps its command.
_CODEX_SHELLS = {"shell_command": "command", "exec_command": "cmd", "shell": "command",
                 "local_shell": "command"}  # fmt: skip


def _claude_tool(name: str, arguments: Any, cwd: str) -> tuple[str, Any]:
    """A call in Claude Code's own vocabulary where one maps: Codex's shell calls as ``Bash``
    (``{"command"}``, prefixed with ``cd <dir> &&`` when they ran elsewhere than ``cwd``), its
    patches as ``Edit`` or ``Write`` (see the module docstring)."""
    if not isinstance(arguments, dict):
        return name, arguments
    workdir = arguments.get("workdir") or arguments.get("working_directory")
    where = workdir if isinstance(workdir, str) and workdir else cwd
    if name == "apply_patch":
        patch = arguments.get("input", arguments.get("patch"))
        if isinstance(patch, str):
            return _patch_tool(patch, where, cwd)
        return name, arguments
    key = _CODEX_SHELLS.get(name)
    if key is None:
        return name, arguments
    command = arguments.get(key)
    if isinstance(command, list) and all(isinstance(p, str) for p in command):
        if len(command) == 2 and command[0] == "apply_patch":
            return _patch_tool(command[1], where, cwd)
        wrapped = command[:2] in (["bash", "-lc"], ["bash", "-c"]) and len(command) == 3
        command = command[2] if wrapped else " ".join(command)
    if not isinstance(command, str):
        return name, arguments
    heredoc = _PATCH_HEREDOC.fullmatch(command.strip())
    if heredoc is not None:
        return _patch_tool(heredoc["patch"], where, cwd)
    if where.rstrip("/") != cwd.rstrip("/"):
        command = f"cd {where} && {command}"
    return "Bash", {"command": command}


#: ``apply_patch <<'EOF' ... EOF`` as Codex runs a patch through its shell.
_PATCH_HEREDOC = re.compile(
    r"(?:cd \S+ && )?apply_patch <<-?\s*(['\"]?)(?P<end>\w+)\1\n(?P<patch>.*)\n(?P=end)", re.S
)
_PATCH_OP = re.compile(r"\*\*\* (Update|Add|Delete) File: (.+)")


def _patch_tool(patch: str, where: str, cwd: str) -> tuple[str, dict[str, Any]]:
    """A Codex patch as Claude Code's ``Edit`` (one file updated in one hunk) or ``Write`` (one
    file added), else as ``Bash`` running it (text the model can read)."""
    lines = patch.strip("\n").split("\n")
    if lines and lines[0].strip() == "*** Begin Patch":
        lines = lines[1:]
    if lines and lines[-1].strip() == "*** End Patch":
        lines = lines[:-1]
    ops = [k for k, line in enumerate(lines) if line.startswith("*** ")]
    op = _PATCH_OP.fullmatch(lines[0].rstrip()) if lines and ops == [0] else None
    if op is not None:
        path = op[2].strip()
        file_path = path if path.startswith("/") else f"{where.rstrip('/')}/{path}"
        body = lines[1:]
        if op[1] == "Add" and all(line.startswith("+") for line in body):
            return "Write", {"file_path": file_path, "content": "".join(f"{x[1:]}\n" for x in body)}
        if op[1] == "Update" and body and body[0].startswith("@@"):
            body = body[1:]
        hunk = op[1] == "Update" and body and all(line[:1] in (" ", "-", "+") for line in body)
        if hunk:
            old = "\n".join(line[1:] for line in body if line[0] != "+")
            new = "\n".join(line[1:] for line in body if line[0] != "-")
            if old.strip() and old != new:
                edit = {"file_path": file_path, "old_string": old, "new_string": new}
                return "Edit", {**edit, "replace_all": False}
    command = f"apply_patch <<'PATCH'\n{patch.strip(chr(10))}\nPATCH"
    if where.rstrip("/") != cwd.rstrip("/"):
        command = f"cd {where} && {command}"
    return "Bash", {"command": command}


def claude_code_entries(
    messages: Sequence[Message],
    session_id: str,
    *,
    cwd: str,
    git_branch: str = "",
    model: str = "claude-sonnet-4-5",
) -> list[dict[str, Any]]:
    """The entries of a Claude Code session file holding ``messages`` (see the module
    docstring)."""
    now = datetime.now(UTC)
    entries: list[dict[str, Any]] = []
    parent: str | None = None
    common = {
        "sessionId": session_id,
        "cwd": cwd,
        "gitBranch": git_branch,
        "version": CLAUDE_CODE_VERSION,
        "userType": "external",
        "isSidechain": False,
    }

    def add(kind: str, message: dict[str, Any], source: Message) -> None:
        nonlocal parent
        entry_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session_id}/{source.id}/{len(entries)}"))
        entries.append(
            {
                "parentUuid": parent,
                **common,
                "type": kind,
                "message": message,
                "uuid": entry_id,
                "timestamp": _stamp(source, now),
            }
        )
        parent = entry_id

    leading: list[str] = []
    results: list[dict[str, Any]] = []
    result_of: Message | None = None
    for m in messages:
        if m.role == "system":
            leading.append(m.text)
            continue
        if leading:
            add("user", {"role": "user", "content": "\n\n".join(leading)}, m)
            leading = []
        if m.role == "tool":
            results.append(
                {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.text}
            )
            result_of = m
            continue
        if results and result_of is not None:
            add("user", {"role": "user", "content": results}, result_of)
            results, result_of = [], None
        if m.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if m.text:
                blocks.append({"type": "text", "text": m.text})
            for call in m.tool_calls:
                try:
                    arguments = json.loads(call.arguments or "{}")
                except ValueError:
                    arguments = {"arguments": call.arguments}
                name, arguments = _claude_tool(call.name, arguments, cwd)
                blocks.append({"type": "tool_use", "id": call.id, "name": name, "input": arguments})
            message_id = "msg_" + uuid.uuid5(uuid.NAMESPACE_URL, m.id).hex[:24]
            add(
                "assistant",
                {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": blocks or [{"type": "text", "text": ""}],
                    "stop_reason": None,
                    "stop_sequence": None,
                },
                m,
            )
        else:
            add("user", {"role": "user", "content": m.text}, m)
    if results and result_of is not None:
        add("user", {"role": "user", "content": results}, result_of)
    if leading:
        add("user", {"role": "user", "content": "\n\n".join(leading)}, messages[-1])
    return entries


def write_claude_code(
    messages: Sequence[Message],
    *,
    home: Path,
    cwd: str,
    git_branch: str = "",
    session_id: str | None = None,
    model: str = "claude-sonnet-4-5",
) -> tuple[str, Path]:
    """Write ``messages`` as a Claude Code session under ``home`` for working directory
    ``cwd``; its id and path (``claude --resume <id>`` in ``cwd`` continues it)."""
    sid = session_id or str(uuid.uuid4())
    folder = claude_project_dir(home, cwd)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    entries = claude_code_entries(messages, sid, cwd=cwd, git_branch=git_branch, model=model)
    path.write_text(
        "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8"
    )
    return sid, path
