"""The MCP tools' arguments: their types, their checks and the error a wrong one raises.

It owns :class:`ArgumentError`, the ``Strategy`` and ``MessagesArg`` types, reading
``messages_json`` (a JSON string or an already parsed list) into messages, the model lookup
with the remedy the tools give for an unknown model, and the checks of ``recall_scope`` and
``reserve_output_tokens``; each raises an error that names the argument. :class:`SessionTools`
in ``_tools`` calls them; ``_answers`` shapes what the tools return.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from session_migrator._errors import InvalidMessageError, SessionMigratorError, UnknownModelError
from session_migrator.messages._messages import Message, messages_from_openai
from session_migrator.messages._nesting import MAX_NESTING

if TYPE_CHECKING:
    from session_migrator.models._windows import ModelWindow
    from session_migrator.recall._related import RecallScope

Strategy = Literal["auto", "trim", "summarize", "recall"]
#: ``messages_json`` as a JSON string, or already parsed (a list, or ``{"messages": [...]}``).
MessagesArg = str | list[Any] | dict[str, Any]


#: What the tools say to do about a model the table does not know.
UNKNOWN_MODEL_REMEDY = (
    "migrate_session, session_context and session_usage take context_window (its window in "
    "tokens) for a model not in the table; or add it to the JSON/TOML file named by "
    "SESSION_MIGRATOR_MODELS where this server runs."
)


class ArgumentError(SessionMigratorError, ValueError):
    """A tool argument is wrong (bad JSON, wrong shape, out of range)."""


def parse_messages(value: MessagesArg) -> list[Message]:
    """OpenAI-format messages from a JSON string or an already parsed list.

    Raises :class:`ArgumentError` for invalid JSON or a wrong shape, naming the spot.
    """
    data: Any = value
    if isinstance(value, str):
        try:
            data = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ArgumentError(
                f"messages_json is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                f"{exc.msg}); pass a JSON list of OpenAI chat messages such as "
                '[{"role": "user", "content": "hi"}]'
            ) from None
        except RecursionError:
            raise ArgumentError(
                f"messages_json is nested too deeply to read (a message may nest at most "
                f"{MAX_NESTING} levels); flatten it"
            ) from None
    try:
        messages = messages_from_openai(data)
    except InvalidMessageError as exc:
        raise ArgumentError(f"messages_json: {exc}") from None
    _refuse_anthropic_blocks(messages)
    return messages


#: Anthropic's tool blocks, which an OpenAI-format message does not hold (its calls are
#: ``tool_calls``, its results ``role="tool"`` messages)
_ANTHROPIC_BLOCKS = ("tool_use", "tool_result", "server_tool_use", "web_search_tool_result")


def _refuse_anthropic_blocks(messages: list[Message]) -> None:
    for k, m in enumerate(messages):
        if isinstance(m.content, str):
            continue
        kinds = [p.type for p in m.content if p.type in _ANTHROPIC_BLOCKS]
        if kinds:
            raise ArgumentError(
                f"messages_json[{k}] holds an Anthropic-style {kinds[0]!r} block, which OpenAI "
                "format does not have: a call is an assistant message's tool_calls "
                '([{"id": ..., "type": "function", "function": {"name": ..., "arguments": '
                '"{...}"}}]) and a result a {"role": "tool", "tool_call_id": ..., "content": '
                "...} message; convert them, or import a Claude Code session file by path "
                "(handoff_session, or session-migrator import)"
            )


def _lookup(model: str, context_window: int | None = None) -> ModelWindow:
    from session_migrator.models._lookup import lookup_model

    if context_window is not None and context_window < 1:
        raise ArgumentError(f"context_window must be positive, got {context_window}")
    try:
        return lookup_model(model, context_window=context_window)
    except UnknownModelError as exc:
        raise exc.with_remedy(UNKNOWN_MODEL_REMEDY) from None
    except ValueError as exc:
        if isinstance(exc, SessionMigratorError):
            raise
        raise ArgumentError(f"model: {exc}") from None


def _scope(value: str) -> RecallScope:
    from session_migrator.recall._related import check_scope

    try:
        return check_scope(value)
    except ValueError as exc:
        raise ArgumentError(f"recall_scope: {exc}") from None


def _check_reserve(value: int | None) -> None:
    if value is not None and value < 0:
        raise ArgumentError(f"reserve_output_tokens must not be negative, got {value}")


def argument_problems(tool: str, errors: Sequence[Mapping[str, Any]]) -> str:
    """What is wrong with a tool's arguments and what to pass instead, one sentence each."""
    problems: list[str] = []
    for error in errors:
        loc = [str(p) for p in error.get("loc", ()) if not str(p).startswith("function-")]
        name = loc[0] if loc else "arguments"
        kind = str(error.get("type", ""))
        given = error.get("input")
        if kind == "missing":
            problems.append(f"'{name}' is required")
            continue
        shown = json.dumps(given, default=str)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        expected = _EXPECTED.get(kind, str(error.get("msg", "a different value")).lower())
        ctx = error.get("ctx") or {}
        if kind == "literal_error" and "expected" in ctx:
            expected = f"one of {ctx['expected']}"
        for bound, words in (("ge", "at least"), ("le", "at most"), ("min_length", "min")):
            if bound in ctx:
                expected += f" ({words} {ctx[bound]})"
        problems.append(f"'{name}' must be {expected}, got {shown}")
    unique = list(dict.fromkeys(problems))
    return f"{tool}: {'; '.join(unique)}. See the tool's input schema for every argument's type."


_EXPECTED = {
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "literal_error": "one of the listed values",
    "greater_than_equal": "a number",
    "less_than_equal": "a number",
    "string_too_short": "a non-empty string",
    "list_type": "a list",
    "dict_type": "an object",
}
