"""A session as a Markdown memory document, for handing a (coding) session to an agent that reads
memory files (``CLAUDE.md``, ``AGENTS.md``, a ``memory/`` folder).

Offline, the document is extracted from the conversation: its open tasks (the last to-do list
the agent wrote, requests left unanswered, interrupted tool calls, sentences that name work still
to do), its decisions and stated preferences, the files it touched (from the tool calls: read,
edited, written, searched; and paths the conversation mentions) and the facts most likely to
matter (numbers, names, identifiers, paths), then the last exchange. With a summarizer, a topic
summary written by that model comes first. The document never exceeds ``max_chars``: what does
not fit is left out from the least likely to matter up, and the document says how much.

>>> from session_migrator import Message, export_markdown
>>> doc = export_markdown([Message("user", "Rename utils.py to helpers.py, we'll keep the API.")])
>>> doc.splitlines()[0]
"# Rename utils.py to helpers.py, we'll keep the API."
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from session_migrator._errors import SummarizerError
from session_migrator._messages import Message, Session
from session_migrator._summarizers import Summarizer
from session_migrator._tokens import TokenCounter, counter_for

__all__ = ["DEFAULT_MAX_CHARS", "export_markdown"]

#: Size of the document unless told otherwise (about 3,000 tokens).
DEFAULT_MAX_CHARS = 12_000
_LEAST_CHARS = 200
_BULLET = 300  # longest bullet, in characters
_EXCHANGE = 600  # longest quote of the last exchange
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_TASK = re.compile(
    r"\b(todo|to-do|fixme|need(?:s)? to|still (?:need|have|to|fails?)|next step|remaining|"
    r"left to do|follow[- ]?up|not yet|pending|open question|blocker|later)\b",
)  # searched in lower-cased text (re.I is several times slower)
_DECISION = re.compile(
    r"\b(decid\w*|agreed?|chose|choose|go(?:ing)? with|settled on|let'?s|we'?ll|i'?ll|"
    r"(?:i|we) will|"
    r"will use|switch(?:ed)? to|instead of|rather than|prefer\w*|don'?t|do not|always|never|"
    r"must not|keep)\b",
)  # searched in lower-cased text
_PATH = re.compile(
    r"(?<![\w/.@-])((?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]+\.\w{1,8}|[\w-]+\.(?:py|pyi|js|jsx|ts|"
    r"tsx|json|md|ya?ml|toml|ini|cfg|sql|css|scss|html|rs|go|java|kt|rb|php|c|h|cc|cpp|hpp|sh|"
    r"txt|csv|lock))\b"
)
_PATCH_FILE = re.compile(r"\*\*\* (Update|Add|Delete) File: (\S+)")
_PATCH_ACTION = {"Update": "edited", "Add": "created", "Delete": "deleted"}
_FACT_SIGNALS = (
    (re.compile(r"\d"), 1.5),
    (_PATH, 2.0),
    (re.compile(r"`[^`]+`|\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b"), 1.5),
    (re.compile(r"(?<!^)\b[A-Z][a-z]{2,}"), 1.0),
    (re.compile(r"\b(is|are|was|were|has|have|because|fails?|returns?|causes?)\b", re.I), 0.5),
)
_ACTION_ORDER = ("created", "edited", "written", "deleted", "read", "searched", "mentioned")
_PATH_KEYS = ("file_path", "path", "notebook_path", "filePath", "filename")


@dataclass
class _Item:
    section: str
    text: str
    rank: float  # lower is kept first
    order: int  # place in its section (open tasks: the unanswered request, the to-do list,
    # interrupted calls, then sentences)


def export_markdown(
    session: Session | Sequence[Message],
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    summarizer: Summarizer | None = None,
    counter: TokenCounter | None = None,
    title: str | None = None,
) -> str:
    """The Markdown memory document of ``session`` (a :class:`~session_migrator.Session` or its
    messages), at most ``max_chars`` characters (at least 200).

    ``summarizer`` (any :class:`~session_migrator.Summarizer`: the OpenAI-compatible one, a
    framework's model) writes a topic summary at the top; if it fails, the document says so and
    holds the offline sections only. ``counter`` sizes the summary request (default o200k_base).
    ``title`` defaults to the session's ``title`` metadata, else its first request.
    """
    size: object = max_chars
    if isinstance(size, bool) or not isinstance(size, int) or size < _LEAST_CHARS:
        raise ValueError(f"max_chars must be a whole number of at least {_LEAST_CHARS}")
    if isinstance(session, Session):
        sid, metadata, messages = session.id, dict(session.metadata), list(session.messages)
    else:
        sid, metadata, messages = None, {}, list(session)
    said = [m for m in messages if m.role in ("user", "assistant") and m.marker is None]
    requests = [m for m in said if m.role == "user" and not _injected(m.text)]
    heading = title or metadata.get("title") or (requests[0].text if requests else "Session")
    head = [f"# {_one_line(str(heading), 100) or 'Session'}", "", _about(sid, metadata, messages)]
    summary = _summary(messages, summarizer, counter, max_chars) if summarizer else None
    if summary is not None:
        head += ["", "## Summary", "", summary]
    sentences = list(_sentences(said))
    items = [
        *_tasks(messages, said, sentences),
        *_decisions(sentences),
        *_files(messages, str(metadata.get("cwd") or "")),
        *_facts(sentences),
        *_exchange(said),
    ]
    return _fit("\n".join(head), items, max_chars)


def _about(sid: str | None, metadata: Mapping[str, Any], messages: Sequence[Message]) -> str:
    facts = [f"Session `{sid}`"] if sid else []
    if metadata.get("source_format"):
        model = metadata.get("source_model")
        facts.append(f"from {metadata['source_format']}" + (f" ({model})" if model else ""))
    facts.append(f"{len(messages)} message{'' if len(messages) == 1 else 's'}")
    times = metadata.get("source_timestamps")
    stamps = sorted(times.values()) if isinstance(times, Mapping) and times else []
    first = stamps[0] if stamps else metadata.get("started_at")
    last = stamps[-1] if stamps else metadata.get("last_entry_at")
    if isinstance(first, str) and isinstance(last, str):
        start, end = first[:16].replace("T", " "), last[:16].replace("T", " ")
        same_day = start[:10] == end[:10]
        facts.append(start if start == end else f"{start} to {end[11:] if same_day else end}")
    for key, label in (("cwd", "in"), ("git_branch", "branch")):
        if isinstance(metadata.get(key), str) and metadata[key]:
            facts.append(f"{label} `{metadata[key]}`")
    return " · ".join(facts)


def _summary(
    messages: Sequence[Message],
    summarizer: Summarizer,
    counter: TokenCounter | None,
    max_chars: int,
) -> str:
    room = max(60, max_chars // 3)
    try:
        text = summarizer.summarize(
            [m for m in messages if m.marker is None],
            max_tokens=max(30, room // 4),
            counter=counter or counter_for("o200k_base"),
        ).strip()
    except SummarizerError as exc:
        return (
            f"_No summary: {_one_line(str(exc), 200)}. The sections below are extracted offline._"
        )
    return text if len(text) <= room else text[: room - 1].rstrip() + "…"


# -- what goes in ------------------------------------------------------------------------------


def _tasks(
    messages: Sequence[Message], said: Sequence[Message], sentences: Sequence[tuple[int, str]]
) -> list[_Item]:
    out: list[_Item] = []
    todo = _last_todo_list(messages)
    for k, (text, status) in enumerate(todo):
        suffix = " (in progress)" if status == "in_progress" else ""
        out.append(_Item("Open tasks", f"- [ ] {_one_line(text, _BULLET)}{suffix}", 1.0, k))
    last = said[-1] if said else None
    if last is not None and last.role == "user" and not _injected(last.text):
        out.append(
            _Item("Open tasks", f"- [ ] Unanswered: {_one_line(last.text, _BULLET)}", 0.5, -1)
        )
    answered = {m.tool_call_id for m in messages if m.role == "tool" and m.marker is None}
    for m in messages:
        for call in m.tool_calls:
            if call.id not in answered:
                text = f"- [ ] `{call.name}` was interrupted: no result was recorded"
                out.append(_Item("Open tasks", text, 1.5, 10_000 + len(out)))
    if not todo:  # sentences naming work left, newest first
        found = [s for s in sentences if _TASK.search(s[1].lower())]
        for k, (pos, sentence) in enumerate(found[-10:]):
            out.append(_Item("Open tasks", f"- [ ] {sentence}", 2.0 - k / 100, 20_000 + pos))
    return out


def _last_todo_list(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """The unfinished items of the newest to-do list (Claude Code TodoWrite, Codex update_plan)."""
    for m in reversed(messages):
        for call in reversed(m.tool_calls):
            if call.name not in ("TodoWrite", "update_plan"):
                continue
            try:
                args = json.loads(call.arguments)
            except ValueError:
                continue
            entries = args.get("todos", args.get("plan")) if isinstance(args, dict) else None
            if not isinstance(entries, list):
                continue
            return [
                (str(e.get("content") or e.get("step")), str(e.get("status")))
                for e in entries
                if isinstance(e, dict)
                and (e.get("content") or e.get("step"))
                and e.get("status") != "completed"
            ]
    return []


def _decisions(sentences: Sequence[tuple[int, str]]) -> list[_Item]:
    found = [
        (pos, s)
        for pos, s in sentences
        if _DECISION.search(s.lower()) and not _TASK.search(s.lower())
    ]
    count = len(found)
    return [
        _Item("Decisions", f"- {s}", 3.0 - k / (count + 1), pos) for k, (pos, s) in enumerate(found)
    ]


def _files(messages: Sequence[Message], cwd: str) -> list[_Item]:
    touched: dict[str, set[str]] = {}
    for m in messages:
        for call in m.tool_calls:
            for path, action in _call_paths(call.name, call.arguments):
                touched.setdefault(_relative(path, cwd), set()).add(action)
    for m in messages:
        if m.role in ("user", "assistant") and m.marker is None and not _injected(m.text):
            for path in _PATH.findall(_FENCE.sub(" ", m.text)):
                touched.setdefault(_relative(path, cwd), set()).add("mentioned")
    out = []
    for k, (path, actions) in enumerate(touched.items()):
        done = [
            a for a in _ACTION_ORDER if a in actions and (a != "mentioned" or len(actions) == 1)
        ]
        rank = 6.0 if done == ["mentioned"] else 4.0
        out.append(_Item("Files touched", f"- `{path}`: {', '.join(done)}", rank + k / 1e4, k))
    return out


def _call_paths(name: str, arguments: str) -> Iterator[tuple[str, str]]:
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


def _facts(sentences: Sequence[tuple[int, str]]) -> list[_Item]:
    out = []
    for pos, s in sentences:
        low = s.lower()
        if _TASK.search(low) or _DECISION.search(low):
            continue
        score = sum(weight for pattern, weight in _FACT_SIGNALS if pattern.search(s))
        if score >= 2.0:
            out.append(_Item("Facts", f"- {s}", 5.0 + 1 / (1 + score), pos))
    return out


def _exchange(said: Sequence[Message]) -> list[_Item]:
    out = []
    for role, label in (("user", "User"), ("assistant", "Assistant")):
        last = next((m for m in reversed(said) if m.role == role and not _injected(m.text)), None)
        if last is not None and last.text.strip():
            text = f"- **{label}:** {_one_line(last.text, _EXCHANGE)}"
            out.append(_Item("Last exchange", text, 0.2, 0 if role == "user" else 1))
    return out


def _sentences(said: Sequence[Message]) -> Iterator[tuple[int, str]]:
    """``(position, sentence)`` of the conversation's own words (no code, no injected context),
    each once."""
    seen: set[str] = set()
    pos = 0
    for m in said:
        if _injected(m.text):
            continue
        for raw in _SENTENCE.split(_FENCE.sub(" ", m.text)):
            sentence = _one_line(raw.strip().lstrip("-*#>0123456789. ").strip(), _BULLET)
            key = sentence.lower()
            pos += 1
            if len(sentence) >= 12 and key not in seen:
                seen.add(key)
                yield pos, sentence


# -- how it is written -----------------------------------------------------------------------

_SECTIONS = ("Open tasks", "Decisions", "Files touched", "Facts", "Last exchange")


def _fit(head: str, items: list[_Item], max_chars: int) -> str:
    """``head`` and the sections, keeping the best-ranked items that fit in ``max_chars``."""
    full = _render(head, items)
    if len(full) <= max_chars:
        return full
    note_room = 80
    kept: list[_Item] = []
    used = len(head)
    opened: set[str] = set()
    for item in sorted(items, key=lambda i: i.rank):
        cost = len(item.text) + 1 + (0 if item.section in opened else len(item.section) + 6)
        if used + cost <= max_chars - note_room:
            kept.append(item)
            opened.add(item.section)
            used += cost
    left = len(items) - len(kept)
    note = f"\n\n_{left} more item(s) left out to stay within {max_chars:,} characters._"
    text = _render(head, kept) + note
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def _render(head: str, items: Sequence[_Item]) -> str:
    parts = [head]
    for section in _SECTIONS:
        chosen = sorted((i for i in items if i.section == section), key=lambda i: i.order)
        if chosen:
            parts.append(f"## {section}\n\n" + "\n".join(i.text for i in chosen))
    return "\n\n".join(parts) + "\n"


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _injected(text: str) -> bool:
    """Context a harness put in a user turn (``<environment_context>``, ``<command-name>``...)."""
    stripped = text.lstrip()
    return stripped.startswith("<") and re.match(r"<[\w-]+>", stripped) is not None


def _relative(path: str, cwd: str) -> str:
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path
