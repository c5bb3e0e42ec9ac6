"""Writing a session as Codex CLI keeps its own: a rollout file,
``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<id>.jsonl``, so that
``codex resume <id>`` (or ``codex exec resume <id> "..."``) continues it.

Each line is ``{"timestamp", "type", "payload"}`` as Codex writes them:

- a ``session_meta`` first: the id (a UUID: Codex finds the file by it), the time, ``cwd``,
  ``originator``, ``cli_version``, ``source`` and ``git.branch`` when the branch is known. No
  ``base_instructions`` and no ``model_provider``: the resumed session runs on Codex's own harness
  prompt and on the provider of the user's configuration (Codex refuses to resume a session whose
  recorded provider differs from the configured one);
- a ``turn_context`` naming the model and ``cwd`` (Codex compares it with the model it resumes on);
- ``response_item`` lines, what the model reads on resume: ``message`` items (``user`` with
  ``input_text`` / ``input_image`` parts, ``assistant`` with ``output_text``, a system message as
  ``developer``); an assistant's tool calls as ``function_call`` items, each followed in order by
  its ``function_call_output`` with the same ``call_id`` (the calls stay paired);
- a summary of the part a fit cut as a ``compacted`` line, as Codex records its own ``/compact``,
  first (Codex rebuilds the history of a compaction from the user messages before it, so
  anything else written before it would be dropped): on resume Codex gives it to the model as a
  user message, before the messages kept.

Calls are written in Codex's own tool vocabulary where one maps onto another: a shell command
(Claude Code's ``Bash``) becomes a ``shell_command`` call
(``{"command", "workdir"}``), a file written or edited (Claude Code's ``Write``, ``Edit``,
``MultiEdit``) an ``apply_patch`` custom call holding the patch, Codex's own ``local_shell`` and
``apply_patch`` calls keep their shape. Any other call keeps its name and arguments: the model
reads it as a call that was made.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from session_migrator.messages._messages import MARKER_KEY, Message, ToolCall

__all__ = ["CODEX_VERSION", "codex_rollout_lines", "codex_sessions_dir", "write_codex"]

#: The Codex CLI version the rollout says it was written by (a 0.169 release's format).
CODEX_VERSION = "0.169.1"
#: The ``originator`` of the files this library writes (Codex's own say ``codex_cli_rs``,
#: ``codex_exec``, ``Codex Desktop``).
ORIGINATOR = "session_migrator"
#: Other agents' shell tools (Codex's own keep their names and shape).
_SHELL_NAMES = {"bash"}
_EDIT_NAMES = {"write", "edit", "multiedit"}


def codex_sessions_dir(codex_home: Path, when: datetime) -> Path:
    """The folder Codex keeps the rollouts of day ``when`` in, under ``codex_home``
    (``~/.codex`` unless ``$CODEX_HOME`` says otherwise)."""
    return codex_home / "sessions" / f"{when:%Y}" / f"{when:%m}" / f"{when:%d}"


def _stamp(when: datetime) -> str:
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _line(when: datetime, kind: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    return {"timestamp": _stamp(when), "type": kind, "payload": dict(payload)}


def _arguments(call: ToolCall) -> dict[str, Any] | None:
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _patch(name: str, args: Mapping[str, Any]) -> str | None:
    """A file write or edit as an ``apply_patch`` patch, or ``None`` when it does not map."""
    path = args.get("file_path") or args.get("path")
    if not isinstance(path, str) or not path:
        return None

    def plus(text: str) -> list[str]:
        return ["+" + line for line in text.split("\n")]

    if name == "write" and isinstance(args.get("content"), str):
        body = [f"*** Add File: {path}", *plus(args["content"])]
    else:
        edits: Any = args.get("edits") if name == "multiedit" else [args]
        hunks: list[str] = []
        for edit in edits if isinstance(edits, list) else ():
            old = edit.get("old_string") if isinstance(edit, Mapping) else None
            new = edit.get("new_string") if isinstance(edit, Mapping) else None
            if not isinstance(old, str) or not isinstance(new, str):
                return None
            hunks += ["@@", *("-" + line for line in old.split("\n")), *plus(new)]
        if not hunks:
            return None
        body = [f"*** Update File: {path}", *hunks]
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


def _function(name: str, arguments: str, call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "name": name, "arguments": arguments, "call_id": call_id}


def _custom(name: str, text: str, call_id: str) -> dict[str, Any]:
    return {"type": "custom_tool_call", "status": "completed", "call_id": call_id,
            "name": name, "input": text}  # fmt: skip


def _shell(args: Mapping[str, Any], cwd: str) -> str | None:
    """A shell call's arguments as ``shell_command``'s, or ``None`` when they hold no command."""
    command = args.get("command") or args.get("cmd")
    if isinstance(command, list) and all(isinstance(p, str) for p in command):
        wrapped = command[:2] in (["bash", "-lc"], ["bash", "-c"])
        command = command[-1] if wrapped else " ".join(command)
    if not isinstance(command, str):
        return None
    workdir = args.get("workdir") or args.get("cwd") or cwd
    return json.dumps({"command": command, "workdir": workdir}, ensure_ascii=False)


def _call_item(call: ToolCall, cwd: str) -> dict[str, Any]:
    """One tool call as a Codex response item (see the module docstring for the mapping)."""
    args = _arguments(call)
    lower = call.name.lower()
    if args is not None:
        if call.name == "local_shell":
            return {"type": "local_shell_call", "call_id": call.id, "status": "completed",
                    "action": args}  # fmt: skip
        if call.name == "apply_patch" and set(args) == {"input"}:
            return _custom("apply_patch", str(args["input"]), call.id)
        if lower in _SHELL_NAMES and (shell := _shell(args, cwd)) is not None:
            return _function("shell_command", shell, call.id)
        if lower in _EDIT_NAMES and (patch := _patch(lower, args)) is not None:
            return _custom("apply_patch", patch, call.id)
    return _function(call.name, call.arguments or "{}", call.id)


def _output_item(message: Message, calls: Mapping[str, str]) -> dict[str, Any]:
    call_id = message.tool_call_id or ""
    kind = calls.get(call_id, "function_call")
    output_type = (
        "custom_tool_call_output" if kind == "custom_tool_call" else "function_call_output"
    )
    return {"type": output_type, "call_id": call_id, "output": message.text}


def _content(message: Message) -> list[dict[str, Any]]:
    if message.role == "assistant":
        return [{"type": "output_text", "text": message.text}]
    if isinstance(message.content, str):
        return [{"type": "input_text", "text": message.content}]
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if part.type == "image":
            url = part.data.get("image_url")
            url = url.get("url") if isinstance(url, Mapping) else url
            if isinstance(url, str) and url:
                parts.append({"type": "input_image", "image_url": url})
        elif part.text is not None:
            parts.append({"type": "input_text", "text": part.text})
    return parts or [{"type": "input_text", "text": message.text}]


def _is_summary(message: Message) -> bool:
    marker = message.extra.get(MARKER_KEY)
    return isinstance(marker, Mapping) and marker.get("kind") == "summary"


def codex_rollout_lines(
    messages: Sequence[Message],
    session_id: str,
    *,
    cwd: str,
    git_branch: str = "",
    model: str | None = None,
    started: datetime | None = None,
) -> list[dict[str, Any]]:
    """The lines of a Codex rollout holding ``messages`` (see the module docstring)."""
    now = started or datetime.now(UTC)
    meta: dict[str, Any] = {
        "id": session_id,
        "timestamp": _stamp(now),
        "cwd": cwd,
        "originator": ORIGINATOR,
        "cli_version": CODEX_VERSION,
        "source": "cli",
    }
    if git_branch:
        meta["git"] = {"branch": git_branch}
    lines = [_line(now, "session_meta", meta)]
    if model:
        turn = {"cwd": cwd, "approval_policy": "on-request", "model": model, "summary": "auto",
                "sandbox_policy": {"type": "workspace-write"}}  # fmt: skip
        lines.append(_line(now, "turn_context", turn))
    calls: dict[str, str] = {}
    # the summary first: Codex rebuilds a compacted history from the user messages before it
    # and the summary, so a system prompt written before it would be lost
    ordered = [m for m in messages if _is_summary(m)] + [m for m in messages if not _is_summary(m)]
    for m in ordered:
        when = m.timestamp or now
        if m.role == "system" and _is_summary(m):
            lines.append(_line(when, "compacted", {"message": m.text}))
        elif m.role == "tool":
            lines.append(_line(when, "response_item", _output_item(m, calls)))
        elif m.role == "assistant":
            if m.text or not m.tool_calls:
                item = {"type": "message", "role": "assistant", "content": _content(m)}
                lines.append(_line(when, "response_item", item))
            for call in m.tool_calls:
                item = _call_item(call, cwd)
                calls[call.id] = str(item["type"])
                lines.append(_line(when, "response_item", item))
        else:
            role = "developer" if m.role == "system" else "user"
            item = {"type": "message", "role": role, "content": _content(m)}
            lines.append(_line(when, "response_item", item))
    return lines


def write_codex(
    messages: Sequence[Message],
    *,
    codex_home: Path,
    cwd: str,
    git_branch: str = "",
    session_id: str | None = None,
    model: str | None = None,
) -> tuple[str, Path]:
    """Write ``messages`` as a Codex rollout under ``codex_home`` (``~/.codex``, or
    ``$CODEX_HOME``) for working directory ``cwd``; its id and path (``codex resume <id>``
    continues it). ``session_id`` must be a UUID, as Codex's are (default: a new one)."""
    try:
        sid = str(uuid.UUID(session_id)) if session_id else str(uuid.uuid4())
    except ValueError:
        raise ValueError(
            f"a Codex session id is a UUID (Codex finds the file by it), not {session_id!r}"
        ) from None
    now = datetime.now(UTC)
    local = now.astimezone()
    folder = codex_sessions_dir(codex_home, local)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-{local:%Y-%m-%dT%H-%M-%S}-{sid}.jsonl"
    lines = codex_rollout_lines(
        messages, sid, cwd=cwd, git_branch=git_branch, model=model, started=now
    )
    path.write_text(
        "".join(
            json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines
        ),
        encoding="utf-8",
    )
    return sid, path
