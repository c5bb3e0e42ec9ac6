"""Writing a session as Gemini CLI keeps its own: ``~/.gemini/tmp/<project>/chats/
session-<YYYY-MM-DDThh-mm>-<first 8 of id>.jsonl``, so that ``gemini --resume <id>`` (run in the
session's working directory) continues it.

The file is what Gemini CLI's chat recording writes (JSON lines, Gemini CLI 0.5x and later; it
still reads the older one-object ``.json`` files too):

- a first line of metadata: ``sessionId`` (a UUID: ``--resume`` takes it, or ``latest``),
  ``projectHash`` (the SHA-256 of the working directory), ``startTime``, ``lastUpdated`` and
  ``kind: "main"``;
- one line per message record: ``{"id", "timestamp", "type", "content"}`` with ``type`` ``user``
  or ``gemini`` and ``content`` a list of Gemini parts (``{"text"}``, ``{"inlineData"}`` for an
  image given as a ``data:`` URL). A ``gemini`` record names its ``model`` and carries its tool
  calls as ``toolCalls``: ``{"id", "name", "args", "status", "timestamp", "result"}``, the result
  a ``functionResponse`` part with the same id and name (``{"output": ...}``), so the calls stay
  paired: on resume Gemini CLI sends the model turn's ``functionCall`` parts and then one user
  turn of their ``functionResponse`` parts.

Calls are written in Gemini CLI's own tool vocabulary where one maps onto another: shell commands
(Claude Code's ``Bash``, Codex's ``shell_command``, ``exec_command``, ``shell``, ``local_shell``) as
``run_shell_command`` (``{"command"}``, prefixed with ``cd <dir> &&`` when they ran elsewhere);
Claude Code's ``Read`` as ``read_file`` (``file_path``, ``start_line`` / ``end_line``), ``Write``
as ``write_file``, ``Edit`` as ``replace`` (``file_path``, ``old_string``, ``new_string``,
``allow_multiple``), ``Grep`` as ``grep_search``, ``Glob`` as ``glob``, ``LS`` as
``list_directory``. Any other call keeps its name and arguments (Codex's ``apply_patch`` too: the
model reads it as a call that was made). A system message and the library's notes (a summary of
what was cut) are user records the model reads (Gemini CLI records no compaction of its own in
the file); reasoning summaries are not written (a ``thought`` part is the writing model's own).

The project folder: Gemini CLI names it by a short id kept in ``~/.gemini/projects.json`` (path ->
id) and in a ``.project_root`` file in the folder. An id already given to the working directory is
used; else one is claimed as Gemini CLI does (the folder's name in lower case, other characters as
``-``, with ``-1``, ``-2``, ... when taken) and recorded in both places. ``$GEMINI_CLI_HOME``
stands for the home folder when set.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from session_migrator.messages._messages import Message, ToolCall

__all__ = ["gemini_chats_dir", "gemini_records", "gemini_tool", "write_gemini"]

#: Codex's shell tools and where each keeps its command; Claude Code's ``Bash``.
_SHELLS = {"shell_command": "command", "exec_command": "cmd", "shell": "command",
           "local_shell": "command", "bash": "command"}  # fmt: skip
_ERROR_PREFIX = "[tool error]"


def _stamp(when: datetime) -> str:
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def gemini_home(home: Path | None = None) -> Path:
    """Gemini CLI's folder: ``<home>/.gemini`` (``$GEMINI_CLI_HOME`` or ``~`` by default)."""
    if home is None:
        env = os.environ.get("GEMINI_CLI_HOME")
        home = Path(env).expanduser() if env else Path.home()
    return home / ".gemini"


def _project(cwd: str) -> str:
    """The project's path as Gemini CLI keys it (Node's ``path.resolve``: no symlinks followed)."""
    return os.path.abspath(cwd)  # noqa: PTH100


def _slugify(text: str) -> str:
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", text.lower())).strip("-") or "project"


def _owner(folder: Path) -> str | None:
    try:
        return (folder / ".project_root").read_text(encoding="utf-8").strip()
    except OSError:
        return None


def gemini_chats_dir(gemini: Path, cwd: str) -> Path:
    """The ``chats`` folder of working directory ``cwd`` under Gemini CLI's folder ``gemini``
    (``~/.gemini``); claims the project's short id when it has none yet (see the module
    docstring)."""
    project = _project(cwd)
    registry_path = gemini / "projects.json"
    try:
        registry = json.loads(registry_path.read_text(encoding="utf-8"))
        projects = registry.get("projects") if isinstance(registry, dict) else None
    except (OSError, ValueError):
        projects = None
    projects = dict(projects) if isinstance(projects, dict) else {}
    tmp = gemini / "tmp"
    slug = projects.get(project)
    if not isinstance(slug, str) or _owner(tmp / slug) not in (None, project):
        found = [p.parent.name for p in tmp.glob("*/.project_root") if _owner(p.parent) == project]
        slug = found[0] if found else None
    if slug is None:
        base, taken = _slugify(Path(project).name or "project"), set(projects.values())
        n = 0
        while True:
            slug = base if n == 0 else f"{base}-{n}"
            n += 1
            if slug not in taken and _owner(tmp / slug) in (None, project):
                break
    (tmp / slug).mkdir(parents=True, exist_ok=True)
    (tmp / slug / ".project_root").write_text(project, encoding="utf-8")
    if projects.get(project) != slug:
        projects[project] = slug
        registry_path.write_text(json.dumps({"projects": projects}, indent=2), encoding="utf-8")
    return tmp / slug / "chats"


def _args(call: ToolCall) -> dict[str, Any] | None:
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _shell(args: Mapping[str, Any], key: str, cwd: str) -> dict[str, Any] | None:
    command = args.get(key)
    if isinstance(command, list) and all(isinstance(p, str) for p in command):
        wrapped = command[:2] in (["bash", "-lc"], ["bash", "-c"]) and len(command) == 3
        command = command[2] if wrapped else " ".join(command)
    if not isinstance(command, str) or not command:
        return None
    workdir = args.get("workdir") or args.get("working_directory") or args.get("cwd")
    if isinstance(workdir, str) and workdir and workdir.rstrip("/") != cwd.rstrip("/"):
        command = f"cd {workdir} && {command}"
    return {"command": command}


def _read(args: Mapping[str, Any]) -> dict[str, Any] | None:
    path = args.get("file_path") or args.get("path")
    if not isinstance(path, str):
        return None
    out: dict[str, Any] = {"file_path": path}
    offset, limit = args.get("offset"), args.get("limit")
    if isinstance(offset, int) and not isinstance(offset, bool) and offset > 0:
        out["start_line"] = offset
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
            out["end_line"] = offset + limit - 1
    return out


def _picked(
    args: Mapping[str, Any], renames: Mapping[str, str], need: str
) -> dict[str, Any] | None:
    if not isinstance(args.get(need), str):
        return None
    return {new: args[old] for old, new in renames.items() if args.get(old) is not None}


_RENAMED = {
    "write": ("write_file", {"file_path": "file_path", "content": "content"}, "content"),
    "edit": ("replace", {"file_path": "file_path", "old_string": "old_string",
                         "new_string": "new_string", "replace_all": "allow_multiple"},
             "old_string"),
    "grep": ("grep_search", {"pattern": "pattern", "path": "dir_path", "glob": "include_pattern"},
             "pattern"),
    "glob": ("glob", {"pattern": "pattern", "path": "dir_path"}, "pattern"),
    "ls": ("list_directory", {"path": "dir_path"}, "path"),
}  # fmt: skip


def gemini_tool(call: ToolCall, cwd: str) -> tuple[str, dict[str, Any]]:
    """A call in Gemini CLI's own vocabulary where one maps (see the module docstring), else its
    own name and arguments (arguments that are not a JSON object as ``{"input": ...}``)."""
    args = _args(call)
    if args is None:
        return call.name, {"input": call.arguments}
    lower = call.name.lower()
    mapped: dict[str, Any] | None = None
    name = call.name
    if lower in _SHELLS:
        mapped, name = _shell(args, _SHELLS[lower], cwd), "run_shell_command"
    elif lower == "read":
        mapped, name = _read(args), "read_file"
    elif lower in _RENAMED and call.name[0].isupper():  # Claude Code's tools are capitalised
        name, renames, need = _RENAMED[lower]
        mapped = _picked(args, renames, need)
    return (name, mapped) if mapped is not None else (call.name, args)


def _parts(message: Message) -> list[dict[str, Any]]:
    if isinstance(message.content, str):
        return [{"text": message.content}] if message.content else []
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if part.type == "image":
            url = part.data.get("image_url")
            url = url.get("url") if isinstance(url, Mapping) else url
            match = re.match(r"data:([^;,]+);base64,(.*)", url or "", re.S)
            if match:
                parts.append({"inlineData": {"mimeType": match[1], "data": match[2]}})
            elif isinstance(url, str) and url:
                parts.append({"text": f"[image: {url}]"})
        elif part.text:
            parts.append({"text": part.text})
    return parts


def gemini_records(
    messages: Sequence[Message],
    session_id: str,
    *,
    cwd: str,
    model: str | None = None,
    started: datetime | None = None,
) -> list[dict[str, Any]]:
    """The lines of a Gemini CLI session file holding ``messages``: the metadata, then one
    record per message (see the module docstring)."""
    now = started or datetime.now(UTC)
    results = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    records: list[dict[str, Any]] = []
    for k, m in enumerate(messages):
        when = _stamp(m.timestamp or now)
        rid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session_id}/{k}/{m.id}"))
        if m.role == "tool":
            continue  # (in the toolCalls of the record of its call)
        if m.role != "assistant":
            parts = _parts(m)
            if m.role == "system" and parts:
                parts = [{"text": f"[system] {m.text}"}]
            if parts:
                records.append({"id": rid, "timestamp": when, "type": "user", "content": parts})
            continue
        calls = []
        for call in m.tool_calls:
            name, args = gemini_tool(call, cwd)
            result = results.get(call.id)
            text = result.text if result is not None else ""
            failed = text.startswith(_ERROR_PREFIX)
            response = {"id": call.id, "name": name, "response": {"output": text}}
            calls.append({"id": call.id, "name": name, "args": args,
                          "status": "error" if failed else "success", "timestamp": when,
                          "result": [{"functionResponse": response}]})  # fmt: skip
        if not calls and not m.text:
            continue
        record: dict[str, Any] = {"id": rid, "timestamp": when, "type": "gemini",
                                  "content": _parts(m), "model": model or ""}  # fmt: skip
        if calls:
            record["toolCalls"] = calls
        records.append(record)
    meta = {
        "sessionId": session_id,
        "projectHash": hashlib.sha256(_project(cwd).encode()).hexdigest(),
        "startTime": _stamp(now),
        "lastUpdated": _stamp(now),
        "kind": "main",
    }
    return [meta, *records]


def write_gemini(
    messages: Sequence[Message],
    *,
    cwd: str,
    home: Path | None = None,
    session_id: str | None = None,
    model: str | None = None,
) -> tuple[str, Path]:
    """Write ``messages`` as a Gemini CLI session of working directory ``cwd`` under ``home``
    (default ``$GEMINI_CLI_HOME`` or ``~``); its id and path (``gemini --resume <id>`` continues
    it). ``session_id`` must be a UUID, as Gemini CLI's are (default: a new one)."""
    try:
        sid = str(uuid.UUID(session_id)) if session_id else str(uuid.uuid4())
    except ValueError:
        raise ValueError(f"a Gemini CLI session id is a UUID, not {session_id!r}") from None
    now = datetime.now(UTC)
    folder = gemini_chats_dir(gemini_home(home), cwd)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"session-{now:%Y-%m-%dT%H-%M}-{sid[:8]}.jsonl"
    lines = gemini_records(messages, sid, cwd=cwd, model=model, started=now)
    path.write_text(
        "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8"
    )
    return sid, path
