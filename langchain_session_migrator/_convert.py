"""LangChain ``BaseMessage`` <-> core :class:`~session_migrator.Message`, losslessly.

The core message gets the neutral view every part of the library understands (role, content,
name, tool calls, tool call id, id) and ``extra["langchain"]`` keeps only what that view cannot
say, so converting back gives an equal message:

- roles: ``SystemMessage`` -> system, ``HumanMessage`` -> user, ``AIMessage`` -> assistant,
  ``ToolMessage`` -> tool; their chunk classes and ``ChatMessage`` (by its ``role``: user,
  human, assistant, ai, system, developer; any other role becomes user) keep their class name;
- content: a string stays a string; a list becomes content parts (a plain string item is a
  text part without ``data``; a dict item is kept whole as the part's ``data``, with text
  blocks as text parts and ``image``/``image_url``/``input_image`` blocks as image parts, so
  tokens are counted right);
- ``tool_calls`` become core tool calls (``args`` as JSON text); the original list is kept only
  when rebuilding it from the core calls would not give it back (no id, extra keys, ...), and
  it is used again only while the core calls still match it;
- every other field that differs from its default (``additional_kwargs``,
  ``response_metadata``, ``usage_metadata``, ``invalid_tool_calls``, ``artifact``, ``status``,
  chunk fields, pydantic extras, ...) is kept as given (deep-copied);
- a missing ``id`` is remembered as missing, unless the caller assigns one (a store needs ids).

Content and tool calls always come from the core message, so a message the core cut down
(a truncated tool output) converts back cut down, with its LangChain fields intact. The
library's own messages (a summary of the cut part, a note on what was left out) become
``SystemMessage`` objects whose ``response_metadata["session_migrator"]`` says what they are.
Keys of ``extra`` that another framework or format wrote go into ``additional_kwargs``.

Nothing given is mutated: every nested value is copied on the way in and on the way out.

>>> from langchain_core.messages import AIMessage
>>> ai = AIMessage("", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}], id="a1")
>>> core = message_to_core(ai)
>>> core.role, core.tool_calls[0].arguments
('assistant', '{"x": 1}')
>>> message_from_core(core) == ai
True
"""

from __future__ import annotations

import copy
import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, cast

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    ChatMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
)
from pydantic_core import PydanticUndefined, to_jsonable_python

from langchain_session_migrator._convert_parts import (
    _calls_from_core,
    _content_from_core,
    _content_to_core,
    _core_call,
    _json_text,
    _lc_call,
)
from session_migrator import (
    MARKER_KEY,
    ContentPart,
    InvalidMessageError,
    Message,
    Role,
    ToolCall,
    check_nesting,
)

__all__ = [
    "LANGCHAIN_KEY",
    "message_from_core",
    "message_to_core",
    "messages_from_core",
    "messages_to_core",
    "storable",
]

#: Key under ``Message.extra`` that holds what only LangChain knows about a message.
LANGCHAIN_KEY = "langchain"

_CLASSES: dict[str, type[BaseMessage]] = {
    "system": SystemMessage,
    "human": HumanMessage,
    "ai": AIMessage,
    "tool": ToolMessage,
    "chat": ChatMessage,
    "SystemMessageChunk": SystemMessageChunk,
    "HumanMessageChunk": HumanMessageChunk,
    "AIMessageChunk": AIMessageChunk,
    "ToolMessageChunk": ToolMessageChunk,
    "ChatMessageChunk": ChatMessageChunk,
}
_ROLE_OF_TYPE: dict[str, Role] = {
    "system": "system",
    "human": "user",
    "ai": "assistant",
    "tool": "tool",
    "SystemMessageChunk": "system",
    "HumanMessageChunk": "user",
    "AIMessageChunk": "assistant",
    "ToolMessageChunk": "tool",
}
_CANONICAL_TYPE: dict[str, str] = {
    "system": "system",
    "user": "human",
    "assistant": "ai",
    "tool": "tool",
}
_CHAT_ROLES: dict[str, Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "developer": "system",
}
#: Fields carried by the neutral view (or by the class itself), never copied into the residue.
_NEUTRAL_FIELDS = frozenset({"content", "type", "name", "id", "tool_calls", "tool_call_id"})
#: ``extra`` keys the core keeps for its own OpenAI round trip; not LangChain payload.
_CORE_PRIVATE = frozenset({"openai_null_content", "openai_role"})


# -- LangChain -> core ---------------------------------------------------------------------------


def message_to_core(message: BaseMessage, *, id: str | None = None) -> Message:
    """The core message for ``message`` (see the module docstring for the mapping).

    ``id`` is used when ``message.id`` is ``None`` and then becomes the message's id (it is not
    remembered as missing); without it a missing id is remembered and a random core id is used.
    Raises :class:`~session_migrator.InvalidMessageError` for message types the core cannot hold
    (the legacy ``FunctionMessage``, ``RemoveMessage``).
    """
    role = _role_of(message)
    for field_name in type(message).model_fields:  # before anything copies it recursively
        check_nesting(getattr(message, field_name), field=field_name, message_id=message.id)
    if message.model_extra:
        check_nesting(message.model_extra, field="model_extra", message_id=message.id)
    residue: dict[str, Any] = {}
    if message.type != _CANONICAL_TYPE[role]:
        residue["type"] = message.type
    for field_name, info in type(message).model_fields.items():
        if field_name in _NEUTRAL_FIELDS:
            continue
        value = getattr(message, field_name)
        if _is_default(info, value):
            continue
        residue[field_name] = copy.deepcopy(value)
    if message.model_extra:
        residue["model_extra"] = copy.deepcopy(dict(message.model_extra))

    extra: dict[str, Any] = {}
    metadata = residue.get("response_metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get(MARKER_KEY), Mapping):
        extra[MARKER_KEY] = metadata.pop(MARKER_KEY)
        if not metadata:
            del residue["response_metadata"]

    calls: tuple[ToolCall, ...] = ()
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = tuple(_core_call(call) for call in message.tool_calls)
        if [_lc_call(call) for call in calls] != message.tool_calls:
            residue["tool_calls"] = copy.deepcopy(message.tool_calls)

    message_id = message.id
    if message_id is None:
        if id is None:
            residue["id"] = None
            message_id = uuid.uuid4().hex
        else:
            message_id = id
    if residue:
        extra[LANGCHAIN_KEY] = residue
    tool_call_id = message.tool_call_id if isinstance(message, ToolMessage) else None
    try:
        return Message(
            role=role,
            content=_content_to_core(message.content),
            name=message.name,
            tool_calls=calls,
            tool_call_id=tool_call_id,
            id=message_id,
            extra=extra,
        )
    except InvalidMessageError:
        raise
    except (TypeError, ValueError) as exc:  # pragma: no cover - guarded by LangChain's validation
        raise InvalidMessageError(f"cannot convert {type(message).__name__}: {exc}") from exc


def messages_to_core(messages: Iterable[BaseMessage], *, assign_ids: bool = False) -> list[Message]:
    """:func:`message_to_core` for each message.

    A message without an id gets one derived from its position and content, so converting the
    same list twice gives the same ids. With ``assign_ids`` that id becomes the message's own;
    otherwise it is remembered as missing (converting back gives ``id=None``).
    """
    out: list[Message] = []
    for index, message in enumerate(messages):
        if message.id is None:
            derived = _derived_id(message, index)
            converted = message_to_core(message, id=derived)
            if not assign_ids:
                residue = dict(converted.extra.get(LANGCHAIN_KEY) or {})
                residue["id"] = None
                converted = converted.replace(extra={**converted.extra, LANGCHAIN_KEY: residue})
            out.append(converted)
        else:
            out.append(message_to_core(message))
    return out


def _role_of(message: BaseMessage) -> Role:
    role = _ROLE_OF_TYPE.get(message.type)
    if role is not None:
        return role
    if isinstance(message, ChatMessage):
        return _CHAT_ROLES.get(message.role.lower(), "user")
    raise InvalidMessageError(
        f"{type(message).__name__} (type {message.type!r}) cannot be stored: use SystemMessage, "
        "HumanMessage, AIMessage (with tool_calls), ToolMessage or ChatMessage",
        field="type",
    )


def _is_default(info: Any, value: Any) -> bool:
    if info.default_factory is not None:
        try:
            return bool(value == info.default_factory())
        except TypeError:  # a factory that needs the validated data
            return False
    if info.default is PydanticUndefined:
        return False
    return bool(value == info.default)


def _derived_id(message: BaseMessage, index: int) -> str:
    blob = _json_text([message.type, message.content, message.name])
    digest = hashlib.blake2b(blob.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return f"lc{index:06d}-{digest}"


# -- core -> LangChain ---------------------------------------------------------------------------


def message_from_core(message: Message) -> BaseMessage:
    """The LangChain message for a core message (the inverse of :func:`message_to_core`).

    A message another framework wrote converts to the closest LangChain message: its foreign
    ``extra`` keys go into ``additional_kwargs``.
    """
    raw = message.extra.get(LANGCHAIN_KEY)
    residue: dict[str, Any] = copy.deepcopy(dict(raw)) if isinstance(raw, Mapping) else {}
    cls = _class_for(message.role, residue.pop("type", None), residue.get("role"))
    kwargs: dict[str, Any] = {"content": _content_from_core(message.content)}
    if message.name is not None:
        kwargs["name"] = message.name
    kwargs["id"] = None if ("id" in residue and residue.pop("id") is None) else message.id
    stored_calls = residue.pop("tool_calls", None)
    model_extra = residue.pop("model_extra", None)
    fields = cls.model_fields
    for key, value in residue.items():
        if key in fields and key not in _NEUTRAL_FIELDS:
            kwargs[key] = value
    if isinstance(model_extra, Mapping):
        for key, value in model_extra.items():
            kwargs.setdefault(str(key), value)
    if issubclass(cls, AIMessage):
        kwargs["tool_calls"] = _calls_from_core(message.tool_calls, stored_calls)
    if issubclass(cls, ToolMessage):
        kwargs["tool_call_id"] = message.tool_call_id or ""
    if issubclass(cls, ChatMessage) and "role" not in kwargs:
        kwargs["role"] = message.role
    foreign = {
        key: copy.deepcopy(value)
        for key, value in message.extra.items()
        if key not in (LANGCHAIN_KEY, MARKER_KEY) and key not in _CORE_PRIVATE
    }
    if foreign:
        kwargs["additional_kwargs"] = {**foreign, **kwargs.get("additional_kwargs", {})}
    marker = message.extra.get(MARKER_KEY)
    if isinstance(marker, Mapping):
        kwargs["response_metadata"] = {
            **kwargs.get("response_metadata", {}),
            MARKER_KEY: copy.deepcopy(dict(marker)),
        }
    return cls(**kwargs)


def messages_from_core(messages: Iterable[Message]) -> list[BaseMessage]:
    """:func:`message_from_core` for each message."""
    return [message_from_core(m) for m in messages]


def _class_for(role: str, lc_type: Any, chat_role: Any) -> type[BaseMessage]:
    canonical = _CLASSES[_CANONICAL_TYPE[role]]
    if not isinstance(lc_type, str) or lc_type not in _CLASSES:
        return canonical
    cls = _CLASSES[lc_type]
    if lc_type in ("chat", "ChatMessageChunk"):
        expected = _CHAT_ROLES.get(str(chat_role).lower(), "user")
    else:
        expected = _ROLE_OF_TYPE[lc_type]
    return cls if expected == role else canonical


# -- storage -------------------------------------------------------------------------------------


def storable(message: Message) -> Message:
    """``message`` with ``extra`` and content part data made plain JSON, as stores require.

    Values that are already JSON are left as they are (the same object is returned when nothing
    needs changing); anything else becomes its JSON form (``pydantic_core.to_jsonable_python``:
    pydantic models as dicts, datetimes as ISO text, bytes as text, other objects as ``repr``).
    """
    extra_ok = _is_json(message.extra)
    parts_ok = isinstance(message.content, str) or all(_is_json(p.data) for p in message.content)
    if extra_ok and parts_ok:
        return message
    changes: dict[str, Any] = {}
    if not extra_ok:
        changes["extra"] = _jsonable(message.extra)
    if not parts_ok:
        assert not isinstance(message.content, str)
        changes["content"] = tuple(
            ContentPart(p.type, p.text, cast(dict[str, Any], _jsonable(p.data)))
            for p in message.content
        )
    return message.replace(**changes)


def _is_json(value: Mapping[str, Any]) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return _string_keys(value)


def _string_keys(value: Any) -> bool:
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _string_keys(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_string_keys(v) for v in value)
    return True


def _jsonable(value: Any) -> Any:
    plain = to_jsonable_python(value, fallback=repr, bytes_mode="base64")
    return _stringify_keys(plain)


def _stringify_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _stringify_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stringify_keys(v) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return repr(value)
    return value
