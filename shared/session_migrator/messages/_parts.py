"""The parts of a :class:`~session_migrator.Message`: tool calls and content parts."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from session_migrator._errors import InvalidMessageError
from session_migrator.messages._nesting import check_arguments_nesting

__all__ = ["ContentPart", "ToolCall"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call requested by an assistant message. ``arguments`` is a JSON string."""

    id: str
    name: str
    arguments: str = "{}"

    def __post_init__(self) -> None:
        for label in ("id", "name"):
            value = getattr(self, label)
            if not isinstance(value, str):
                raise InvalidMessageError(
                    f"a tool call's {label} must be a string, got {type(value).__name__}",
                    field=f"tool_calls.{label}",
                )
        arguments: object = self.arguments
        check_arguments_nesting(arguments, self.id)
        if isinstance(arguments, Mapping):  # what a LangChain tool call holds: kept as JSON
            object.__setattr__(self, "arguments", json.dumps(arguments, ensure_ascii=False))
        elif not isinstance(arguments, str):
            raise InvalidMessageError(
                "a tool call's arguments must be a JSON string (or a dict of them), got "
                f"{type(arguments).__name__}",
                field="tool_calls.arguments",
            )


@dataclass(frozen=True, slots=True)
class ContentPart:
    """One part of a multi-part message.

    ``type`` is ``"text"``, ``"image"`` or anything else (kept opaque). ``text`` holds the text of
    a text part; ``data`` keeps the original part as given (e.g. the OpenAI dict) so it can be
    written back unchanged.
    """

    type: str
    text: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
