"""LlamaIndex ``ChatMessage`` <-> core :class:`~session_migrator.Message`, losslessly.

The core message gets a neutral view every framework understands, and ``extra["llamaindex"]``
keeps only what that view cannot say, so that converting back gives an equal ``ChatMessage``:

- roles: system, user, assistant and tool map one to one; ``developer`` is stored as system,
  ``chatbot`` and ``model`` as assistant, ``function`` as tool (the original role is kept);
- blocks: a single text block becomes string content; several blocks become content parts
  (text as text parts, images as OpenAI ``image_url`` parts, thinking as ``thinking`` parts,
  every other block type opaque with its LlamaIndex dump); ``ToolCallBlock`` becomes a
  :class:`~session_migrator.ToolCall` (so tool pairing is seen by the core);
- ``additional_kwargs``: OpenAI-style ``tool_calls`` become tool calls too (the original list is
  kept), ``tool_call_id`` of a tool message and a string ``name`` become the core fields; every
  other key is kept as a JSON value;
- when the blocks are not exactly what the neutral view rebuilds by default (the order of text
  and tool calls, a block's extra fields, no block at all), a compact layout of the blocks is
  kept, guarded by the neutral view's fingerprint: if another framework changed the message,
  the neutral view wins.

Round trip: ``to_chat_message(from_chat_message(m)) == m`` for every ``ChatMessage`` whose
``additional_kwargs`` hold JSON values (pydantic objects come back as their JSON dicts).
A core message written by another framework converts to the closest ``ChatMessage``: its
framework-specific ``extra`` is not sent to the LLM (it stays in the store).

>>> from llama_index.core.llms import ChatMessage
>>> m = from_chat_message(ChatMessage(role="user", content="hello"), id="m1")
>>> (m.role, m.content, m.id)
('user', 'hello', 'm1')
>>> to_chat_message(m) == ChatMessage(role="user", content="hello")
True
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, cast

from llama_index.core.base.llms.types import (
    AudioBlock,
    ChatMessage,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from session_migrator import ContentPart, Message, ToolCall, check_nesting

__all__ = [
    "LLAMAINDEX_KEY",
    "from_chat_message",
    "from_chat_messages",
    "to_chat_message",
    "to_chat_messages",
]

#: Key under ``Message.extra`` holding what the neutral view cannot say.
LLAMAINDEX_KEY = "llamaindex"

_ROLE_TO_CORE: Mapping[str, str] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "chatbot": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
}
_BLOCK_ADAPTER: TypeAdapter[Any] = TypeAdapter(ContentBlock)
# block fields holding inline binary data that an image part already carries
_IMAGE_IN_PART = "$image_in_part"


def _jsonable(value: Any) -> Any:
    return to_jsonable_python(value, fallback=repr, bytes_mode="base64")


def _stable_call_id(seed: str, index: int) -> str:
    digest = hashlib.blake2b(f"{seed}\x00{index}".encode(), digest_size=8).hexdigest()
    return f"li-call-{digest}"


# -- ChatMessage -> Message ----------------------------------------------------------------------


def _image_part(block: ImageBlock) -> tuple[ContentPart, dict[str, Any] | None]:
    """The OpenAI-style part of an image, and its dump when the part alone cannot rebuild it."""
    dump = cast(dict[str, Any], _jsonable(block.model_dump(mode="json")))
    url: str | None = None
    if block.url is not None:
        url = str(block.url)
    elif isinstance(block.image, bytes) and block.image and block.image_mimetype:
        url = f"data:{block.image_mimetype};base64,{block.image.decode('ascii')}"
        dump["image"] = None
        dump[_IMAGE_IN_PART] = True
    data: dict[str, Any]
    if url is not None:
        inner: dict[str, Any] = {"url": url}
        if block.detail is not None:
            inner["detail"] = block.detail
        data = {"type": "image_url", "image_url": inner}
    else:
        data = {"type": "image", **dump}
    return ContentPart("image", None, data), dump


def _block_to_part(block: Any) -> tuple[ContentPart, dict[str, Any] | None]:
    if isinstance(block, TextBlock):
        return ContentPart("text", block.text, {"type": "text", "text": block.text}), None
    if isinstance(block, ImageBlock):
        return _image_part(block)
    dump = cast(dict[str, Any], _jsonable(block.model_dump(mode="json")))
    if isinstance(block, ThinkingBlock):
        return ContentPart(
            "thinking", None, {"type": "thinking", "thinking": block.content or ""}
        ), dump
    kind = str(getattr(block, "block_type", type(block).__name__))
    return ContentPart(kind, None, {"type": kind, **dump}), None  # the part holds it all


def _call_from_block(
    block: ToolCallBlock, seed: str, index: int
) -> tuple[ToolCall, dict[str, Any]]:
    opts: dict[str, Any] = {}
    call_id = block.tool_call_id
    if call_id is None:
        call_id = _stable_call_id(seed, index)
        opts["no_id"] = True
    if isinstance(block.tool_kwargs, str):
        arguments = block.tool_kwargs
        opts["raw"] = True
    else:
        arguments = json.dumps(_jsonable(block.tool_kwargs), ensure_ascii=False)
    return ToolCall(call_id, block.tool_name, arguments), opts


def _calls_from_kwargs(raw: Any) -> list[ToolCall]:
    """Tool calls from an OpenAI-style ``additional_kwargs["tool_calls"]`` (dicts or objects)."""
    calls: list[ToolCall] = []
    if not isinstance(raw, list | tuple):
        return calls
    for item in raw:
        data = _jsonable(item)
        if not isinstance(data, Mapping):
            continue
        fn = data.get("function")
        if not isinstance(fn, Mapping) or not isinstance(data.get("id"), str):
            continue
        name = fn.get("name")
        if not isinstance(name, str):
            continue
        args = fn.get("arguments", "{}")
        if not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        calls.append(ToolCall(data["id"], name, args))
    return calls


def from_chat_message(message: ChatMessage, *, id: str | None = None) -> Message:
    """The core message for ``message`` (see the module docstring); ``id`` defaults to a new one.

    A tool message without a ``tool_call_id`` gets a derived one (marked, so it is not written
    back); its pairing cannot be checked.
    """
    role_value = MessageRole(message.role).value
    core_role = _ROLE_TO_CORE.get(role_value)
    li: dict[str, Any] = {}
    if core_role is None:
        core_role = "user"
        li["role"] = role_value
    elif core_role != role_value:
        li["role"] = role_value
    msg_id = id if id is not None else uuid.uuid4().hex
    # before anything serialises it recursively
    check_nesting(message.additional_kwargs, field="additional_kwargs", message_id=msg_id)
    for i, block in enumerate(message.blocks):
        check_nesting(vars(block), field=f"blocks[{i}]", message_id=msg_id)

    kwargs = dict(message.additional_kwargs)
    rest: dict[str, Any] = {}
    name: str | None = None
    tool_call_id: str | None = None
    kw_calls: list[ToolCall] = []
    for key, value in kwargs.items():
        if key == "name" and isinstance(value, str):
            name = value
        elif key == "tool_call_id" and core_role == "tool" and isinstance(value, str) and value:
            tool_call_id = value
        elif key == "tool_calls" and core_role == "assistant":
            kw_calls = _calls_from_kwargs(value)
            rest[key] = _jsonable(value)
        else:
            rest[key] = _jsonable(value)
    if core_role == "tool" and tool_call_id is None:
        tool_call_id = _stable_call_id(msg_id, -1)
        li["no_call_id"] = True

    parts: list[ContentPart] = []
    calls: list[ToolCall] = []
    layout: list[Any] = []
    for index, block in enumerate(message.blocks):
        if isinstance(block, ToolCallBlock):
            call, opts = _call_from_block(block, msg_id, index)
            calls.append(call)
            layout.append({"c": opts} if opts else "c")
            continue
        part, dump = _block_to_part(block)
        parts.append(part)
        if part.type == "text":
            layout.append("t")
        else:
            layout.append({"p": dump} if dump is not None else "o")
    if core_role == "assistant":
        seen = {c.id for c in calls}
        calls.extend(c for c in kw_calls if c.id not in seen)
    elif calls:
        # only assistant messages carry tool calls in the core: keep them in the layout
        li["calls"] = [[c.id, c.name, c.arguments] for c in calls]
        calls = []

    content: str | tuple[ContentPart, ...]
    if len(parts) == 1 and parts[0].type == "text":
        content = parts[0].text or ""
    elif not parts:
        content = ""
    else:
        content = tuple(parts)
    if rest:
        li["kwargs"] = rest

    neutral = Message(
        role=core_role,  # type: ignore[arg-type]
        content=content,
        name=name,
        tool_calls=tuple(calls),
        tool_call_id=tool_call_id,
        id=msg_id,
    )
    if _default_blocks(neutral) != list(message.blocks) or "calls" in li:
        li["blocks"] = layout
        li["fp"] = neutral.fingerprint()
    if not li:
        return neutral
    return neutral.replace(extra={LLAMAINDEX_KEY: li})


def from_chat_messages(messages: Sequence[ChatMessage]) -> list[Message]:
    """:func:`from_chat_message` for each message (new ids)."""
    return [from_chat_message(m) for m in messages]


# -- Message -> ChatMessage ----------------------------------------------------------------------


def _arguments(arguments: str) -> dict[str, Any] | str:
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return value if isinstance(value, dict) else arguments


def _part_to_block(part: ContentPart) -> Any | None:
    data = part.data
    if part.type == "text":
        return TextBlock(text=part.text or "")
    if part.type == "image":
        image = data.get("image_url")
        if isinstance(image, Mapping) and isinstance(image.get("url"), str):
            detail = image.get("detail")
            return ImageBlock(url=image["url"], detail=detail if isinstance(detail, str) else None)
        if isinstance(image, str):
            return ImageBlock(url=image)
    media = _media_block(part.type, data)
    if media is not None:
        return media
    if part.type == "thinking":
        thinking = data.get("thinking")
        return ThinkingBlock(content=thinking if isinstance(thinking, str) else part.text)
    if "block_type" in data:
        try:
            return _BLOCK_ADAPTER.validate_python({k: v for k, v in data.items() if k != "type"})
        except ValidationError:
            pass
    if part.text:
        return TextBlock(text=part.text)
    return None  # an opaque part of another framework: LlamaIndex has no block for it


def _source(data: Mapping[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(base64 data, url, mime type) of a LangChain standard content block (v1: ``base64`` /
    ``url`` / ``mime_type``; v0: ``source_type`` with ``data`` or ``url``)."""
    mime = data.get("mime_type") if isinstance(data.get("mime_type"), str) else None
    b64, url = data.get("base64"), data.get("url")
    if data.get("source_type") == "base64":
        b64 = data.get("data")
    elif data.get("source_type") == "url":
        url = data.get("url")
    return (
        b64 if isinstance(b64, str) else None,
        url if isinstance(url, str) else None,
        mime,
    )


def _media_block(kind: str, data: Mapping[str, Any]) -> Any | None:
    """The LlamaIndex block of another framework's image, audio or file part (LangChain's
    standard blocks, OpenAI's ``input_audio`` and ``file`` parts); ``None`` for anything else.
    """
    if kind == "input_audio" and isinstance(data.get("input_audio"), Mapping):
        audio = data["input_audio"]
        if isinstance(audio.get("data"), str):
            fmt = audio.get("format")
            return AudioBlock(
                audio=audio["data"].encode(), format=fmt if isinstance(fmt, str) else None
            )
    if kind == "file" and isinstance(data.get("file"), Mapping):  # OpenAI's file part
        file = data["file"]
        url = file.get("file_data")
        if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
            header, b64 = url[5:].split(";base64,", 1)
            title = file.get("filename")
            return DocumentBlock(
                data=b64.encode(),
                document_mimetype=header or None,
                title=title if isinstance(title, str) else None,
            )
        return None
    if kind not in ("image", "audio", "file") or "block_type" in data:
        return None
    encoded, link, mime = _source(data)
    if encoded is None and link is None:
        return None
    payload = encoded.encode() if encoded is not None else None
    if kind == "image":
        return ImageBlock(image=payload, url=link, image_mimetype=mime)
    if kind == "audio":
        fmt = mime.split("/", 1)[1] if mime and "/" in mime else None
        return AudioBlock(audio=payload, url=link, format=fmt)
    name = data.get("filename")
    title = name if isinstance(name, str) else None
    return DocumentBlock(data=payload, url=link, document_mimetype=mime, title=title)


def _default_blocks(message: Message) -> list[Any]:
    blocks: list[Any] = []
    if isinstance(message.content, str):
        if message.content or not message.tool_calls:
            blocks.append(TextBlock(text=message.content))
    else:
        for part in message.content:
            block = _part_to_block(part)
            if block is not None:
                blocks.append(block)
    blocks.extend(
        ToolCallBlock(tool_call_id=c.id, tool_name=c.name, tool_kwargs=_arguments(c.arguments))
        for c in message.tool_calls
    )
    return blocks


def _restore_dump(dump: Mapping[str, Any], part: ContentPart) -> Any:
    data = dict(dump)
    if data.pop(_IMAGE_IN_PART, False):
        image = part.data.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else None
        if isinstance(url, str) and ";base64," in url:
            data["image"] = url.split(";base64,", 1)[1]
    return _BLOCK_ADAPTER.validate_python(data)


def _layout_blocks(message: Message, li: Mapping[str, Any]) -> list[Any] | None:
    """The blocks from the kept layout, or ``None`` when the layout no longer fits."""
    layout = li.get("blocks")
    if not isinstance(layout, list) or li.get("fp") != message.fingerprint():
        return None
    parts: Sequence[ContentPart]
    if isinstance(message.content, str):
        text = ContentPart("text", message.content)
        parts = [text] if any(entry == "t" for entry in layout) else []
    else:
        parts = message.content
    stored_calls = li.get("calls")
    calls: list[ToolCall] = (
        [ToolCall(c[0], c[1], c[2]) for c in stored_calls]
        if isinstance(stored_calls, list)
        else list(message.tool_calls)
    )
    blocks: list[Any] = []
    p = c = 0
    try:
        for entry in layout:
            if entry == "c" or (isinstance(entry, Mapping) and "c" in entry):
                opts = entry["c"] if isinstance(entry, Mapping) else {}
                call = calls[c]
                c += 1
                blocks.append(
                    ToolCallBlock(
                        tool_call_id=None if opts.get("no_id") else call.id,
                        tool_name=call.name,
                        tool_kwargs=call.arguments
                        if opts.get("raw")
                        else _arguments(call.arguments),
                    )
                )
            elif entry == "t":
                blocks.append(TextBlock(text=parts[p].text or ""))
                p += 1
            elif isinstance(entry, Mapping) and "p" in entry:
                blocks.append(_restore_dump(entry["p"], parts[p]))
                p += 1
            elif entry == "o":
                data = {k: v for k, v in parts[p].data.items() if k != "type"}
                blocks.append(_BLOCK_ADAPTER.validate_python(data))
                p += 1
            else:
                return None
    except (IndexError, KeyError, TypeError, ValidationError):
        return None
    return blocks


def to_chat_message(message: Message) -> ChatMessage:
    """The LlamaIndex message for ``message`` (see the module docstring)."""
    raw = message.extra.get(LLAMAINDEX_KEY)
    li: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    role = li.get("role") if isinstance(li.get("role"), str) else message.role
    blocks = _layout_blocks(message, li) if "blocks" in li else None
    if blocks is None:
        blocks = _default_blocks(message)
    kwargs: dict[str, Any] = {}
    stored = li.get("kwargs")
    if isinstance(stored, Mapping):
        kwargs.update(stored)
    if message.tool_call_id is not None and not li.get("no_call_id"):
        kwargs["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        kwargs["name"] = message.name
    try:
        msg_role = MessageRole(role)
    except ValueError:
        msg_role = MessageRole(message.role)
    return ChatMessage(role=msg_role, blocks=blocks, additional_kwargs=kwargs)


def to_chat_messages(messages: Sequence[Message]) -> list[ChatMessage]:
    """:func:`to_chat_message` for each message."""
    return [to_chat_message(m) for m in messages]
