"""Pairing an agent's session file into messages: :class:`Conversation` collects messages, tool
calls and tool results in file order (the Claude Code and Codex importers feed it), then pairs
them: every call with its result (a placeholder result where the file has none), a user message
first, empty turns left out, each message stamped with its time, model and reasoning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from session_migrator.importers._common import (
    LEADING_NOTE,
    PLACEHOLDER_RESULT,
    Record,
    Stats,
    stable_id,
)
from session_migrator.messages._messages import (
    MARKER_KEY,
    MODEL_KEY,
    REASONING_KEY,
    RESULT_KEY,
    ContentPart,
    Message,
    Role,
    ToolCall,
)

__all__ = ["Conversation"]


@dataclass
class _Turn:
    role: Role
    content: str | tuple[ContentPart, ...]
    id: str
    calls: list[ToolCall] = field(default_factory=list)
    open: bool = False  # an assistant turn that later tool calls may still join
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Output:
    call_id: str
    content: str
    id: str
    extra: dict[str, Any] = field(default_factory=dict)


class Conversation:
    """Collects messages, tool calls and tool results in file order, then pairs them.

    Feed it with :meth:`message`, :meth:`tool_call` and :meth:`tool_output`, then call
    :meth:`build`. A tool call joins the assistant message just before it (text first, then calls,
    as one model response) unless a result or another message came in between.
    """

    def __init__(self, stats: Stats, *, id_prefix: str, key: str) -> None:
        self._stats = stats
        self._prefix = id_prefix
        self._key = key
        self._items: list[_Turn | _Output] = []
        self._times: dict[str, str] = {}
        self._reasoning: list[str] = []

    def reasoning(self, text: str) -> None:
        """Note a reasoning summary: it goes with the next (or open) assistant message."""
        if text.strip():
            self._reasoning.append(text.strip())

    def _take_reasoning(self, turn: _Turn) -> None:
        if self._reasoning:
            before = turn.extra.get(REASONING_KEY)
            turn.extra[REASONING_KEY] = "\n\n".join(
                [*([before] if before else []), *self._reasoning]
            )
            self._reasoning = []

    def message(
        self,
        role: Role,
        content: str | tuple[ContentPart, ...],
        *,
        id: str,
        calls: list[ToolCall] | None = None,
        model: str | None = None,
    ) -> None:
        """Add a system, user or assistant message (an assistant one may carry calls, and the
        ``model`` that wrote it, kept as ``extra["source_model"]``)."""
        turn = _Turn(role, content, id, list(calls or ()), open=role == "assistant")
        if role == "assistant":
            if model:
                turn.extra[MODEL_KEY] = model
            self._take_reasoning(turn)
        self._items.append(turn)

    def tool_call(self, call: ToolCall, *, id: str, model: str | None = None) -> None:
        """Add one call; it joins the open assistant message or starts a new one with ``id``."""
        last = self._items[-1] if self._items else None
        if isinstance(last, _Turn) and last.open:
            last.calls.append(call)
            turn = last
        else:
            turn = _Turn("assistant", "", id, [call], open=True)
            self._items.append(turn)
        if model:
            turn.extra.setdefault(MODEL_KEY, model)
        self._take_reasoning(turn)

    def tool_output(self, call_id: str, content: str, *, id: str, data: Any = None) -> None:
        """Add the result of the call ``call_id``; ``data``, the structured result the tool
        returned besides its text, is kept as ``extra["source_result"]``."""
        last = self._items[-1] if self._items else None
        if isinstance(last, _Turn):
            last.open = False
        extra = {RESULT_KEY: data} if data else {}
        self._items.append(_Output(call_id, content, id, extra))

    def stamp(self, id: str, rec: Record) -> None:
        """Note the time of ``rec`` (its ``timestamp`` field) as the time of message ``id``; the
        first noted time of an id is kept."""
        value = rec.data.get("timestamp")
        if isinstance(value, str) and value:
            self._times.setdefault(id, value)

    def timestamps(self, messages: list[Message]) -> dict[str, str]:
        """The source time of each of ``messages`` that has one, by message id."""
        return {m.id: self._times[m.id] for m in messages if m.id in self._times}

    def close_turn(self) -> None:
        """End the open assistant message: later calls start a new one."""
        last = self._items[-1] if self._items else None
        if isinstance(last, _Turn):
            last.open = False

    def build(self) -> list[Message]:
        """The paired conversation; see the module docstring for the rules."""
        calls_seen: set[str] = set()
        for item in self._items:
            if isinstance(item, _Turn):
                unique = []
                for call in item.calls:
                    if call.id in calls_seen:
                        self._stats.skip("duplicate_tool_call")
                        continue
                    calls_seen.add(call.id)
                    unique.append(call)
                item.calls = unique
        outputs: dict[str, _Output] = {}
        for item in self._items:
            if isinstance(item, _Output):
                if item.call_id not in calls_seen:
                    self._stats.skip("orphan_tool_output")
                elif item.call_id in outputs:
                    self._stats.skip("duplicate_tool_output")
                else:
                    outputs[item.call_id] = item
        messages: list[Message] = []
        in_block: set[str] = set()
        for item in self._items:
            if isinstance(item, _Output):
                if outputs.get(item.call_id) is item and item.call_id not in in_block:
                    self._stats.repaired["moved_tool_output"] += 1
                continue
            in_block = {c.id for c in item.calls}
            if not item.calls and _is_empty(item.content):
                self._stats.skip("empty_message")
                continue
            messages.append(
                Message(
                    item.role,
                    item.content,
                    tool_calls=tuple(item.calls),
                    id=item.id,
                    extra=item.extra,
                )
            )
            for call in item.calls:
                out = outputs.get(call.id)
                if out is not None:
                    messages.append(
                        Message(
                            "tool", out.content, tool_call_id=call.id, id=out.id, extra=out.extra
                        )
                    )
                else:
                    self._stats.repaired["placeholder_result"] += 1
                    messages.append(
                        Message(
                            "tool",
                            PLACEHOLDER_RESULT,
                            tool_call_id=call.id,
                            id=self.result_id(call.id),
                            extra={MARKER_KEY: {"kind": "placeholder_result"}},
                        )
                    )
        self._warn_pairing()
        return self._user_first(messages)

    def _user_first(self, messages: list[Message]) -> list[Message]:
        """``messages`` with a marked note first when the first non-system one is no user's."""
        at = next((k for k, m in enumerate(messages) if m.role != "system"), None)
        if at is None or messages[at].role == "user":
            return messages
        note = Message(
            "user",
            LEADING_NOTE,
            id=stable_id(self._prefix, self._key, "leading-note"),
            extra={MARKER_KEY: {"kind": "leading_user_note"}},
        )
        self._stats.repaired["leading_user_note"] += 1
        self._stats.warnings.append(
            "the session starts with an answer, not a user message; a marked note was put first "
            "so that chat APIs accept it"
        )
        return [*messages[:at], note, *messages[at:]]

    def result_id(self, call_id: str) -> str:
        """The id of the result message for ``call_id`` (the same for a placeholder)."""
        return stable_id(self._prefix, self._key, "result", call_id)

    def _warn_pairing(self) -> None:
        s, r = self._stats.skipped, self._stats.repaired
        if s["orphan_tool_output"]:
            self._stats.warnings.append(
                f"{s['orphan_tool_output']} tool result(s) answer a call that is not in the file; "
                "dropped"
            )
        if r["placeholder_result"]:
            self._stats.warnings.append(
                f"{r['placeholder_result']} tool call(s) have no recorded result; a placeholder "
                "result was added after each"
            )
        for key in ("orphan_tool_output", "duplicate_tool_output", "duplicate_tool_call"):
            if not s[key]:
                del s[key]
        for key in ("placeholder_result", "moved_tool_output"):
            if not r[key]:
                del r[key]


def _is_empty(content: str | tuple[ContentPart, ...]) -> bool:
    if isinstance(content, str):
        return not content.strip()
    return not content
