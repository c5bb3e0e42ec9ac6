"""What a session holds, found offline: decisions, work left to do, the newest to-do list, the
files it touched. Shared by the Markdown memory document
(:mod:`session_migrator.summaries._memory_doc`)
and the offline summary (:mod:`session_migrator.summaries._outline`).

The patterns are searched in lower-cased text (``re.I`` is several times slower).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from session_migrator.messages._messages import Message

__all__: list[str] = []

FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
TASK = re.compile(
    r"\b(todo|to-do|fixme|need(?:s)? to|still (?:need|have|to|fails?)|next step|remaining|"
    r"left to do|follow[- ]?up|not yet|pending|open question|blocker|later)\b",
)
DECISION = re.compile(
    r"\b(decid\w*|agreed?|chose|choose|go(?:ing)? with|settled on|let'?s|we'?ll|i'?ll|"
    r"(?:i|we) will|"
    r"will use|switch(?:ed)? to|instead of|rather than|prefer\w*|don'?t|do not|always|never|"
    r"must not|keep)\b",
)
PATH = re.compile(
    r"(?<![\w/.@-])((?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]+\.\w{1,8}|[\w-]+\.(?:py|pyi|js|jsx|ts|"
    r"tsx|json|md|ya?ml|toml|ini|cfg|sql|css|scss|html|rs|go|java|kt|rb|php|c|h|cc|cpp|hpp|sh|"
    r"txt|csv|lock))\b"
)
_PATCH_FILE = re.compile(r"\*\*\* (Update|Add|Delete) File: (\S+)")
_PATCH_ACTION = {"Update": "edited", "Add": "created", "Delete": "deleted"}
#: How a file was touched, strongest first.
ACTION_ORDER = ("created", "edited", "written", "deleted", "read", "searched", "mentioned")
_PATH_KEYS = ("file_path", "path", "notebook_path", "filePath", "filename")
_TODO_TOOLS = ("TodoWrite", "update_plan")


def one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def injected(text: str) -> bool:
    """Context a harness put in a user turn (``<environment_context>``, ``<command-name>``...)."""
    stripped = text.lstrip()
    return stripped.startswith("<") and re.match(r"<[\w-]+>", stripped) is not None


def relative(path: str, cwd: str) -> str:
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def is_todo_tool(name: str) -> bool:
    return name in _TODO_TOOLS


def last_todo_list(messages: Sequence[Message]) -> tuple[int, list[tuple[str, str]]]:
    """Where the newest to-do list is (Claude Code TodoWrite, Codex update_plan; -1 if none) and
    its unfinished items, ``(text, status)``."""
    for index in range(len(messages) - 1, -1, -1):
        for call in reversed(messages[index].tool_calls):
            if not is_todo_tool(call.name):
                continue
            try:
                args = json.loads(call.arguments)
            except ValueError:
                continue
            entries = args.get("todos", args.get("plan")) if isinstance(args, dict) else None
            if not isinstance(entries, list):
                continue
            return index, [
                (str(e.get("content") or e.get("step")), str(e.get("status")))
                for e in entries
                if isinstance(e, dict)
                and (e.get("content") or e.get("step"))
                and e.get("status") != "completed"
            ]
    return -1, []


def call_paths(name: str, arguments: str) -> Iterator[tuple[str, str]]:
    """The files a tool call touches and how (``read``, ``edited``, ...), from its arguments."""
    try:
        args = json.loads(arguments)
    except ValueError:
        return
    lowered = name.lower()
    action = next(
        (
            verb
            for words, verb in (
                (("edit", "replace", "patch"), "edited"),
                (("write", "create"), "written"),
                (("read", "view", "open"), "read"),
                (("grep", "glob", "search", "find", "ls", "list"), "searched"),
            )
            if any(w in lowered for w in words)
        ),
        None,
    )
    if isinstance(args, dict) and action is not None:
        for key in _PATH_KEYS:
            if isinstance(args.get(key), str) and args[key].strip():
                yield args[key].strip(), action
    for text in _strings(args):
        for verb, path in _PATCH_FILE.findall(text):
            yield path, _PATCH_ACTION[verb]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)


def actions_text(actions: set[str]) -> str:
    """How a file was touched, strongest first (``mentioned`` only when nothing else)."""
    done = [a for a in ACTION_ORDER if a in actions and (a != "mentioned" or len(actions) == 1)]
    return ", ".join(done)
