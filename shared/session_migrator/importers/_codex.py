"""Codex CLI rollout files: ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``.

Each line is ``{"timestamp": ..., "type": ..., "payload": {...}}``:

- ``session_meta``: the session id, cwd, CLI version, git branch, commit and repository URL
  (``git_branch``, ``git_commit``, ``git_repository_url``; and the base instructions, Codex's
  own prompt, which are not turned into a message: counted as ``base_instructions``, their text
  kept as the result's ``harness_prompt``);
- ``response_item``: what the model saw and said. ``message`` (roles user, assistant, developer,
  system; ``developer`` becomes ``system``), ``function_call`` / ``custom_tool_call`` /
  ``local_shell_call`` and their ``*_output`` results, paired by ``call_id``. A ``reasoning``
  item's summary text goes with the next assistant message as ``extra["reasoning"]`` (its
  encrypted content, for the source model only, is dropped; an item without a summary is
  skipped with a count); each assistant message keeps the model of its turn as
  ``extra["source_model"]``. A tool output's text is kept, and what it holds besides (the
  ``metadata`` of earlier releases' JSON shell output: exit code, duration; an output object's
  other keys) as the result's ``extra["source_result"]``. A ``web_search_call`` (run by the API)
  becomes a ``web_search`` call with its action (``search`` and its query, ``open_page``,
  ``find_in_page``) as arguments, paired with a result saying what it searched or opened (the
  file does not keep what the model read), the item kept as ``extra["source_result"]``.
  Skipped with a count: ``ghost_snapshot`` (the harness's undo commits), ``compaction``
  (encrypted for the source model) and ``image_generation_call`` items;
- ``event_msg``: UI events. A ``user_message`` whose prompt no ``response_item`` user message of
  its turn holds (Codex Desktop writes some prompts only as events) becomes the user message, in
  its place; ``token_count`` is read (its last ``input_tokens`` is the input the
  source model really saw, recorded as ``observed_input_tokens``); the others repeat response items
  and are skipped, counted as ``event_msg:<type>``;
- ``turn_context``: the model (and cwd) of each turn; the last one is the ``source_model``;
- ``compacted``: the summary Codex wrote on ``/compact``, kept as the user message Codex sent;
- ``world_state`` and ``token_usage_record`` (Codex 0.169): skipped with a count.

The older layout (a bare meta object on line 1, then bare response items and ``record_type``
lines) is read too. Unknown line or item types are skipped with a count and a warning, never a
crash. Message ids are derived from the session id and the line, so importing the same file twice
gives the same ids.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from session_migrator._errors import ImportFormatError
from session_migrator.importers._codex_prompts import event_only_prompts
from session_migrator.importers._common import (
    LAST_ENTRY_KEY,
    TIMESTAMPS_KEY,
    ImportResult,
    Record,
    Stats,
    dated,
    file_refused_if_odd,
    image_part,
    line_skipped_if_odd,
    read_jsonl,
    stable_id,
    text_or_parts,
    text_part,
)
from session_migrator.importers._pairing import Conversation
from session_migrator.importers._tool_results import codex_output, web_search_text
from session_migrator.messages._messages import ContentPart, Role, Session, ToolCall

__all__ = ["import_codex"]

FORMAT = "codex"
_CALL_TYPES = {"function_call", "custom_tool_call", "local_shell_call"}
_OUTPUT_TYPES = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}
#: Response items skipped on purpose (counted, no warning): the harness's undo commits, the
#: encrypted compaction only the source model can read (the items it replaced stay in the file),
#: generated images (their prompt and result are not a message to another model).
_SKIPPED_ITEMS = {
    "ghost_snapshot": "ghost_snapshot",
    "compaction": "compaction",
    "compaction_summary": "compaction",
    "image_generation_call": "image_generation_call",
}
_ITEM_TYPES = {
    "message",
    "reasoning",
    "web_search_call",
    *_CALL_TYPES,
    *_OUTPUT_TYPES,
    *_SKIPPED_ITEMS,
}
#: Lines of Codex 0.169 that hold no message: the environment the harness describes to the model
#: (it is in the messages too) and each response's usage (repeated by ``token_count``).
_SKIPPED_LINES = {"world_state", "token_usage_record"}
_LINE_TYPES = {
    "session_meta", "response_item", "event_msg", "turn_context", "compacted", *_SKIPPED_LINES,
}  # fmt: skip
_ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "developer": "system",
    "system": "system",
}


def import_codex(
    path: str | Path, *, session_id: str | None = None, workspace: str = "default"
) -> ImportResult:
    """Read one Codex rollout file into a :class:`~session_migrator.Session`.

    ``session_id`` defaults to the id in ``session_meta`` (else the file name). Raises
    :class:`~session_migrator.ImportFormatError` when the file is not a Codex rollout at all.

    >>> result = import_codex("rollout-2025-09-01T12-00-00-abc.jsonl")  # doctest: +SKIP
    >>> result.session.metadata["source_model"]  # doctest: +SKIP
    'gpt-5-codex'
    """
    path = Path(path).expanduser()
    stats = Stats()
    records, nlines = read_jsonl(path, stats, format_name="Codex rollout")
    source_id = _source_id(records)
    sid = session_id or source_id or path.stem
    reader = _Reader(stats, key=sid)
    reader.read(records)
    if not reader.recognised:
        first = records[0]
        raise ImportFormatError(
            f"{path}: line {first.line}: no Codex rollout lines (session_meta, response_item, "
            "...) found; is it a Claude Code session? Try `session-migrator import claude-code`."
        )
    with file_refused_if_odd(path):
        messages = reader.conversation.build()
        metadata = reader.metadata(path, source_id)
        if times := reader.conversation.timestamps(messages):
            metadata[TIMESTAMPS_KEY] = times
            messages = dated(messages, times)
    if not messages:
        stats.warnings.append("no messages in this session")
    return ImportResult(
        session=Session(sid, tuple(messages), workspace=workspace, metadata=metadata),
        path=path,
        skipped=dict(stats.skipped),
        repaired=dict(stats.repaired),
        warnings=list(stats.warnings),
        lines=nlines,
        harness_prompt=reader.harness_prompt,
    )


def _source_id(records: list[Record]) -> str | None:
    for index, rec in enumerate(records):
        data = rec.data
        meta: Any = None
        if data.get("type") == "session_meta" and isinstance(data.get("payload"), Mapping):
            meta = data["payload"].get("meta", data["payload"])
        elif index == 0 and data.get("type") is None and "timestamp" in data:
            meta = data
        if isinstance(meta, Mapping) and isinstance(meta.get("id"), str) and meta["id"]:
            return cast(str, meta["id"])
    return None


class _Reader:
    """One pass over the records; ``key`` (the session id) goes into every message id."""

    def __init__(self, stats: Stats, *, key: str) -> None:
        self.stats = stats
        self.meta: dict[str, Any] = {}
        self.models: list[str] = []
        self.cwd: str | None = None
        self.observed: int | None = None
        self.context_window: int | None = None
        self.recognised = 0
        self.harness_prompt = ""
        self.last_entry_at: str | None = None
        self.conversation = Conversation(stats, id_prefix="cx", key=key)
        self._key = key
        self._unknown: set[str] = set()
        self._prompts: set[int] = set()
        self._turn_model: str | None = None

    def read(self, records: list[Record]) -> None:
        self._prompts = event_only_prompts(records)
        for index, rec in enumerate(records):
            with line_skipped_if_odd(self.stats, rec):
                self._record(index, rec)

    def _record(self, index: int, rec: Record) -> None:
        data = rec.data
        if isinstance(data.get("timestamp"), str) and data["timestamp"]:
            self.last_entry_at = data["timestamp"]
        kind = data.get("type")
        if not isinstance(kind, str | None):
            kind = repr(kind)  # (a list or an object where the line type belongs)
        payload = data.get("payload")
        if kind in _LINE_TYPES and isinstance(payload, Mapping):
            self.recognised += 1
            self._line(rec, kind, payload)
        elif index == 0 and kind is None and "id" in data and "timestamp" in data:
            self.recognised += 1  # the older layout: a bare meta object first
            self._session_meta(data)
        elif kind in _ITEM_TYPES:
            self.recognised += 1  # the older layout: bare response items
            self._item(rec, data)
        elif "record_type" in data:
            self.stats.skip("record_type")
        else:
            self._skip_unknown(f"line type {kind!r}" if kind else "line without a type", kind)

    def _skip_unknown(self, what: str, kind: object) -> None:
        key = f"unknown:{kind}" if isinstance(kind, str) else "unknown"
        self.stats.skip(key)
        if key not in self._unknown:
            self._unknown.add(key)
            self.stats.warnings.append(
                f"skipped {what}: not a Codex rollout line this importer knows"
            )

    def _line(self, rec: Record, kind: str, payload: Mapping[str, Any]) -> None:
        if kind == "session_meta":
            self._session_meta(payload.get("meta", payload))
        elif kind == "response_item":
            self._item(rec, payload)
        elif kind == "turn_context":
            self._turn_context(payload)
        elif kind == "event_msg":
            self._event(rec, payload)
        elif kind in _SKIPPED_LINES:
            self.stats.skip(kind)
        elif kind == "compacted":
            text = payload.get("message")
            if isinstance(text, str) and text.strip():
                self.conversation.message("user", text, id=self._id(rec))
                self.conversation.stamp(self._id(rec), rec)
            else:
                self.stats.skip("compacted")

    def _session_meta(self, meta: Any) -> None:
        if not isinstance(meta, Mapping):
            return
        if not self.meta:
            self.meta = dict(meta)
        if isinstance(meta.get("cwd"), str):
            self.cwd = meta["cwd"]
        instructions = meta.get("instructions") or meta.get("base_instructions")
        if instructions:
            self.stats.skip("base_instructions")
            if isinstance(instructions, Mapping):
                instructions = instructions.get("text")
            if isinstance(instructions, str) and not self.harness_prompt:
                self.harness_prompt = instructions
        model = meta.get("model")
        if isinstance(model, str):
            self._model(model)

    def _turn_context(self, payload: Mapping[str, Any]) -> None:
        model = payload.get("model")
        if isinstance(model, str):
            self._model(model)
        if isinstance(payload.get("cwd"), str):
            self.cwd = payload["cwd"]

    def _model(self, model: str) -> None:
        self._turn_model = model
        if model and (not self.models or self.models[-1] != model):
            if model in self.models:
                self.models.remove(model)
            self.models.append(model)

    def _event(self, rec: Record, payload: Mapping[str, Any]) -> None:
        etype = payload.get("type")
        if etype == "user_message" and rec.line in self._prompts:
            parts = [text_part(payload["message"])] if payload["message"].strip() else []
            images = payload.get("images")
            for url in images if isinstance(images, list) else ():
                if isinstance(url, str) and url:
                    parts.append(image_part(url))
            if parts:
                self.conversation.message("user", text_or_parts(parts), id=self._id(rec))
                self.conversation.stamp(self._id(rec), rec)
            return
        if etype != "token_count":
            self.stats.skip(f"event_msg:{etype}" if isinstance(etype, str) else "event_msg")
            return
        info = payload.get("info")
        last: Any = None
        if isinstance(info, Mapping):
            last = info.get("last_token_usage")
            window = info.get("model_context_window")
            if isinstance(window, int) and not isinstance(window, bool):
                self.context_window = window
        elif "input_tokens" in payload:  # older layout: the usage fields at the top
            last = payload
        if isinstance(last, Mapping):
            tokens = last.get("input_tokens")
            if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
                self.observed = tokens

    def _id(self, rec: Record) -> str:
        return stable_id(f"cx{rec.line:06d}", self._key, rec.digest)

    def _item(self, rec: Record, item: Mapping[str, Any]) -> None:
        itype = item.get("type")
        conv = self.conversation
        if itype == "message":
            self._message(rec, item)
        elif itype in _CALL_TYPES:
            call = self._call(item)
            if call is None:
                self.stats.skip(f"malformed:{itype}")
            else:
                conv.tool_call(call, id=self._id(rec), model=self._turn_model)
                conv.stamp(self._id(rec), rec)
        elif itype in _OUTPUT_TYPES:
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                self.stats.skip(f"malformed:{itype}")
                return
            text, data = codex_output(item.get("output"))
            conv.tool_output(call_id, text, id=conv.result_id(call_id), data=data)
            conv.stamp(conv.result_id(call_id), rec)
        elif itype == "reasoning":
            summary = item.get("summary")
            texts = [
                b["text"]
                for b in (summary if isinstance(summary, list) else ())
                if isinstance(b, Mapping) and isinstance(b.get("text"), str) and b["text"].strip()
            ]
            if texts:
                conv.reasoning("\n\n".join(texts))
            else:
                self.stats.skip("reasoning")
        elif itype == "web_search_call":
            self._web_search(rec, item)
        elif isinstance(itype, str) and itype in _SKIPPED_ITEMS:
            self.stats.skip(_SKIPPED_ITEMS[itype])
        else:
            self._skip_unknown(f"response item type {itype!r}", itype)

    def _web_search(self, rec: Record, item: Mapping[str, Any]) -> None:
        """A web search the model made (run by the API, not by Codex): a ``web_search`` call
        with its action as arguments, and a result saying what was searched or opened (the file
        does not keep what the model read); the item is kept as the result's
        ``extra["source_result"]``."""
        action = item.get("action")
        action = (
            {k: v for k, v in action.items() if v is not None}
            if isinstance(action, Mapping)
            else {}
        )
        call_id = item.get("id") if isinstance(item.get("id"), str) else None
        call_id = call_id or stable_id("ws", self._key, rec.line, rec.digest)
        call = ToolCall(call_id, "web_search", json.dumps(action, ensure_ascii=False))
        conv = self.conversation
        conv.tool_call(call, id=self._id(rec), model=self._turn_model)
        conv.stamp(self._id(rec), rec)
        status = str(item["status"]) if isinstance(item.get("status"), str) else "done"
        data = {"type": "web_search_call", "status": status, "action": action}
        conv.tool_output(call_id, web_search_text(action, status), id=conv.result_id(call_id),
                         data=data)  # fmt: skip
        conv.stamp(conv.result_id(call_id), rec)

    def _message(self, rec: Record, item: Mapping[str, Any]) -> None:
        role = _ROLES.get(str(item.get("role")))
        if role is None:
            self._skip_unknown(f"message role {item.get('role')!r}", f"role:{item.get('role')}")
            return
        parts = self._parts(item.get("content"), role)
        if role == "assistant":
            text = "\n".join(p.text or "" for p in parts if p.type == "text")
            self.conversation.message("assistant", text, id=self._id(rec), model=self._turn_model)
        else:
            self.conversation.message(role, text_or_parts(parts), id=self._id(rec))
        self.conversation.stamp(self._id(rec), rec)

    def _parts(self, content: Any, role: Role) -> list[ContentPart]:
        if isinstance(content, str):
            return [text_part(content)]
        parts: list[ContentPart] = []
        for block in content if isinstance(content, list) else ():
            btype = block.get("type") if isinstance(block, Mapping) else None
            if btype in ("input_text", "output_text", "text") and isinstance(
                block.get("text"), str
            ):
                parts.append(text_part(block["text"]))
            elif btype == "refusal" and isinstance(block.get("refusal"), str):
                parts.append(text_part(block["refusal"]))
            elif btype == "input_image" and role != "assistant":
                url = block.get("image_url")
                if isinstance(url, str):
                    parts.append(image_part(url))
                else:
                    self.stats.skip("content:input_image")
            else:
                self.stats.skip(f"content:{btype}")
        return parts

    def _call(self, item: Mapping[str, Any]) -> ToolCall | None:
        itype = item.get("type")
        call_id = item.get("call_id") or item.get("id")
        if not isinstance(call_id, str):
            return None
        if itype == "function_call":
            name, args = item.get("name"), item.get("arguments", "{}")
            if not isinstance(args, str):
                args = json.dumps(args, ensure_ascii=False)
        elif itype == "custom_tool_call":
            name = item.get("name")
            args = json.dumps({"input": item.get("input")}, ensure_ascii=False)
        else:  # local_shell_call
            name, args = "local_shell", json.dumps(item.get("action"), ensure_ascii=False)
        if not isinstance(name, str):
            return None
        return ToolCall(call_id, name, args)

    def metadata(self, path: Path, source_id: str | None) -> dict[str, Any]:
        meta = self.meta
        out: dict[str, Any] = {
            "source_format": FORMAT,
            "source_path": str(path),
            "source_session_id": source_id,
            "source_model": self.models[-1] if self.models else None,
            "observed_input_tokens": self.observed,
            "cwd": self.cwd if self.cwd is not None else meta.get("cwd"),
        }
        if len(self.models) > 1:
            out["source_models"] = list(self.models)
        if self.context_window is not None:
            out["observed_context_window"] = self.context_window
        for key, name in (
            ("timestamp", "started_at"),
            ("cli_version", "cli_version"),
            ("originator", "originator"),
            ("model_provider", "model_provider"),
        ):
            if isinstance(meta.get(key), str):
                out[name] = meta[key]
        if self.last_entry_at is not None:
            out[LAST_ENTRY_KEY] = self.last_entry_at
        git = meta.get("git")
        for key, name in (
            ("branch", "git_branch"),
            ("commit_hash", "git_commit"),
            ("repository_url", "git_repository_url"),
        ):
            if isinstance(git, Mapping) and isinstance(git.get(key), str) and git[key]:
                out[name] = git[key]
        return out
