"""Claude Code session files: ``~/.claude/projects/<project>/<session>.jsonl``.

Each line is an entry. ``user`` and ``assistant`` entries hold an Anthropic ``message`` whose
content is a string or a list of blocks: ``text``, ``tool_use`` (assistant), ``tool_result`` and
``image`` (user). One model response is often written as several ``assistant`` entries, one block
each, with the same ``message.id``: they are merged back into one assistant message. A
``tool_result`` becomes a ``role="tool"`` message after its call (``is_error`` results start with
``[tool error]``). Each assistant message keeps the model that wrote it
(``extra["source_model"]``) and the text of its ``thinking`` blocks (``extra["reasoning"]``; the
signature, valid for the source model only, is dropped; ``redacted_thinking`` is skipped with a
count); each message keeps its entry's ``timestamp``. API error notices (``isApiErrorMessage``)
and sub-agent entries (``isSidechain``) inside a main session file are skipped with a count.

A sub-agent transcript (``<session>/subagents/agent-<id>.jsonl``: every entry ``isSidechain``,
with an ``agentId`` and the parent's ``sessionId``) is its own session, ``<parent>/agent-<id>``,
with ``parent_session_id`` and ``agent_id`` in its metadata, and ``parent_tool_call_id`` (the
parent's ``Task`` call whose result names the agent) when the parent file is beside it.

Entries form a tree through ``parentUuid``: a rewind leaves the abandoned branch in the file. The
conversation is the chain from the last message back to the root (across a ``/compact`` boundary
through ``logicalParentUuid``, so nothing before the compaction is lost); entries off that chain are
skipped as ``off_branch``. Blocks of a kept response written on a sibling branch (Claude Code 2.x
writes parallel ``tool_use`` entries that way) are kept, and a tool result is found by its
``tool_use_id`` wherever it sits in the tree. Files without ``uuid`` fields are read in file
order. A ``custom-title``, ``summary`` or ``ai-title`` entry gives the session a ``title`` (in
that order of preference; ``ai_title`` is kept too) and ``last-prompt`` a ``last_prompt``;
``system``, ``progress``, ``file-history-snapshot``, ``queue-operation``, ``permission-mode`` and
``mode`` entries are skipped on purpose with a count, and so are ``attachment`` entries (what
Claude Code 2.1 attaches for its model: the listings of its agents and skills, reminders; counted
as ``attachment:<type>``); unknown entry types with a count and a warning. The last response's
usage (input plus cache read and cache creation tokens) is recorded as ``observed_input_tokens``.

Web searches the API ran (``server_tool_use`` and its ``web_search_tool_result``, inside the
response) become a call paired with its result (titles and addresses; the encrypted page content
left out), the response's later text an assistant message after it. The structured result Claude
Code keeps beside a tool's text (``toolUseResult``) is the result's ``extra["source_result"]``,
without the whole file where the call or the text holds it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from session_migrator._errors import ImportFormatError
from session_migrator.importers._claude_code_tree import active_entries, entry_uuid
from session_migrator.importers._common import (
    LAST_ENTRY_KEY,
    SHAPE_ERRORS,
    TIMESTAMPS_KEY,
    ImportResult,
    Record,
    Stats,
    dated,
    file_refused_if_odd,
    image_part,
    line_skipped_if_odd,
    read_jsonl,
    result_text,
    stable_id,
    text_or_parts,
    text_part,
)
from session_migrator.importers._pairing import Conversation
from session_migrator.importers._tool_results import claude_tool_result, server_tool_result
from session_migrator.messages._messages import ContentPart, Session, ToolCall

__all__ = ["import_claude_code"]

FORMAT = "claude-code"
_MESSAGE_TYPES = {"user", "assistant"}
#: Entry types skipped on purpose (counted, no warning): UI and tool-progress events, file
#: backups, permission modes, queued input (which reappears as the user entry).
_IGNORED_TYPES = {
    "system",
    "file-history-snapshot",
    "queue-operation",
    "progress",
    "permission-mode",
    "mode",
}
#: Entry types whose text is kept as session metadata: type -> (field, metadata key).
_METADATA_TYPES = {
    "summary": ("summary", "summary_title"),
    "ai-title": ("aiTitle", "ai_title"),
    "custom-title": ("customTitle", "custom_title"),
    "last-prompt": ("lastPrompt", "last_prompt"),
}
_SYNTHETIC_MODEL = "<synthetic>"


def import_claude_code(
    path: str | Path, *, session_id: str | None = None, workspace: str = "default"
) -> ImportResult:
    """Read one Claude Code session file into a :class:`~session_migrator.Session`.

    ``session_id`` defaults to the file's ``sessionId`` (else the file name). Raises
    :class:`~session_migrator.ImportFormatError` when the file is not a Claude Code session.

    >>> result = import_claude_code("~/.claude/projects/p/5b1c.jsonl")  # doctest: +SKIP
    >>> result.source_model  # doctest: +SKIP
    'claude-sonnet-4-5-20250929'
    """
    path = Path(path).expanduser()
    stats = Stats()
    records, nlines = read_jsonl(path, stats, format_name="Claude Code session")
    entries = [r for r in records if _is_message(r.data)]
    if not entries and not any(r.data.get("type") in _METADATA_TYPES for r in records):
        raise ImportFormatError(
            f"{path}: line {records[0].line}: no Claude Code user/assistant entries found; is it "
            "a Codex rollout? Try `session-migrator import codex`."
        )
    source_id = next(
        (r.data["sessionId"] for r in records if isinstance(r.data.get("sessionId"), str)), None
    )
    agent = _agent_id(entries, path)
    if agent is None:
        sid = session_id or source_id or path.stem
    else:  # a sub-agent transcript: its own session, named after its parent
        sid = session_id or (f"{source_id}/agent-{agent}" if source_id else f"agent-{agent}")
    reader = _Reader(stats, key=sid)
    with file_refused_if_odd(path):
        reader.scan(records)
        for rec in active_entries(entries, records, stats, sub_agent=agent is not None):
            with line_skipped_if_odd(stats, rec):
                reader.entry(rec)
        reader.flush()
        messages = reader.conversation.build()
        metadata = reader.metadata(path, source_id)
        if times := reader.conversation.timestamps(messages):
            metadata[TIMESTAMPS_KEY] = times
            messages = dated(messages, times)
    if agent is not None:
        metadata.update(parent_session_id=source_id, agent_id=agent)
        call = _spawning_call(path, source_id, agent)
        if call is not None:
            metadata["parent_tool_call_id"] = call
    if not messages:
        stats.warnings.append("no messages in this session")
    return ImportResult(
        session=Session(sid, tuple(messages), workspace=workspace, metadata=metadata),
        path=path,
        skipped=dict(stats.skipped),
        repaired=dict(stats.repaired),
        warnings=list(stats.warnings),
        lines=nlines,
    )


def _is_message(data: Mapping[str, Any]) -> bool:
    kind = data.get("type")
    return (
        isinstance(kind, str)
        and kind in _MESSAGE_TYPES
        and isinstance(data.get("message"), Mapping)
    )


def _agent_id(entries: list[Record], path: Path) -> str | None:
    """The sub-agent's id when every message entry is a sidechain (a sub-agent transcript, such
    as ``<session>/subagents/agent-<id>.jsonl``), else ``None``."""
    if not entries or any(r.data.get("isSidechain") is not True for r in entries):
        return None
    found = next((a for r in entries if isinstance(a := r.data.get("agentId"), str) and a), None)
    if found is not None:
        return found
    return path.stem.removeprefix("agent-")


def _spawning_call(path: Path, parent_id: str | None, agent: str) -> str | None:
    """The id of the parent session's tool call (``Task``) that started sub-agent ``agent``: its
    result names the agent (``agentId: <id>``). The parent file is ``<parent>.jsonl`` beside the
    ``<parent>/subagents/`` folder; ``None`` when it is not there or does not say."""
    if parent_id is None or path.parent.name != "subagents":
        return None
    parent = path.parent.parent.with_name(f"{parent_id}.jsonl")
    try:
        data = parent.read_bytes()
    except OSError:
        return None
    needles = (f"agentId: {agent}".encode(), f'"agentId":"{agent}"'.encode())
    for line in data.splitlines():
        if b"tool_result" not in line or not any(n in line for n in needles):
            continue
        try:
            entry = json.loads(line)
            blocks = entry["message"]["content"]
            return next(
                str(b["tool_use_id"])
                for b in blocks
                if isinstance(b, Mapping) and b.get("type") == "tool_result"
            )
        except (ValueError, *SHAPE_ERRORS, StopIteration):
            continue
    return None


class _Reader:
    """Turns selected entries into conversation items; ``key`` goes into every message id."""

    def __init__(self, stats: Stats, *, key: str) -> None:
        self.stats = stats
        self.conversation = Conversation(stats, id_prefix="cc", key=key)
        self.models: list[str] = []
        self.observed: int | None = None
        self.texts: dict[str, str] = {}  # the last of each _METADATA_TYPES entry
        self.facts: dict[str, str] = {}
        self._key = key
        self._unknown: set[str] = set()
        # the ids of assistant messages that continue a response after a server tool's result
        self._continued: set[str] = set()
        # the response being merged: id, message id, texts, calls, model, thinking texts
        self._pending: (
            tuple[str | None, str, list[str], list[ToolCall], list[str], list[str]] | None
        ) = None

    def scan(self, records: list[Record]) -> None:
        """Read what is not a message: titles, cwd, version, skipped entry types."""
        for rec in records:
            data = rec.data
            kind = data.get("type")
            for key, name in (
                ("cwd", "cwd"),
                ("version", "cli_version"),
                ("gitBranch", "git_branch"),
            ):
                if isinstance(data.get(key), str) and data[key]:
                    self.facts[name] = data[key]
            if isinstance(data.get("timestamp"), str) and data["timestamp"]:
                self.facts.setdefault("started_at", data["timestamp"])
                self.facts[LAST_ENTRY_KEY] = data["timestamp"]
            if _is_message(data):
                continue
            if isinstance(kind, str) and kind in _METADATA_TYPES:
                field, key = _METADATA_TYPES[kind]
                if isinstance(data.get(field), str) and data[field].strip():
                    self.texts[key] = data[field]
            elif isinstance(kind, str) and kind in _IGNORED_TYPES:
                self.stats.skip(kind)
            elif kind == "attachment":
                # what the harness attaches for its model (its agents' and skills' listings,
                # reminders): counted by its type
                what = data.get("attachment")
                atype = what.get("type") if isinstance(what, Mapping) else None
                self.stats.skip(f"attachment:{atype}" if isinstance(atype, str) else "attachment")
            else:
                key = f"unknown:{kind}" if isinstance(kind, str) else "unknown"
                self.stats.skip(key)
                if key not in self._unknown:
                    self._unknown.add(key)
                    self.stats.warnings.append(
                        f"skipped entry type {kind!r}: not a Claude Code entry this importer knows"
                    )

    def _id(self, rec: Record, *suffix: object) -> str:
        return stable_id(f"cc{rec.line:06d}", self._key, entry_uuid(rec) or rec.digest, *suffix)

    def entry(self, rec: Record) -> None:
        if rec.data.get("type") == "assistant":
            self._assistant(rec)
        else:
            self.flush()
            self._user(rec)

    def flush(self) -> None:
        """Emit the assistant response being merged, if any."""
        if self._pending is not None:
            _, msg_id, texts, calls, model, thoughts = self._pending
            if msg_id in self._continued and not (texts or calls or thoughts):
                self._pending = None  # (nothing came after the server tool's result)
                return
            for thought in thoughts:
                self.conversation.reasoning(thought)
            self.conversation.message(
                "assistant",
                "\n\n".join(texts),
                id=msg_id,
                calls=calls,
                model=model[-1] if model else None,
            )
            self._pending = None

    def _assistant(self, rec: Record) -> None:
        data = rec.data
        message = data["message"]
        if data.get("isApiErrorMessage") is True or message.get("model") == _SYNTHETIC_MODEL:
            self.stats.skip("api_error_message")
            return
        response_id = message.get("id") if isinstance(message.get("id"), str) else None
        if self._pending is None or response_id is None or self._pending[0] != response_id:
            self.flush()
            self._pending = (response_id, self._id(rec), [], [], [], [])
            self.conversation.stamp(self._pending[1], rec)
        _, _, texts, calls, used, thoughts = self._pending
        model = message.get("model")
        if isinstance(model, str) and model:
            used.append(model)
            if model in self.models:
                self.models.remove(model)
            self.models.append(model)
        usage = message.get("usage")
        if isinstance(usage, Mapping):
            total = sum(
                v
                for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
                if isinstance(v := usage.get(k), int) and not isinstance(v, bool)
            )
            if total > 0:
                self.observed = total
        content = message.get("content")
        for block in [content] if isinstance(content, str) else content or ():
            btype = block.get("type") if isinstance(block, Mapping) else "text"
            if isinstance(block, str):
                texts.append(block)
            elif btype == "text" and isinstance(block.get("text"), str):
                if block["text"].strip():
                    texts.append(block["text"])
            elif btype in ("tool_use", "server_tool_use") and isinstance(block.get("id"), str):
                name = block.get("name") if isinstance(block.get("name"), str) else "tool"
                args = json.dumps(block.get("input", {}), ensure_ascii=False)
                calls.append(ToolCall(block["id"], str(name), args))
            elif (
                isinstance(btype, str)
                and btype.endswith("_tool_result")
                and isinstance(block.get("tool_use_id"), str)
            ):
                self._server_result(rec, block)
                _, _, texts, calls, used, thoughts = self._pending
            elif btype == "thinking" and isinstance(block.get("thinking"), str):
                if block["thinking"].strip():
                    thoughts.append(block["thinking"])
                else:
                    self.stats.skip("thinking")  # (an empty block: a signature only)
            elif btype in ("thinking", "redacted_thinking"):
                self.stats.skip("thinking")
            else:
                self.stats.skip(f"content:{btype}")

    def _server_result(self, rec: Record, block: Mapping[str, Any]) -> None:
        """The result of a tool the API ran (``web_search_tool_result``,
        ``web_fetch_tool_result``), inside the response: its call's result; the response's later
        blocks continue as another assistant message, after it."""
        pending = self._pending
        self.flush()
        call_id = block["tool_use_id"]
        text, data = server_tool_result(block)
        conv = self.conversation
        conv.tool_output(call_id, text, id=conv.result_id(call_id), data=data)
        conv.stamp(conv.result_id(call_id), rec)
        after = self._id(rec, "after", call_id)
        self._continued.add(after)
        self._pending = (pending[0] if pending else None, after, [], [],
                         list(pending[4]) if pending else [], [])  # fmt: skip
        conv.stamp(after, rec)

    def _user(self, rec: Record) -> None:
        content = rec.data["message"].get("content")
        conv = self.conversation
        if isinstance(content, str):
            conv.message("user", content, id=self._id(rec))
            conv.stamp(self._id(rec), rec)
            return
        parts: list[ContentPart] = []
        blocks = content if isinstance(content, list) else []
        results = [b for b in blocks if isinstance(b, Mapping) and b.get("type") == "tool_result"]
        # the structured result Claude Code keeps beside the text (one per entry, for its one
        # tool_result)
        data = claude_tool_result(rec.data.get("toolUseResult")) if len(results) == 1 else None
        for block in blocks:
            btype = block.get("type") if isinstance(block, Mapping) else None
            if btype == "tool_result" and isinstance(block.get("tool_use_id"), str):
                call_id = block["tool_use_id"]
                text = result_text(block.get("content"))
                if block.get("is_error") is True:
                    text = f"[tool error] {text}"
                if data and data.get("interrupted") is True and "interrupt" not in text.lower():
                    text = f"{text}\n[interrupted by the user]"
                conv.tool_output(call_id, text, id=conv.result_id(call_id), data=data)
                conv.stamp(conv.result_id(call_id), rec)
            elif btype == "text" and isinstance(block.get("text"), str):
                parts.append(text_part(block["text"]))
            elif btype == "image" and (url := _image_url(block.get("source"))) is not None:
                parts.append(image_part(url))
            else:
                self.stats.skip(f"content:{btype}")
        if parts:
            conv.message("user", text_or_parts(parts), id=self._id(rec))
            conv.stamp(self._id(rec), rec)

    def metadata(self, path: Path, source_id: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "source_format": FORMAT,
            "source_path": str(path),
            "source_session_id": source_id,
            "source_model": self.models[-1] if self.models else None,
            "observed_input_tokens": self.observed,
            "cwd": self.facts.get("cwd"),
        }
        if len(self.models) > 1:
            out["source_models"] = list(self.models)
        texts = self.texts
        # the user's own title, else the summary Claude Code wrote, else its generated title
        title = texts.get("custom_title") or texts.get("summary_title") or texts.get("ai_title")
        if title is not None:
            out["title"] = title
        for key in ("ai_title", "last_prompt"):
            if key in texts:
                out[key] = texts[key]
        for name in ("cli_version", "git_branch", "started_at", LAST_ENTRY_KEY):
            if name in self.facts:
                out[name] = self.facts[name]
        return out


def _image_url(source: Any) -> str | None:
    """An Anthropic image source as a URL (``data:`` for base64)."""
    if not isinstance(source, Mapping):
        return None
    if source.get("type") == "base64" and isinstance(source.get("data"), str):
        media = source.get("media_type")
        media = media if isinstance(media, str) else "image/png"
        return f"data:{media};base64,{source['data']}"
    if source.get("type") == "url" and isinstance(source.get("url"), str):
        return str(source["url"])
    return None
