"""Framework-neutral, immutable messages and sessions, and the OpenAI chat format.

A :class:`Message` keeps everything a framework attached in ``extra`` so a round trip through the
core is lossless. Messages are frozen: compression builds new lists, never edits a message.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, cast, get_args

from session_migrator._errors import InvalidMessageError
from session_migrator.messages._ids import derived_id, new_id
from session_migrator.messages._nesting import check_message_nesting, check_openai_nesting
from session_migrator.messages._parts import ContentPart, ToolCall

__all__ = [
    "ContentPart",
    "Message",
    "Role",
    "Session",
    "ToolCall",
    "messages_from_openai",
    "messages_to_openai",
]

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = get_args(Role)

#: Key under ``Message.extra`` where the library marks the messages it writes itself
#: (``{"kind": "summary" | "trim_note" | "truncated", ...}``).
MARKER_KEY = "session_migrator"


def _utf8(text: str) -> bytes:
    """UTF-8 bytes of ``text``, lone surrogates included (they occur in decoded binary data)."""
    return text.encode("utf-8", "surrogatepass")


@dataclass(frozen=True, eq=True, slots=True)
class Message:
    """A chat message, neutral to any framework.

    Invariants: ``role`` is one of system, user, assistant, tool; a tool message has a
    ``tool_call_id``; only assistant messages carry ``tool_calls``. ``id`` is stable: stores
    deduplicate by it.

    >>> m = Message("user", "What is the capital of France?")
    >>> m.text
    'What is the capital of France?'
    """

    role: Role
    content: str | tuple[ContentPart, ...] = ""
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    id: str = field(default_factory=new_id)
    extra: Mapping[str, Any] = field(default_factory=dict, compare=True)
    #: when the message was said (timezone-aware; a naive time is taken as UTC); a store records
    #: the time of append where it is ``None``. Not compared, hashed nor sent to a model: recall
    #: reads it to date what it brings back and to answer "what did I ... on 3 March?"
    timestamp: datetime | None = field(default=None, compare=False)
    # memos, not data (slots, not a __dict__ per message: a long session holds many):
    # the fingerprint, and the token counts by counter (see session_migrator.counting._tokens)
    _fingerprint: str | None = field(default=None, init=False, repr=False, compare=False)
    _memo: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise InvalidMessageError(
                f"role must be one of {', '.join(ROLES)}, got {self.role!r}", field="role"
            )
        # lists are accepted at runtime and frozen into tuples
        content: object = self.content
        if isinstance(content, list):
            object.__setattr__(self, "content", tuple(content))
        calls: object = self.tool_calls
        if isinstance(calls, list):
            object.__setattr__(self, "tool_calls", tuple(calls))
        self._check_types()
        check_message_nesting(
            self.id,
            self.extra,
            () if isinstance(self.content, str) else [p.data for p in self.content],
        )
        if self.role == "tool" and not self.tool_call_id:
            raise InvalidMessageError(
                "a tool message needs the tool_call_id of the call it answers",
                field="tool_call_id",
            )
        if self.tool_calls and self.role != "assistant":
            raise InvalidMessageError(
                f"only assistant messages carry tool_calls, not {self.role!r}", field="tool_calls"
            )

    def _check_types(self) -> None:
        content: object = self.content
        if not isinstance(content, str) and not (
            isinstance(content, tuple) and all(isinstance(p, ContentPart) for p in content)
        ):
            raise InvalidMessageError(
                "content must be a string or a list of ContentPart, got "
                f"{type(content).__name__}; use messages_from_openai(...) for OpenAI parts",
                field="content",
            )
        calls: object = self.tool_calls
        if not isinstance(calls, tuple) or not all(isinstance(c, ToolCall) for c in calls):
            raise InvalidMessageError(
                "tool_calls must be a list of ToolCall(id, name, arguments)", field="tool_calls"
            )
        for label in ("name", "tool_call_id"):
            value = getattr(self, label)
            if value is not None and not isinstance(value, str):
                raise InvalidMessageError(
                    f"{label} must be a string or None, got {type(value).__name__}", field=label
                )
        if not isinstance(self.id, str):
            raise InvalidMessageError(
                f"id must be a string, got {type(self.id).__name__}", field="id"
            )
        when: object = self.timestamp
        if when is not None:
            if not isinstance(when, datetime):
                raise InvalidMessageError(
                    f"timestamp must be a datetime or None, got {type(when).__name__}",
                    field="timestamp",
                )
            if when.tzinfo is None:
                object.__setattr__(self, "timestamp", when.replace(tzinfo=UTC))

    def __hash__(self) -> int:
        return hash((self.id, self.fingerprint()))

    @property
    def text(self) -> str:
        """The message's text: the string content, or its text parts joined by newlines."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if p.text)

    @property
    def marker(self) -> Mapping[str, Any] | None:
        """The library's own marker for messages it wrote (summaries, notes), else ``None``."""
        value = self.extra.get(MARKER_KEY)
        return value if isinstance(value, Mapping) else None

    def fingerprint(self) -> str:
        """A digest of everything that affects token counts; memoised on the object."""
        if self._fingerprint is not None:
            return self._fingerprint
        h = hashlib.blake2b(digest_size=16)
        h.update(_utf8(self.role) + b"\x00" + _utf8(self.name or "") + b"\x00")
        if isinstance(self.content, str):
            h.update(_utf8(self.content))
        else:
            for part in self.content:
                h.update(b"\x01" + _utf8(part.type) + b"\x02" + _utf8(part.text or ""))
                if part.type != "text":
                    h.update(_utf8(json.dumps(dict(part.data), sort_keys=True, default=str)))
        for call in self.tool_calls:
            h.update(_utf8(f"\x03{call.id}\x04{call.name}\x04{call.arguments}"))
        h.update(b"\x05" + _utf8(self.tool_call_id or ""))
        digest = h.hexdigest()
        object.__setattr__(self, "_fingerprint", digest)
        return digest

    def replace(self, **changes: Any) -> Message:
        """A copy with ``changes`` applied (the id is kept unless given)."""
        values: dict[str, Any] = {
            "role": self.role,
            "content": self.content,
            "name": self.name,
            "tool_calls": self.tool_calls,
            "tool_call_id": self.tool_call_id,
            "id": self.id,
            "extra": self.extra,
            "timestamp": self.timestamp,
        }
        values.update(changes)
        return Message(**values)

    # -- OpenAI chat format ------------------------------------------------------------------

    @classmethod
    def from_openai(cls, data: Mapping[str, Any], *, index: int | None = None) -> Message:
        """Build a message from an OpenAI chat-completions message dict.

        Unknown keys are kept in ``extra`` and written back by :meth:`to_openai`. Without an
        ``id`` key the id is derived from the content and ``index``, so reading the same file
        twice gives the same ids.
        """
        return _from_openai(data, index)

    def to_openai(self, *, include_id: bool = True) -> dict[str, Any]:
        """The OpenAI chat-completions dict for this message (lossless with ``from_openai``).

        ``include_id=False`` leaves out the ``id`` key and the library's own marker (for sending
        to an API rather than saving).
        """
        out: dict[str, Any] = {"role": self.role}
        if isinstance(self.content, str):
            out["content"] = self.content
        else:
            out["content"] = [_part_to_openai(p) for p in self.content]
        if self.name is not None:
            out["name"] = self.name
        if self.tool_calls:
            # what a call held besides id and function (a provider's extra keys, such as
            # Gemini's thought signature, or a custom tool call) goes back as it came
            kept = self.extra.get("openai_tool_calls")
            more: Mapping[str, Any] = kept if isinstance(kept, Mapping) else {}
            out["tool_calls"] = [_call_to_openai(c, more.get(c.id)) for c in self.tool_calls]
        if out["content"] == "" and self.extra.get("openai_null_content"):
            out["content"] = None
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.extra.get("openai_role") == "developer" and self.role == "system":
            out["role"] = "developer"
        for key, value in self.extra.items():
            if key in _PRIVATE_EXTRA or key in out or (key == MARKER_KEY and not include_id):
                continue
            out[key] = value
        if include_id:
            out["id"] = self.id
        return out


_OPENAI_KEYS = {"role", "content", "name", "tool_calls", "tool_call_id", "id"}
#: Keys under ``Message.extra`` the importers fill from an agent's file: the model that wrote an
#: assistant message, its reasoning summary (a Codex ``reasoning`` summary, a Claude Code
#: ``thinking`` block), and on a tool result the structured result the source agent's tool
#: returned (Claude Code's ``toolUseResult``, a Codex output's ``metadata``, a web search's
#: results) beside its text. Kept in the store; never sent to a model as message keys.
MODEL_KEY = "source_model"
REASONING_KEY = "reasoning"
RESULT_KEY = "source_result"
_PRIVATE_EXTRA = {
    "openai_null_content",
    "openai_role",
    "openai_tool_calls",
    MODEL_KEY,
    REASONING_KEY,
    RESULT_KEY,
}


def _part_from_openai(part: Any, index: int | None) -> ContentPart:
    if isinstance(part, str):
        return ContentPart("text", part, {"type": "text", "text": part})
    if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
        raise InvalidMessageError(
            "each content part must be an object with a string 'type'", index=index, field="content"
        )
    ptype = part["type"]
    if ptype == "text":
        text = part.get("text")
        if not isinstance(text, str):
            raise InvalidMessageError(
                "a text part needs a string 'text'", index=index, field="content"
            )
        return ContentPart("text", text, dict(part))
    if ptype in ("image_url", "input_image", "image"):
        return ContentPart("image", None, dict(part))
    return ContentPart(
        ptype, part.get("text") if isinstance(part.get("text"), str) else None, dict(part)
    )


def _part_to_openai(part: ContentPart) -> dict[str, Any]:
    if part.data:
        return dict(part.data)
    if part.type == "text":
        return {"type": "text", "text": part.text or ""}
    return {"type": part.type}


def _call_to_openai(call: ToolCall, kept: Any) -> dict[str, Any]:
    """The OpenAI dict of ``call``, with what it held besides id and function (see
    ``from_openai``): a custom tool call as it came, other keys beside the function."""
    if isinstance(kept, Mapping) and kept.get("type") == "custom":
        return {"id": call.id, **kept}
    out: dict[str, Any] = {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }
    if isinstance(kept, Mapping):
        for key, value in kept.items():
            if key == "function_extra" and isinstance(value, Mapping):
                out["function"].update(value)
            elif key == "type":
                if value is None:
                    del out["type"]  # (the call came without one)
                else:
                    out["type"] = value
            else:
                out[key] = value
    return out


def _from_openai(data: Mapping[str, Any], index: int | None) -> Message:
    check_openai_nesting(data, index)  # before anything walks it recursively
    if not isinstance(data, Mapping):
        raise InvalidMessageError(
            f"expected an object with 'role' and 'content', got {type(data).__name__}",
            index=index,
        )
    role = data.get("role")
    if role == "developer":
        role = "system"
    if role == "function":
        raise InvalidMessageError(
            "the legacy 'function' role is not supported; use 'tool' with a tool_call_id",
            index=index,
            field="role",
        )
    if role not in ROLES:
        raise InvalidMessageError(
            f"role must be one of {', '.join(ROLES)}, got {role!r}", index=index, field="role"
        )
    raw_content = data.get("content", "")
    content: str | tuple[ContentPart, ...]
    extra: dict[str, Any] = {k: v for k, v in data.items() if k not in _OPENAI_KEYS}
    if data.get("role") == "developer":
        extra["openai_role"] = "developer"
    if raw_content is None:
        content = ""
        if role == "assistant":
            extra["openai_null_content"] = True
        else:
            raise InvalidMessageError(
                "content is null; only an assistant message with tool_calls may omit content",
                index=index,
                field="content",
            )
    elif isinstance(raw_content, str):
        content = raw_content
    elif isinstance(raw_content, list):
        content = tuple(_part_from_openai(p, index) for p in raw_content)
    else:
        raise InvalidMessageError(
            f"content must be a string or a list of parts, got {type(raw_content).__name__}",
            index=index,
            field="content",
        )
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise InvalidMessageError("name must be a string", index=index, field="name")
    calls: list[ToolCall] = []
    raw_calls = data.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise InvalidMessageError("tool_calls must be a list", index=index, field="tool_calls")
    kept: dict[str, Any] = {}
    for c in raw_calls:
        if isinstance(c, Mapping) and c.get("type") == "custom" and isinstance(c.get("id"), str):
            custom = c.get("custom")
            if isinstance(custom, Mapping) and isinstance(custom.get("name"), str):
                payload = custom.get("input", "")
                calls.append(
                    ToolCall(c["id"], custom["name"], payload if isinstance(payload, str) else "")
                )
                kept[c["id"]] = {k: v for k, v in c.items() if k != "id"}
                continue
        fn = c.get("function") if isinstance(c, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(c.get("id"), str):
            raise InvalidMessageError(
                "each tool call needs an 'id' and a 'function' with 'name' and 'arguments'",
                index=index,
                field="tool_calls",
            )
        args = fn.get("arguments", "{}")
        if not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        if not isinstance(fn.get("name"), str):
            raise InvalidMessageError(
                "a tool call's function needs a string 'name'", index=index, field="tool_calls"
            )
        calls.append(ToolCall(c["id"], fn["name"], args))
        others = {k: v for k, v in c.items() if k not in ("id", "function", "type")}
        fn_others = {k: v for k, v in fn.items() if k not in ("name", "arguments")}
        if others or fn_others or c.get("type", "function") != "function":
            kept[c["id"]] = {**others, "type": c.get("type"), "function_extra": fn_others}
    if kept:
        extra["openai_tool_calls"] = kept
    tool_call_id = data.get("tool_call_id")
    if tool_call_id is not None and not isinstance(tool_call_id, str):
        raise InvalidMessageError(
            "tool_call_id must be a string", index=index, field="tool_call_id"
        )
    if role == "tool" and not tool_call_id:
        raise InvalidMessageError(
            "a tool message needs the tool_call_id of the call it answers",
            index=index,
            field="tool_call_id",
        )
    if calls and role != "assistant":
        raise InvalidMessageError(
            f"only assistant messages carry tool_calls, not {role!r}",
            index=index,
            field="tool_calls",
        )
    msg_id = data.get("id")
    if msg_id is not None and not isinstance(msg_id, str):
        raise InvalidMessageError("id must be a string", index=index, field="id")
    return Message(
        role=cast(Role, role),
        content=content,
        name=name,
        tool_calls=tuple(calls),
        tool_call_id=tool_call_id,
        id=msg_id or derived_id(data, index),
        extra=extra,
    )


def messages_from_openai(data: Iterable[Mapping[str, Any]] | Any) -> list[Message]:
    """Parse a list of OpenAI chat messages; errors name the offending index and field."""
    if isinstance(data, Mapping) and isinstance(data.get("messages"), list):
        data = data["messages"]
    if not isinstance(data, list | tuple):
        raise InvalidMessageError(
            "expected a JSON list of messages (or an object with a 'messages' list), "
            f"got {type(data).__name__}"
        )
    return [Message.from_openai(item, index=i) for i, item in enumerate(data)]


def messages_to_openai(
    messages: Iterable[Message], *, include_id: bool = True
) -> list[dict[str, Any]]:
    """The OpenAI chat dicts for ``messages``."""
    return [m.to_openai(include_id=include_id) for m in messages]


@dataclass(frozen=True)
class Session:
    """A conversation: its id, workspace, messages (oldest first) and metadata.

    >>> s = Session("s1", messages=(Message("user", "hi"),))
    >>> len(s.messages)
    1
    """

    id: str
    messages: tuple[Message, ...] = ()
    workspace: str = "default"
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        messages: object = self.messages
        if not isinstance(messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))


def as_messages(value: Session | Sequence[Message]) -> tuple[Message, ...]:
    """The messages of a session or a sequence of messages, as a tuple."""
    if isinstance(value, Session):
        return value.messages
    out = tuple(value)
    for i, m in enumerate(out):
        if not isinstance(m, Message):
            raise InvalidMessageError(
                f"expected a session_migrator.Message, got {type(m).__name__}; "
                "use messages_from_openai(...) for OpenAI dicts",
                index=i,
            )
    return out
