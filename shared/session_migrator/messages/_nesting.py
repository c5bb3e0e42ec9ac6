"""A limit on how deeply a message's data may nest, checked without recursion.

Content nested about a thousand levels (a 10 KB file) is enough to exhaust Python's recursion
limit in ``json.dumps``, ``copy.deepcopy`` or a framework's validators: a bare ``RecursionError``
far from the message that caused it. Every way into the core checks first (reading OpenAI
messages, making a :class:`~session_migrator.Message` or a tool call, the adapters' conversions)
and raises :class:`~session_migrator.InvalidMessageError` naming the message and the field.
No chat API takes anything close to :data:`MAX_NESTING` levels.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from itertools import accumulate
from typing import Any

from session_migrator._errors import InvalidMessageError

__all__ = [
    "MAX_NESTING",
    "check_arguments_nesting",
    "check_json_text_nesting",
    "check_message_nesting",
    "check_nesting",
    "check_openai_nesting",
]

#: The deepest nesting of objects and lists a message may hold (a field's value counts as 1).
MAX_NESTING = 100

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")
_SHOWN = 6  # keys of the path shown before "..."


def _children(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping):
        return ((str(k), v) for k, v in value.items())
    return ((f"[{i}]", v) for i, v in enumerate(value))


def _nested(value: Any) -> bool:
    return isinstance(value, Mapping | list | tuple)


def too_deep(value: Any, limit: int = MAX_NESTING) -> list[str] | None:
    """The path to where ``value`` nests deeper than ``limit`` levels, else ``None``.

    Walks with an explicit stack (no recursion), so any depth is safe to check; a container
    that holds itself is reported too.
    """
    if not _nested(value):
        return None
    stack = [_children(value)]
    path: list[str] = []
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            if path:
                path.pop()
            continue
        key, child = step
        if _nested(child):
            path.append(key)
            if len(stack) >= limit:
                return path
            stack.append(_children(child))
    return None


def _where(field: str, path: list[str]) -> str:
    keys = [k if k.startswith("[") else f".{k}" for k in path[:_SHOWN]]
    return field + "".join(keys) + ("..." if len(path) > _SHOWN else "")


def check_nesting(
    value: Any,
    *,
    field: str,
    index: int | None = None,
    message_id: str | None = None,
    limit: int = MAX_NESTING,
    owner: str = "message",
) -> None:
    """Raise :class:`~session_migrator.InvalidMessageError` when ``value`` (the ``field`` of a
    message: ``index`` in its list, or ``message_id``) nests deeper than ``limit`` levels.

    >>> check_nesting({"a": [1, 2]}, field="extra")
    >>> deep: object = "x"
    >>> for _ in range(200):
    ...     deep = [deep]
    >>> check_nesting(deep, field="content", index=3)
    Traceback (most recent call last):
    ...
    session_migrator._errors.InvalidMessageError: message 3, field 'content': nested deeper than 100 levels (at content[0][0][0][0][0][0]...); flatten it or keep it outside the message
    """  # noqa: E501
    path = too_deep(value, limit)
    if path is not None:
        _refuse(field, _where(field, path), index, message_id, limit, owner)


def check_json_text_nesting(
    text: str,
    *,
    field: str,
    index: int | None = None,
    message_id: str | None = None,
    limit: int = MAX_NESTING,
    owner: str = "message",
) -> None:
    """:func:`check_nesting` for JSON text (a tool call's arguments), without parsing it."""
    if text.count("[") + text.count("{") <= limit:  # the common case: a glance
        return
    depths = accumulate(1 if b in "[{" else -1 for b in _BRACKETS.findall(_STRING.sub("", text)))
    if max(depths, default=0) > limit:
        _refuse(field, field, index, message_id, limit, owner)


def check_arguments_nesting(arguments: object, call_id: object) -> None:
    """:func:`check_nesting` for a tool call's arguments (JSON text, or a dict of them)."""
    where = call_id if isinstance(call_id, str) else None
    if isinstance(arguments, str):
        check_json_text_nesting(
            arguments, field="tool_calls.arguments", message_id=where, owner="tool call"
        )
    elif isinstance(arguments, Mapping):
        check_nesting(arguments, field="tool_calls.arguments", message_id=where, owner="tool call")


def check_message_nesting(
    message_id: str, extra: Mapping[str, Any], parts: Sequence[Mapping[str, Any]]
) -> None:
    """:func:`check_nesting` for what a message holds besides text: ``extra`` and the data of
    its non-text ``parts`` (a tool call's arguments are checked when the call is made)."""
    if extra:
        check_nesting(extra, field="extra", message_id=message_id)
    for i, data in enumerate(parts):
        if data:
            check_nesting(data, field=f"content[{i}]", message_id=message_id)


def check_openai_nesting(data: Any, index: int | None, limit: int = MAX_NESTING) -> None:
    """:func:`check_nesting` for an OpenAI message dict, naming the key that nests too deep."""
    path = too_deep(data, limit + 1) if isinstance(data, Mapping) else None
    if path is not None:
        _refuse(path[0], _where(path[0], path[1:]), index, None, limit)


def _refuse(
    field: str,
    where: str,
    index: int | None,
    message_id: str | None,
    limit: int,
    owner: str = "message",
) -> None:
    whose = f" of {owner} {message_id!r}" if message_id is not None and index is None else ""
    raise InvalidMessageError(
        f"nested deeper than {limit} levels (at {where}{whose}); flatten it or keep it outside "
        "the message",
        index=index,
        field=field,
    )
