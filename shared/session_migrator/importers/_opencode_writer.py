"""Writing a session as OpenCode exports its own: the JSON that ``opencode export <id>`` writes
and ``opencode import <file>`` reads, so that ``opencode import <file>`` (run in the session's
working directory) then ``opencode --session <id>`` continues it.

OpenCode 1.x keeps its sessions in a SQLite database (``~/.local/share/opencode/opencode.db``)
whose schema moves between releases; its own ``import`` command is the stable way in. The file is
``{"info": session, "messages": [{"info": message, "parts": [part, ...]}, ...]}``:

- ``info``: the session (``id`` ``ses_...``, ``slug``, ``version``, ``projectID``, ``directory``,
  ``title``, ``time``); ``opencode import`` sets its project and directory to where it runs;
- a user message: ``role: "user"``, ``time.created`` (the message's own time, in milliseconds),
  ``agent: "build"``, ``model`` (``providerID``, ``modelID``), and ``text`` parts;
- an assistant message: ``role: "assistant"``, ``parentID`` (the user message it answers),
  ``providerID`` and ``modelID``, ``mode`` and ``agent``, ``path`` (``cwd``, ``root``), zero
  ``cost`` and ``tokens``, ``finish``, then its ``text`` part and one ``tool`` part per call:
  ``callID``, ``tool`` and a completed ``state`` holding the call's ``input`` and its result's
  ``output`` (so a call and its result are one part: they stay paired).

Ids are OpenCode's ascending ones (``ses_``, ``msg_``, ``prt_``, then 12 hex digits of time and
14 random letters), in message order. Calls are written in OpenCode's own tool vocabulary where one
maps onto another: shell commands (Claude Code's ``Bash``; Codex's ``shell_command``,
``exec_command``, ``shell``, ``local_shell``) as ``bash`` (``command``, ``description``); Claude
Code's ``Read``, ``Write``, ``Edit``, ``Grep``, ``Glob`` and ``LS`` as ``read`` (``filePath``,
``offset``, ``limit``), ``write`` (``filePath``, ``content``), ``edit`` (``filePath``,
``oldString``, ``newString``, ``replaceAll``), ``grep``, ``glob`` and ``list``. Any other call
keeps its name and arguments. A system message and the library's notes (a summary of what was
cut) are user messages the model reads.
"""

from __future__ import annotations

import json
import os
import secrets
import string
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from session_migrator.messages._messages import Message, ToolCall

__all__ = ["OPENCODE_VERSION", "opencode_export", "opencode_tool", "write_opencode"]

#: The OpenCode version the export says it was written by (a 1.18 release's format).
OPENCODE_VERSION = "1.18.33"
_SHELLS = {"shell_command": "command", "exec_command": "cmd", "shell": "command",
           "local_shell": "command", "bash": "command"}  # fmt: skip
_BASE62 = string.digits + string.ascii_letters
#: Claude Code's file tools: OpenCode's name, then argument renames.
_RENAMED = {
    "Read": ("read", {"file_path": "filePath", "offset": "offset", "limit": "limit"}),
    "Write": ("write", {"file_path": "filePath", "content": "content"}),
    "Edit": ("edit", {"file_path": "filePath", "old_string": "oldString",
                      "new_string": "newString", "replace_all": "replaceAll"}),
    "Grep": ("grep", {"pattern": "pattern", "path": "path", "glob": "include"}),
    "Glob": ("glob", {"pattern": "pattern", "path": "path"}),
    "LS": ("list", {"path": "path"}),
}  # fmt: skip


class _Ids:
    """OpenCode's ascending ids: ``<prefix>_`` + 12 hex digits of (milliseconds * 4096 + a
    counter, its low 48 bits) + 14 random base-62 characters."""

    def __init__(self, now_ms: int) -> None:
        self._next = now_ms * 0x1000

    def __call__(self, prefix: str) -> str:
        self._next += 1
        stamp = f"{self._next & 0xFFFF_FFFF_FFFF:012x}"
        return f"{prefix}_{stamp}{''.join(secrets.choice(_BASE62) for _ in range(14))}"


def _ms(when: datetime | None, fallback: int) -> int:
    if when is None:
        return fallback
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def opencode_tool(call: ToolCall, cwd: str) -> tuple[str, dict[str, Any]]:
    """A call in OpenCode's vocabulary where one maps (see the module docstring), else its own
    name and arguments (arguments that are not a JSON object as ``{"input": ...}``)."""
    try:
        args = json.loads(call.arguments or "{}")
    except ValueError:
        args = None
    if not isinstance(args, dict):
        return call.name, {"input": call.arguments}
    key = _SHELLS.get(call.name.lower())
    if key is not None:
        command = args.get(key)
        if isinstance(command, list) and all(isinstance(p, str) for p in command):
            wrapped = command[:2] in (["bash", "-lc"], ["bash", "-c"]) and len(command) == 3
            command = command[2] if wrapped else " ".join(command)
        if isinstance(command, str) and command:
            workdir = args.get("workdir") or args.get("working_directory")
            if isinstance(workdir, str) and workdir and workdir.rstrip("/") != cwd.rstrip("/"):
                command = f"cd {workdir} && {command}"
            about = args.get("description")
            about = about if isinstance(about, str) else command[:60]
            return "bash", {"command": command, "description": about}
    if call.name in _RENAMED:
        name, renames = _RENAMED[call.name]
        mapped = {new: args[old] for old, new in renames.items() if args.get(old) is not None}
        if mapped:
            return name, mapped
    return call.name, args


_ZERO_TOKENS = {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}


def _tool_part(call: ToolCall, result: Message | None, cwd: str, created: int) -> dict[str, Any]:
    """One call and its result as a completed ``tool`` part."""
    name, args = opencode_tool(call, cwd)
    end = _ms(result.timestamp, created) if result is not None else created
    state = {
        "status": "completed",
        "input": args,
        "output": result.text if result is not None else "",
        "title": name,
        "metadata": {},
        "time": {"start": created, "end": end},
    }
    return {"type": "tool", "callID": call.id, "tool": name, "state": state}


def _split_model(model: str) -> tuple[str, str]:
    provider, _, name = model.partition("/")
    return (provider, name) if name else ("anthropic" if "claude" in model else "openai", model)


def opencode_export(
    messages: Sequence[Message],
    session_id: str | None = None,
    *,
    cwd: str,
    model: str,
    title: str = "",
) -> dict[str, Any]:
    """The export OpenCode imports for ``messages`` (see the module docstring); ``model`` is
    OpenCode's ``provider/model``."""
    now = int(time.time() * 1000)
    ids = _Ids(now)
    sid = session_id or ids("ses")
    provider, model_id = _split_model(model)
    results = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    out: list[dict[str, Any]] = []
    last_user = ""
    for m in messages:
        if m.role == "tool":
            continue  # (in the tool part of its call)
        created = _ms(m.timestamp, now)
        mid = ids("msg")
        parts: list[dict[str, Any]] = []
        if m.role != "assistant":
            text = f"[system] {m.text}" if m.role == "system" else m.text
            if not text:
                continue
            parts.append({"type": "text", "text": text})
            info: dict[str, Any] = {
                "role": "user",
                "time": {"created": created},
                "agent": "build",
                "model": {"providerID": provider, "modelID": model_id},
            }
            last_user = mid
        else:
            if m.text:
                parts.append({"type": "text", "text": m.text})
            for call in m.tool_calls:
                parts.append(_tool_part(call, results.get(call.id), cwd, created))
            if not parts:
                continue
            info = {
                "role": "assistant",
                "time": {"created": created, "completed": created},
                "parentID": last_user,
                "modelID": model_id,
                "providerID": provider,
                "mode": "build",
                "agent": "build",
                "path": {"cwd": cwd, "root": cwd},
                "cost": 0,
                "tokens": _ZERO_TOKENS,
                "finish": "tool-calls" if m.tool_calls else "stop",
            }
        parts = [{"id": ids("prt"), "sessionID": sid, "messageID": mid, **p} for p in parts]
        out.append({"info": {"id": mid, "sessionID": sid, **info}, "parts": parts})
    first = out[0]["info"]["time"]["created"] if out else now
    session = {
        "id": sid,
        "slug": "handoff",
        "version": OPENCODE_VERSION,
        "projectID": "global",
        "directory": cwd,
        "title": title or "Handed-off session",
        "time": {"created": first, "updated": now},
    }
    return {"info": session, "messages": out}


def write_opencode(
    messages: Sequence[Message],
    *,
    cwd: str,
    model: str,
    home: Path | None = None,
    session_id: str | None = None,
    title: str = "",
) -> tuple[str, Path]:
    """Write ``messages`` as an OpenCode export under ``home`` (default ``$XDG_DATA_HOME`` or
    ``~/.local/share``): ``opencode/handoff/<id>.json``; its session id and path.
    ``opencode import <path>`` in ``cwd`` brings it in, ``opencode --session <id>`` continues
    it. ``session_id`` must start with ``ses``, as OpenCode's do (default: a new one)."""
    if session_id is not None and not session_id.startswith("ses"):
        raise ValueError(f"an OpenCode session id starts with 'ses', not {session_id!r}")
    if home is not None:
        data = home / ".local" / "share"
    else:
        env = os.environ.get("XDG_DATA_HOME")
        data = Path(env).expanduser() if env else Path.home() / ".local" / "share"
    export = opencode_export(messages, session_id, cwd=cwd, model=model, title=title)
    sid = str(export["info"]["id"])
    folder = data / "opencode" / "handoff"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.json"
    path.write_text(json.dumps(export, ensure_ascii=False, indent=1), encoding="utf-8")
    return sid, path
