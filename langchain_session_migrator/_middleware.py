"""``FitToModelMiddleware``: fit each model call of a LangChain v1 agent to the model it uses."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

from langchain_session_migrator._convert import (
    message_from_core,
    message_to_core,
    messages_to_core,
)
from langchain_session_migrator._history import _as_summarizer
from langchain_session_migrator._models import model_map, window_for
from session_migrator import Message, ModelWindow, TokenCounter
from session_migrator._migrate import MigrationReport, default_counter, migrate
from session_migrator._strategies import Compressor, check_strategy
from session_migrator._summarizers import Summarizer, Summary

__all__ = ["FitToModelMiddleware"]

#: Tokens counted per tool on top of its JSON schema (name, framing).
TOKENS_PER_TOOL = 8
_SYSTEM_ID = "session-migrator-system"


class FitToModelMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Fits ``request.messages`` to ``request.model`` just before every model call of an agent.

    ``wrap_model_call`` / ``awrap_model_call`` read the window of the model that is about to run
    (its ``profile``, else its name; ``models`` maps names to windows or models for the rest),
    count the system message, the messages and the tool schemas with that model's counter, and:

    - when everything fits the input budget, pass the request on untouched (same objects),
      unless it holds a broken tool pair (a result without its call, a call whose results never
      came), which a copy leaves out;
    - otherwise pass on a copy whose messages are fitted with ``strategy`` (``auto``, ``trim``,
      ``summarize``, ``recall``, or a core compressor): the system message, a summary or a note
      on the cut part (folded into the system message, so providers that want one leading
      system message accept it), older turns relevant to the latest question, and the newest
      turns. An AI message with tool calls and its tool results stay or go together, so no
      orphan tool message is ever sent.

    The agent's state is never changed: the full history stays in the graph's state (and its
    checkpointer); only what this one call sends is fitted. Put this middleware *last* in
    ``create_agent(middleware=[...])`` so it sees the model any other middleware chose (a
    router, ``ModelFallbackMiddleware``): the first middleware is the outermost.

    ``summarizer`` is a core summarizer or any LangChain chat model; rolling summaries are kept
    in memory per conversation (the ``max_summaries`` newest), so each call summarizes only the
    newly cut messages. The conversions of the ``max_cached_messages`` most recently seen message
    objects are kept, so each step of a long run converts and counts only what is new.
    ``reserve_output`` overrides the output tokens held back,
    ``reserve_tokens`` holds back more (e.g. for provider-side additions), ``count_tools=False``
    leaves tool schemas uncounted. :attr:`last_report` is the report of the newest call.

    >>> from langchain.agents import create_agent
    >>> middleware = FitToModelMiddleware(strategy="trim")
    >>> middleware.name
    'FitToModelMiddleware'
    """

    def __init__(
        self,
        *,
        strategy: str | Compressor = "auto",
        summarizer: Summarizer | BaseChatModel | Runnable[Any, Any] | None = None,
        reserve_output: int | None = None,
        reserve_tokens: int = 0,
        models: Mapping[str, Any] | Sequence[Any] | None = None,
        count_tools: bool = True,
        max_summaries: int = 256,
        max_cached_messages: int = 50_000,
    ) -> None:
        super().__init__()
        if reserve_tokens < 0:
            raise ValueError(f"reserve_tokens must not be negative, got {reserve_tokens}")
        check_strategy(strategy)  # (now, not at the first call)
        self.strategy = strategy
        self.summarizer = _as_summarizer(summarizer)
        self.reserve_output = reserve_output
        self.reserve_tokens = reserve_tokens
        self.count_tools = count_tools
        self.max_summaries = max_summaries
        self.tools = []
        self._registry: dict[str, ModelWindow] = {
            name: window_for(model) for name, model in model_map(models).items()
        }
        self._lock = threading.Lock()
        self._summaries: OrderedDict[str, Summary] = OrderedDict()
        self._converted: OrderedDict[int, tuple[BaseMessage, Any, Message]] = OrderedDict()
        self.max_cached_messages = max_cached_messages
        self.last_report: MigrationReport | None = None

    # -- the hooks ---------------------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        return handler(self.fit_request(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        fitted = await asyncio.to_thread(self.fit_request, request)
        return await handler(fitted)

    # -- the fit -----------------------------------------------------------------------------

    def window(self, model: Any) -> ModelWindow:
        """The window of ``model`` (registered names first)."""
        return window_for(model, registry=self._registry)

    def fit_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """``request`` itself when it fits ``request.model``, else a copy with fitted messages."""
        window = self.window(request.model)
        counter = default_counter(window)
        tools = self._tool_tokens(request.tools, counter) if self.count_tools else 0
        originals: list[BaseMessage] = list(request.messages)
        system = request.system_message
        core = self._to_core(originals)
        if system is not None:
            core.insert(0, _system_to_core(system))
        key = next((m.id for m in core if m.role != "system"), None)
        previous = self._summaries.get(key) if key is not None else None
        reserved = tools + self.reserve_tokens
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
            if len(result.messages) == len(core) and all(
                a is b for a, b in zip(result.messages, core, strict=True)
            ):
                return request  # (what a model rejects is repaired even in a request that fits)
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
        return request.override(
            messages=cast(list[AnyMessage], new_messages), system_message=new_system
        )

    def _to_core(self, messages: list[BaseMessage]) -> list[Message]:
        """The core messages, reusing the conversion of objects seen in earlier calls.

        An agent sends the same message objects again on every step; reusing their core copies
        also reuses the token counts cached on them, so a step costs a pass of lookups.
        """
        out = messages_to_core(messages) if any(m.id is None for m in messages) else None
        if out is not None:
            return out
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

    def _tool_tokens(self, tools: Sequence[Any], counter: TokenCounter) -> int:
        total = 0
        for tool in tools:
            try:
                schema = tool if isinstance(tool, dict) else convert_to_openai_tool(tool)
                text = json.dumps(schema, ensure_ascii=False, default=str)
            except (TypeError, ValueError):
                text = str(tool)
            total += counter.count_text(text) + TOKENS_PER_TOOL
        return total


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
