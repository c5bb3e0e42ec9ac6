"""A session as a Markdown memory document, for handing a (coding) session to an agent that reads
memory files (``CLAUDE.md``, ``AGENTS.md``, a ``memory/`` folder).

Offline, the document is extracted from the conversation: its open tasks (the last to-do list
the agent wrote, requests left unanswered, interrupted tool calls, sentences that name work still
to do; not those a later answer says are done), its decisions and stated preferences, the files
it touched (from the tool calls and the shell commands: read, edited, written, deleted, moved,
searched; and paths the conversation mentions; a file deleted after it was written is listed as
deleted), the commands the agent ran (tests, builds and runs first, with whether the last run
passed) and the facts most likely to matter (numbers, names, identifiers, paths), then the last
exchange. What a harness put in a user turn (AGENTS.md and CLAUDE.md blocks, environment context,
skill rules, system reminders, slash-command wrappers) is not read as the user's words. With a
summarizer, a topic summary written by that model comes first. The document never exceeds
``max_chars``: what does not fit is left out from the least likely to matter up, and the document
says how much.

>>> from session_migrator import Message, export_markdown
>>> doc = export_markdown([Message("user", "Rename utils.py to helpers.py, we'll keep the API.")])
>>> doc.splitlines()[0]
"# Rename utils.py to helpers.py, we'll keep the API."
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from session_migrator._errors import SummarizerError
from session_migrator.counting._counter import TokenCounter
from session_migrator.counting._tokens import counter_for
from session_migrator.messages._messages import Message, Session
from session_migrator.summaries._cues import DONE, FAILED, cue_bits
from session_migrator.summaries._notes import (
    DECISION,
    FENCE,
    PATH,
    TASK,
    actions_text,
    call_paths,
    command_paths,
    exit_status,
    last_todo_list,
    looks_only,
    one_line,
    own_words,
    relative,
    shell_command,
    touched,
    useful,
)
from session_migrator.summaries._summarizers import Summarizer

__all__ = ["DEFAULT_MAX_CHARS", "export_markdown"]

#: Size of the document unless told otherwise (about 3,000 tokens).
DEFAULT_MAX_CHARS = 12_000
_LEAST_CHARS = 200
_BULLET = 300  # longest bullet, in characters
_EXCHANGE = 600  # longest quote of the last exchange
_COMMANDS = {True: 12, False: 6}  # at most this many commands that test, build or run; others
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_FACT_SIGNALS = (
    (re.compile(r"\d"), 1.5),
    (PATH, 2.0),
    (re.compile(r"`[^`]+`|\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b"), 1.5),
    (re.compile(r"(?<!^)\b[A-Z][a-z]{2,}"), 1.0),
    (re.compile(r"\b(is|are|was|were|has|have|because|fails?|returns?|causes?)\b", re.I), 0.5),
)


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
    said = [
        m.replace(content=own_words(m.text)) if m.role == "user" else m
        for m in messages
        if m.role in ("user", "assistant") and m.marker is None
    ]
    said = [m for m in said if m.role == "assistant" or m.text]  # (a harness's turn: gone)
    requests = [m for m in said if m.role == "user"]
    named = own_words(str(metadata.get("title") or ""))
    heading = title or named or (requests[0].text if requests else "Session")
    head = [f"# {one_line(str(heading), 100) or 'Session'}", "", _about(sid, metadata, messages)]
    summary = _summary(messages, summarizer, counter, max_chars) if summarizer else None
    if summary is not None:
        head += ["", "## Summary", "", summary]
    sentences = list(_sentences(said))
    items = [
        *_tasks(messages, said, sentences),
        *_decisions(sentences),
        *_files(messages, said, str(metadata.get("cwd") or "")),
        *_commands(messages),
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
        return f"_No summary: {one_line(str(exc), 200)}. The sections below are extracted offline._"
    return text if len(text) <= room else text[: room - 1].rstrip() + "…"


# -- what goes in ------------------------------------------------------------------------------


def _tasks(
    messages: Sequence[Message], said: Sequence[Message], sentences: Sequence[tuple[int, str]]
) -> list[_Item]:
    out: list[_Item] = []
    where, todo = last_todo_list(messages)
    last = said[-1] if said else None
    closing = last is not None and last.role == "assistant" and _closes(last.text)
    if closing and where >= 0 and all(m is not last for m in messages[where:]):
        pass  # (the final answer came before the to-do list: it is still open)
    elif closing:
        todo = []  # the final answer, after the newest to-do list, says the work is done
    for k, (text, status) in enumerate(todo):
        suffix = " (in progress)" if status == "in_progress" else ""
        out.append(_Item("Open tasks", f"- [ ] {one_line(text, _BULLET)}{suffix}", 1.0, k))
    if last is not None and last.role == "user":
        out.append(
            _Item("Open tasks", f"- [ ] Unanswered: {one_line(last.text, _BULLET)}", 0.5, -1)
        )
    answered = {m.tool_call_id for m in messages if m.role == "tool" and m.marker is None}
    for m in messages:
        for call in m.tool_calls:
            if call.id not in answered:
                text = f"- [ ] `{call.name}` was interrupted: no result was recorded"
                out.append(_Item("Open tasks", text, 1.5, 10_000 + len(out)))
    if not todo:  # sentences naming work left, newest first (none that a later answer closed)
        done = _last_closed(said)
        found = [s for s in sentences if s[0] > done and TASK.search(s[1].lower())]
        for k, (pos, sentence) in enumerate(found[-10:]):
            out.append(_Item("Open tasks", f"- [ ] {sentence}", 2.0 - k / 100, 20_000 + pos))
    return out


def _decisions(sentences: Sequence[tuple[int, str]]) -> list[_Item]:
    found = [
        (pos, s)
        for pos, s in sentences
        if DECISION.search(s.lower()) and not TASK.search(s.lower())
    ]
    count = len(found)
    return [
        _Item("Decisions", f"- {s}", 3.0 - k / (count + 1), pos) for k, (pos, s) in enumerate(found)
    ]


def _files(messages: Sequence[Message], said: Sequence[Message], cwd: str) -> list[_Item]:
    files: dict[str, set[str]] = {}
    for m in messages:
        for call in m.tool_calls:
            for path, action in call_paths(call.name, call.arguments):
                touched(files.setdefault(relative(path, cwd), set()), action)
    for m in said:
        for path in PATH.findall(FENCE.sub(" ", m.text)):
            files.setdefault(relative(path, cwd), set()).add("mentioned")
    out = []
    for k, (path, actions) in enumerate(files.items()):
        done = actions_text(actions)
        rank = 6.0 if done == "mentioned" else 4.0
        out.append(_Item("Files touched", f"- `{path}`: {done}", rank + k / 1e4, k))
    return out


def _facts(sentences: Sequence[tuple[int, str]]) -> list[_Item]:
    out = []
    for pos, s in sentences:
        low = s.lower()
        if TASK.search(low) or DECISION.search(low):
            continue
        score = sum(weight for pattern, weight in _FACT_SIGNALS if pattern.search(s))
        if score >= 2.0:
            out.append(_Item("Facts", f"- {s}", 5.0 + 1 / (1 + score), pos))
    return out


def _commands(messages: Sequence[Message]) -> list[_Item]:
    """The shell commands the agent ran, each once: tests, builds and runs first, with how the
    last run ended where its result shows it, and how many times it ran."""
    results = {m.tool_call_id: m.text for m in messages if m.role == "tool" and m.marker is None}
    runs: dict[str, list[Any]] = {}  # command -> [runs, last status, first seen]
    for m in messages:
        for call in m.tool_calls:
            command = shell_command(call.name, call.arguments)
            if command is None or looks_only(command):
                continue
            if not useful(command) and any(command_paths(command)):
                continue  # (``rm``, ``mv``, ``cat > file``: the files touched say it)
            run = runs.setdefault(one_line(command, 160), [0, "", len(runs)])
            run[0] += 1
            run[1] = _status(call.name, results.get(call.id))
    out = []
    kinds = {command: useful(command) for command in runs}
    listed = {True: 0, False: 0}
    for command, (count, status, first) in runs.items():
        listed[kinds[command]] += 1
        if listed[kinds[command]] > _COMMANDS[kinds[command]]:
            continue  # (the first ones of each kind are enough)
        times = f", {count} runs" if count > 1 else ""
        text = f"- `{command}`" + (f": {status}{times}" if status else times.replace(",", ":"))
        kind = kinds[command]
        rank = (2.6 if kind else 5.5) + first / 1e3
        out.append(_Item("Commands", text, rank, (0 if kind else 10_000) + first))
    return out


def _status(tool: str, result: str | None) -> str:
    """How a shell call's run ended, as its result shows it (``passed (exit 0)``, ``failed
    (exit 1)``); "" when it does not show."""
    if result is None:
        return ""
    code = exit_status(result)
    if code is not None:
        return f"{'passed' if code == 0 else 'failed'} (exit {code})"
    if result.startswith("[tool error]"):
        return "failed"
    # Claude Code marks a command that exits with another code than 0 as an error
    return "passed" if tool == "Bash" else ""


_PASSES = re.compile(
    r"\b(?:all (?:\d+ )?tests? pass\w*|tests? pass(?:es|ed)?|passing|works now|implemented|"
    r"(?:is|are) now)\b"
)


def _closes(text: str) -> bool:
    """Whether an answer says the work is done (and neither that it failed nor what is left)."""
    head = text[:300]
    bits = cue_bits([head])[0]
    low = head.lower()
    done = bits & DONE or _PASSES.search(low) is not None
    return bool(done) and not bits & FAILED and TASK.search(text.lower()) is None


def _last_closed(said: Sequence[Message]) -> int:
    """The position (as :func:`_sentences` counts) of the last sentence before the newest answer
    that says the work is done: work named before it is closed (-1: none)."""
    last = next(
        (k for k in range(len(said) - 1, -1, -1)
         if said[k].role == "assistant" and _closes(said[k].text)),
        -1,
    )  # fmt: skip
    if last < 0:
        return -1
    return sum(len(_SENTENCE.split(FENCE.sub(" ", m.text))) for m in said[:last])


def _exchange(said: Sequence[Message]) -> list[_Item]:
    out = []
    for role, label in (("user", "User"), ("assistant", "Assistant")):
        last = next((m for m in reversed(said) if m.role == role), None)
        if last is not None and last.text.strip():
            text = f"- **{label}:** {one_line(last.text, _EXCHANGE)}"
            out.append(_Item("Last exchange", text, 0.2, 0 if role == "user" else 1))
    return out


def _sentences(said: Sequence[Message]) -> Iterator[tuple[int, str]]:
    """``(position, sentence)`` of the conversation's own words (no code, no injected context),
    each once."""
    seen: set[str] = set()
    pos = 0
    for m in said:
        for raw in _SENTENCE.split(FENCE.sub(" ", m.text)):
            sentence = one_line(raw.strip().lstrip("-*#>0123456789. ").strip(), _BULLET)
            key = sentence.lower()
            pos += 1
            if len(sentence) >= 12 and key not in seen:
                seen.add(key)
                yield pos, sentence


# -- how it is written -----------------------------------------------------------------------

_SECTIONS = ("Open tasks", "Decisions", "Files touched", "Commands", "Facts", "Last exchange")


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
