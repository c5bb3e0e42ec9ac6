"""The parts of a LangChain message the conversion carries one by one: content and tool calls.

It owns the content mapping both ways (a string stays a string; list items become core content
parts, text blocks as text parts, ``image``/``image_url``/``input_image`` blocks as image parts,
each dict kept whole as the part's ``data``; back, a part's data is the block again and a
LlamaIndex audio or document block becomes LangChain's standard block) and the tool call mapping
both ways (``args`` as JSON text, the original list given back while the core calls still match
it). :mod:`langchain_session_migrator._convert` builds whole messages from these parts.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_core import to_jsonable_python

from session_migrator import ContentPart, ToolCall

_IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})


# -- LangChain -> core ---------------------------------------------------------------------------


def _content_to_core(content: Any) -> str | tuple[ContentPart, ...]:
    if isinstance(content, str):
        return content
    parts: list[ContentPart] = []
    for item in content:
        if isinstance(item, str):
            parts.append(ContentPart("text", item))
        elif isinstance(item, Mapping):
            parts.append(_block_to_part(item))
        else:  # pragma: no cover - LangChain validates content as str | list[str | dict]
            parts.append(ContentPart("text", str(item)))
    return tuple(parts)


def _block_to_part(block: Mapping[Any, Any]) -> ContentPart:
    data = copy.deepcopy(dict(block))
    kind = block.get("type")
    text = block.get("text")
    if not isinstance(kind, str):
        return ContentPart("", text if isinstance(text, str) else None, data)
    if kind in _IMAGE_TYPES:
        return ContentPart("image", None, data)
    return ContentPart(kind, text if isinstance(text, str) else None, data)


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return json.dumps(to_jsonable_python(value, fallback=repr), ensure_ascii=False)


def _core_call(call: Mapping[str, Any]) -> ToolCall:
    return ToolCall(
        call.get("id") or "", str(call.get("name") or ""), _json_text(call.get("args", {}))
    )


def _lc_call(call: ToolCall) -> dict[str, Any]:
    try:
        args = json.loads(call.arguments) if call.arguments else {}
    except ValueError:
        args = {"session_migrator_raw_arguments": call.arguments}
    if not isinstance(args, dict):
        args = {"session_migrator_raw_arguments": call.arguments}
    return {"name": call.name, "args": args, "id": call.id or None, "type": "tool_call"}


# -- core -> LangChain ---------------------------------------------------------------------------


def _content_from_core(content: str | tuple[ContentPart, ...]) -> str | list[str | dict[Any, Any]]:
    if isinstance(content, str):
        return content
    out: list[str | dict[Any, Any]] = []
    for part in content:
        if "block_type" in part.data:  # a LlamaIndex block, as that adapter stores it
            translated = _from_llamaindex(part.data)
            if translated is not None:
                out.append(translated)
                continue
        if part.data:
            block = copy.deepcopy(dict(part.data))
            if part.type == "text" and part.text is not None and block.get("text") != part.text:
                block["text"] = part.text
            out.append(block)
        elif part.type == "text":
            out.append(part.text or "")
        elif part.type == "":
            out.append({})
        else:
            block = {"type": part.type}
            if part.text is not None:
                block["text"] = part.text
            out.append(block)
    return out


def _from_llamaindex(dump: Mapping[str, Any]) -> dict[str, Any] | None:
    """LangChain's standard block for a LlamaIndex audio or document block (its JSON dump:
    base64 data or a url); ``None`` for another block (kept as it was stored)."""
    kind = dump.get("block_type")
    if kind == "audio":
        data, fmt = dump.get("audio"), dump.get("format")
        mime = {"mime_type": f"audio/{fmt}"} if isinstance(fmt, str) and fmt else {}
    elif kind == "document":
        data, doc_mime = dump.get("data"), dump.get("document_mimetype")
        mime = {"mime_type": doc_mime} if isinstance(doc_mime, str) and doc_mime else {}
        if isinstance(dump.get("title"), str):
            mime["filename"] = dump["title"]
    else:
        return None
    url = dump.get("url")
    if isinstance(data, str) and data:
        return {"type": "audio" if kind == "audio" else "file", "base64": data, **mime}
    if isinstance(url, str) and url:
        return {"type": "audio" if kind == "audio" else "file", "url": url, **mime}
    return None


def _calls_from_core(calls: Sequence[ToolCall], stored: Any) -> list[Any]:
    if isinstance(stored, list) and len(stored) == len(calls):
        try:
            if [_core_call(c) for c in stored] == list(calls):
                return stored
        except (AttributeError, TypeError):
            pass
    return [_lc_call(call) for call in calls]


#: Anthropic's prompt-cache breakpoint (https://docs.claude.com/en/docs/build-with-claude/prompt-caching)
CACHE_CONTROL = {"type": "ephemeral"}


def with_cache_breakpoint(messages: list[Any], through: str | None) -> list[Any]:
    """``messages`` with an Anthropic ``cache_control`` breakpoint on the last content block of
    the message whose id is ``through`` (the end of what the next request sends again, see
    ``MigrationReport.stable_through``): a copy of that message, the others as they are. A
    message whose content holds no text block, or an id not found, leaves them as they are."""
    if through is None:
        return messages
    at = next((k for k in range(len(messages) - 1, -1, -1) if messages[k].id == through), None)
    return messages if at is None else cache_breakpoint_at(messages, at)


def cache_breakpoint_at(messages: list[Any], at: int) -> list[Any]:
    """``messages`` with the breakpoint on message ``at`` (see :func:`with_cache_breakpoint`)."""
    message = messages[at]
    content = message.content
    blocks: list[Any] = (
        [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    )
    if not blocks or not isinstance(blocks[-1], dict) or blocks[-1].get("type") != "text":
        return messages
    if isinstance(content, str) and not content:
        return messages  # (an empty text block is refused)
    blocks[-1] = {**blocks[-1], "cache_control": dict(CACHE_CONTROL)}
    return [*messages[:at], message.model_copy(update={"content": blocks}), *messages[at + 1 :]]
