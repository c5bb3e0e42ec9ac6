"""Fitting one model request (a system message, the messages, what is bound to the model).

:class:`RequestFitter` is what the agent middleware and the chat model guard share: given the
messages a model is about to receive, the window of that model and the tokens of everything
bound to it (tool schemas, structured-output schemas), it returns ``None`` when the request fits
as is, else the fitted system message and messages, reusing the untouched LangChain objects.
Rolling summaries are kept per conversation (keyed by its first non-system message), so each
call summarizes only the newly cut messages.

:func:`payload_tokens` counts bound schemas the way they go over the wire: the JSON of each
tool / function / response-format schema, plus :data:`TOKENS_PER_TOOL` for its framing.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from langchain_session_migrator._convert import (
    message_from_core,
    message_to_core,
    messages_to_core,
)
from session_migrator import (
    Compressor,
    Message,
    MigrationReport,
    ModelWindow,
    Summarizer,
    Summary,
    TokenCounter,
    check_strategy,
    default_counter,
    migrate,
)

__all__ = [
    "TOKENS_PER_TOOL",
    "RequestFitter",
    "binding_payloads",
    "payload_tokens",
    "tool_payload",
]

#: Tokens counted per tool (or schema) on top of its JSON (name, framing).
TOKENS_PER_TOOL = 8
_SYSTEM_ID = "session-migrator-system"
#: The keyword arguments of a ``RunnableBinding`` around a chat model that the provider is sent.
_SENT_KWARGS = ("tools", "functions", "response_format")


def tool_payload(tool: Any) -> Any:
    """The JSON-able form a tool is sent in (a dict as given, else its OpenAI tool schema)."""
    if isinstance(tool, Mapping):
        return tool
    try:
        return convert_to_openai_tool(tool)
    except (TypeError, ValueError, NotImplementedError):
        return str(tool)


def binding_payloads(kwargs: Mapping[str, Any]) -> list[Any]:
    """What the bound ``kwargs`` of a chat model add to each request (tools, functions, a
    ``response_format`` schema); ``tool_choice`` and the like are a few tokens of framing."""
    out: list[Any] = []
    for key in _SENT_KWARGS:
        value = kwargs.get(key)
        if value is None:
            continue
        if isinstance(value, list | tuple):
            out.extend(tool_payload(v) for v in value)
        else:
            out.append(value if isinstance(value, Mapping | str) else tool_payload(value))
    return out


def payload_tokens(payloads: Iterable[Any], counter: TokenCounter) -> int:
    """The tokens of ``payloads`` (schemas) by ``counter``: their JSON plus the framing."""
    total = 0
    for payload in payloads:
        try:
            text = json.dumps(payload, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = str(payload)
        total += counter.count_text(text) + TOKENS_PER_TOOL
    return total


class RequestFitter:
    """Fits a request's messages to a window (see the module docstring). Thread-safe."""

    def __init__(
        self,
        *,
        strategy: str | Compressor = "auto",
        summarizer: Summarizer | None = None,
        reserve_output: int | None = None,
        reserve_tokens: int = 0,
        max_summaries: int = 256,
        max_cached_messages: int = 50_000,
    ) -> None:
        if reserve_tokens < 0:
            raise ValueError(f"reserve_tokens must not be negative, got {reserve_tokens}")
        check_strategy(strategy)  # (now, not at the first call)
        self.strategy = strategy
        self.summarizer = summarizer
        self.reserve_output = reserve_output
        self.reserve_tokens = reserve_tokens
        self.max_summaries = max_summaries
        self.max_cached_messages = max_cached_messages
        self._lock = threading.Lock()
        self._summaries: OrderedDict[str, Summary] = OrderedDict()
        self._converted: OrderedDict[int, tuple[BaseMessage, Any, Message]] = OrderedDict()
        self.last_report: MigrationReport | None = None

    def fit(
        self,
        system: SystemMessage | None,
        messages: Sequence[BaseMessage],
        window: ModelWindow,
        *,
        payloads: Sequence[Any] = (),
    ) -> tuple[SystemMessage | None, list[BaseMessage]] | None:
        """``None`` when ``system`` + ``messages`` + ``payloads`` fit ``window`` with no broken
        tool pair; else the system message and messages to send instead."""
        counter = default_counter(window)
        originals = list(messages)
        core = self._to_core(originals)
        if system is not None:
            core.insert(0, _system_to_core(system))
        key = next((m.id for m in core if m.role != "system"), None)
        previous = self._summaries.get(key) if key is not None else None
        reserved = payload_tokens(payloads, counter) + self.reserve_tokens
        limit: int | None = None
        for _ in range(3):
            result = migrate(
                core,
                window,
                strategy=self.strategy,
                summarizer=self.summarizer,
                reserve_output=self.reserve_output,
                counter=counter,
                previous_summary=previous,
                extra_reserved=reserved,
            )
            self.last_report = result.report
            if result.report.decision == "fits" and not result.report.dropped_ids:
                return None  # (a broken tool pair is left out even of a request that fits)
            if limit is None:
                limit = result.report.budget
            new_system, new_messages = _rebuild(result.messages, core, originals, system)
            sent = messages_to_core(([new_system] if new_system else []) + new_messages)
            over = counter.count_messages(sent) - limit
            if over <= 0:
                break
            reserved += over  # folding the summary into the system message cost a token or two
        if result.summary is not None and key is not None:
            with self._lock:
                self._summaries[key] = result.summary
                self._summaries.move_to_end(key)
                while len(self._summaries) > self.max_summaries:
                    self._summaries.popitem(last=False)
        return new_system, new_messages

    def _to_core(self, messages: list[BaseMessage]) -> list[Message]:
        """The core messages, reusing the conversion of objects seen in earlier calls.

        An agent sends the same message objects again on every step; reusing their core copies
        also reuses the token counts cached on them, so a step costs a pass of lookups.
        """
        if any(m.id is None for m in messages):
            return messages_to_core(messages)
        converted: list[Message] = []
        with self._lock:
            cache = self._converted
            for message in messages:
                hit = cache.get(id(message))
                if hit is not None and hit[0] is message and hit[1] is message.content:
                    cache.move_to_end(id(message))
                    converted.append(hit[2])
                    continue
                core = message_to_core(message)
                cache[id(message)] = (message, message.content, core)
                converted.append(core)
            while len(cache) > self.max_cached_messages:
                cache.popitem(last=False)
        return converted


def _system_to_core(system: SystemMessage) -> Message:
    converted = messages_to_core([system])[0]
    return converted.replace(id=_SYSTEM_ID) if system.id is None else converted


def _rebuild(
    fitted: list[Message],
    core: list[Message],
    originals: list[BaseMessage],
    system: SystemMessage | None,
) -> tuple[SystemMessage | None, list[BaseMessage]]:
    """The system message and the messages to send, reusing untouched LangChain objects."""
    offset = 1 if system is not None else 0
    original_of = {id(m): originals[i - offset] for i, m in enumerate(core) if i >= offset}
    leading = 0
    while leading < len(fitted) and fitted[leading].role == "system":
        leading += 1
    head, rest = fitted[:leading], fitted[leading:]
    system_core = core[0] if system is not None else None
    notes = [m for m in head if m.marker is not None and m.marker.get("kind") != "truncated"]
    own = next((m for m in head if system_core is not None and m.id == system_core.id), None)
    others = [m for m in head if m is not own and m not in notes]

    new_system: SystemMessage | None
    if own is None:
        new_system = None
    elif own is system_core and system is not None:
        new_system = system
    else:
        converted = message_from_core(own)
        new_system = converted if isinstance(converted, SystemMessage) else SystemMessage(own.text)
    for note in notes:
        new_system = _fold(new_system, note.text)

    def back(message: Message) -> BaseMessage:
        original = original_of.get(id(message))
        return original if original is not None else message_from_core(message)

    return new_system, [back(m) for m in [*others, *rest]]


def _fold(system: SystemMessage | None, text: str) -> SystemMessage:
    if system is None:
        return SystemMessage(text)
    if isinstance(system.content, str):
        content: str | list[str | dict[Any, Any]] = (
            f"{system.content}\n\n{text}" if system.content else text
        )
    else:
        content = [*system.content, {"type": "text", "text": text}]
    return system.model_copy(update={"content": content})
