"""The one serialisation every backend uses, so the backends cannot drift.

- Messages to and from a JSON-able dict (every field of :class:`Message`, including ``extra``
  and the ``data`` of content parts) and to and from compact JSON text.
- Ids (session, workspace, user, message) to and from a *key*: the same text with backslash,
  NUL and lone surrogates escaped, so that every string can be bound as a SQL or Redis value
  (PostgreSQL rejects NUL, UTF-8 rejects lone surrogates). The mapping is one-to-one, and ids
  without those characters are stored as they are.

Round trip: ``message_from_dict(message_to_dict(m)) == m`` for any message whose ``extra`` and
part ``data`` are JSON values (tuples come back as lists; mapping keys must be strings).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

from session_migrator._errors import StoreError
from session_migrator.messages._messages import ContentPart, Message, Role, ToolCall

__all__ = [
    "INDEX_KEY_BYTES",
    "decode_key",
    "dumps",
    "encode_key",
    "index_key",
    "key_digest",
    "loads",
    "message_from_dict",
    "message_from_json",
    "message_to_dict",
    "message_to_json",
]

#: Version tag of the dict layout, written as ``"v"``.
CODEC_VERSION = 1

_ESCAPE = re.compile("[\\\\\x00\ud800-\udfff]")
_UNESCAPE = re.compile(r"\\(\\|0|u[0-9a-f]{4})")


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group(0)
    if ch == "\\":
        return "\\\\"
    if ch == "\x00":
        return "\\0"
    return f"\\u{ord(ch):04x}"


def _unescape_char(match: re.Match[str]) -> str:
    code = match.group(1)
    if code == "\\":
        return "\\"
    if code == "0":
        return "\x00"
    return chr(int(code[1:], 16))


def encode_key(value: str) -> str:
    """The storable form of an id: backslash, NUL and lone surrogates escaped."""
    return _ESCAPE.sub(_escape_char, value)


def decode_key(value: str) -> str:
    """The id back from :func:`encode_key`."""
    return _UNESCAPE.sub(_unescape_char, value) if "\\" in value else value


#: Longest key (UTF-8 bytes) :func:`index_key` keeps as it is (PostgreSQL b-tree entries must
#: stay under about 2,700 bytes, and some indexes hold two ids).
INDEX_KEY_BYTES = 800


def index_key(value: str) -> str:
    """:func:`encode_key`, bounded for an index: a long key becomes a prefix and a SHA-256.

    Returns the key unchanged when it fits :data:`INDEX_KEY_BYTES`; otherwise the key of the
    id's first 100 characters, then ``\\~`` and the SHA-256 of the id. A backslash that starts
    an escape is never followed by ``~`` in :func:`encode_key`'s output, so a bounded key can
    never equal the key of another id. The id cannot be read back from a bounded key: a store
    keeps the full key beside it.
    """
    key = encode_key(value)
    if len(key) * 4 <= INDEX_KEY_BYTES or len(key.encode("utf-8")) <= INDEX_KEY_BYTES:
        return key
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{encode_key(value[:100])}\\~{digest}"


def key_digest(value: str) -> str:
    """A fixed-length hex digest of an id, for key names (never a path or a query)."""
    data = value.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def dumps(value: Any) -> str:
    """Compact JSON that is always valid UTF-8 (lone surrogates are written as escapes)."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise StoreError(
            f"cannot store a value that is not plain JSON ({exc}); keep only JSON values "
            "(str, int, float, bool, None, lists, dicts with string keys) in metadata and extra"
        ) from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text


def loads(text: str | bytes) -> Any:
    """The value back from :func:`dumps`."""
    return json.loads(text)


def loads_metadata(text: str | bytes) -> Any:
    """A session's metadata back from its JSON, a new object each call. A listing reads the
    same few texts over and over (every session of a user has ``{"user_id": ...}``): an
    object of plain values (strings, numbers, booleans, null) is parsed once per distinct text
    and copied; anything nested is parsed each time (a copy could share it)."""
    plain = _plain_object(text)
    return dict(plain) if plain is not None else json.loads(text)


@functools.lru_cache(maxsize=4096)
def _plain_object(text: str | bytes) -> tuple[tuple[str, Any], ...] | None:
    value = json.loads(text)
    if isinstance(value, dict) and all(
        v is None or isinstance(v, str | int | float | bool) for v in value.values()
    ):
        return tuple(value.items())
    return None


def message_to_dict(message: Message) -> dict[str, Any]:
    """A JSON-able dict holding every field of ``message``."""
    out: dict[str, Any] = {"v": CODEC_VERSION, "id": message.id, "role": message.role}
    if isinstance(message.content, str):
        out["content"] = message.content
    else:
        out["content"] = [
            {"type": p.type, "text": p.text, "data": dict(p.data)} for p in message.content
        ]
    if message.name is not None:
        out["name"] = message.name
    if message.tool_calls:
        out["tool_calls"] = [[c.id, c.name, c.arguments] for c in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.extra:
        out["extra"] = dict(message.extra)
    if message.timestamp is not None:
        out["ts"] = message.timestamp.isoformat()
    return out


def message_from_dict(data: Mapping[str, Any]) -> Message:
    """The message back from :func:`message_to_dict`."""
    version = data.get("v", CODEC_VERSION)
    if version != CODEC_VERSION:
        raise StoreError(
            f"a stored message uses layout version {version!r}, this version of "
            "session-migrator reads version 1; upgrade session-migrator"
        )
    raw = data["content"]
    content: str | tuple[ContentPart, ...]
    if isinstance(raw, str):
        content = raw
    else:
        content = tuple(ContentPart(p["type"], p.get("text"), p.get("data") or {}) for p in raw)
    return Message(
        role=cast(Role, data["role"]),
        content=content,
        name=data.get("name"),
        tool_calls=tuple(ToolCall(c[0], c[1], c[2]) for c in data.get("tool_calls", ())),
        tool_call_id=data.get("tool_call_id"),
        id=data["id"],
        extra=data.get("extra") or {},
        timestamp=datetime.fromisoformat(data["ts"]) if data.get("ts") else None,
    )


def message_to_json(message: Message) -> str:
    """:func:`message_to_dict` as compact JSON text."""
    return dumps(message_to_dict(message))


def message_from_json(text: str | bytes) -> Message:
    """The message back from :func:`message_to_json`."""
    return message_from_dict(loads(text))
