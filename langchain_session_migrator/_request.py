"""One model request, as LangChain holds it, handed to the core's request fit.

The core's :func:`~session_migrator.fit_request` fits a whole provider request (messages, tool
and response-format schemas, the output reserve, by the provider's rule). This module reads
those parts where LangChain and its provider classes keep them, and converts the messages:

- the output a request asks for (:func:`requested_output`): the call's keyword arguments, then
  the kwargs bound with ``.bind(...)`` / a ``configurable`` value (already merged by the
  caller), then the chat model's own fields (``max_tokens``, ``max_completion_tokens``,
  ``max_output_tokens``, ``num_predict``, ``max_new_tokens``, and ``model_kwargs``), then
  the model's ``_get_ls_params()["ls_max_tokens"]``;
- the schemas sent beside the messages (:func:`binding_payloads`): ``tools``, ``functions``,
  ``response_format`` kwargs, each in the JSON form it goes over the wire in;
- the provider (:func:`provider_of`, ``ls_provider``), whose rule says how the output counts.

:class:`RequestFitter` converts the messages (reusing the conversion of message objects seen
in earlier calls: an agent sends the same objects on every step), calls the core's
:class:`~session_migrator.RequestFitter`, and gives back the untouched LangChain objects where
the fit kept them.
"""

from __future__ import annotations

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
from langchain_session_migrator._convert_parts import cache_breakpoint_at
from session_migrator import (
    TOKENS_PER_TOOL,
    Compressor,
    Message,
    MigrationReport,
    ModelWindow,
    Summarizer,
    TokenCounter,
    check_strategy,
    schema_tokens,
)
from session_migrator import (
    RequestFitter as CoreRequestFitter,
)
from session_migrator import requested_output as core_requested_output

__all__ = [
    "TOKENS_PER_TOOL",
    "RequestFitter",
    "binding_payloads",
    "payload_tokens",
    "provider_of",
    "requested_output",
    "response_format_payload",
    "strict_json_schema",
    "tool_payload",
]

_SYSTEM_ID = "session-migrator-system"
#: The keyword arguments of a call or a binding that the provider is sent beside the messages.
_SENT_KWARGS = ("tools", "functions", "response_format")


def tool_payload(tool: Any, *, strict: bool | None = None) -> Any:
    """The JSON-able form a tool is sent in (a dict as given, else its OpenAI tool schema; with
    ``strict``, the strict form langchain-openai sends: ``"strict": true`` and
    ``"additionalProperties": false`` on every object)."""
    if isinstance(tool, Mapping):
        return tool
    try:
        return convert_to_openai_tool(tool, strict=strict)
    except (TypeError, ValueError, NotImplementedError):
        return str(tool)


def response_format_payload(value: Any) -> Any:
    """The JSON-able form a ``response_format`` is sent in: a dict or a string as given; a
    pydantic class as the openai SDK sends it (``{"type": "json_schema", "json_schema":
    {"name", "schema", "strict": true}}``, the class's whole JSON schema, titles included,
    made strict: ``additionalProperties: false`` and every property required), not as a tool
    schema, which leaves the titles out."""
    if isinstance(value, Mapping | str):
        return value
    schema_of = getattr(value, "model_json_schema", None)
    if isinstance(value, type) and callable(schema_of):
        try:
            schema = strict_json_schema(schema_of())
        except Exception:  # a class whose schema pydantic cannot build: its tool form
            return tool_payload(value)
        return {
            "type": "json_schema",
            "json_schema": {"name": value.__name__, "schema": schema, "strict": True},
        }
    return tool_payload(value)


def strict_json_schema(schema: Any) -> Any:
    """``schema`` as OpenAI's strict mode wants it (what the openai SDK's
    ``to_strict_json_schema`` does to a pydantic schema): every object schema closed
    (``additionalProperties: false``) with all its properties required, recursively."""
    if isinstance(schema, list):
        return [strict_json_schema(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {
        k: (
            {name: strict_json_schema(sub) for name, sub in v.items()}
            if k in ("properties", "$defs", "definitions") and isinstance(v, Mapping)
            else strict_json_schema(v)
        )
        for k, v in schema.items()
    }
    if out.get("type") == "object" or "properties" in out:
        out.setdefault("additionalProperties", False)
        properties = out.get("properties")
        if isinstance(properties, Mapping):
            out["required"] = list(properties)
    return out


def binding_payloads(kwargs: Mapping[str, Any]) -> list[Any]:
    """What the ``kwargs`` of a call or a binding add to the request (tools, functions, a
    ``response_format`` schema); ``tool_choice`` and the like are a few tokens of framing."""
    out: list[Any] = []
    strict = kwargs.get("strict") if isinstance(kwargs.get("strict"), bool) else None
    for key in _SENT_KWARGS:
        value = kwargs.get(key)
        if value is None:
            continue
        if isinstance(value, list | tuple):
            out.extend(tool_payload(v, strict=strict) for v in value)
        elif key == "response_format":
            out.append(response_format_payload(value))
        else:
            out.append(value if isinstance(value, Mapping | str) else tool_payload(value))
    return out


def payload_tokens(payloads: Iterable[Any], counter: TokenCounter) -> int:
    """The tokens of ``payloads`` (schemas) by ``counter``: their JSON plus the framing."""
    return schema_tokens(payloads, counter)


def requested_output(model: Any, kwargs: Mapping[str, Any] | None = None) -> tuple[int | None, str]:
    """The output tokens a request of ``model`` with ``kwargs`` asks for, and the name it goes
    by (for an error that asks to lower it); ``(None, "max_tokens")`` when it does not say:
    ``kwargs``, the model's ``model_kwargs``, its fields, then ``_get_ls_params()``.

    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> requested_output(FakeListChatModel(responses=["ok"]), {"max_tokens": 300})
    (300, 'max_tokens')
    """
    found = core_requested_output(kwargs, getattr(model, "model_kwargs", None), model=model)
    if found[0] is not None:
        return found
    get_params = getattr(model, "_get_ls_params", None)
    if callable(get_params):
        try:  # a provider class's own bookkeeping must not break a request
            return core_requested_output({"max_tokens": get_params().get("ls_max_tokens")})
        except Exception:
            pass
    return found


def provider_of(model: Any) -> str | None:
    """The provider a chat model says it calls (``ls_provider``: ``openai``, ``anthropic``,
    ``google_genai``, ...), ``None`` when it does not say."""
    get_params = getattr(model, "_get_ls_params", None)
    if not callable(get_params):
        return None
    try:
        provider = get_params().get("ls_provider")
    except Exception:
        return None
    return provider if isinstance(provider, str) and provider else None


class RequestFitter:
    """Fits a request's messages to a window with the core's request fit (see the module
    docstring). Thread-safe."""

    def __init__(
        self,
        *,
        strategy: str | Compressor = "auto",
        summarizer: Summarizer | None = None,
        reserve_output: int | None = None,
        reserve_tokens: int = 0,
        max_summaries: int = 256,
        max_cached_messages: int = 50_000,
        embeddings: Any = None,
    ) -> None:
        if reserve_tokens < 0:
            raise ValueError(f"reserve_tokens must not be negative, got {reserve_tokens}")
        check_strategy(strategy)  # (now, not at the first call)
        self.core = CoreRequestFitter(
            strategy=strategy,
            summarizer=summarizer,
            reserve_output=reserve_output,
            reserve_tokens=reserve_tokens,
            max_summaries=max_summaries,
            embeddings=embeddings,
        )
        self.max_cached_messages = max_cached_messages
        self._lock = threading.Lock()
        self._converted: OrderedDict[int, tuple[BaseMessage, Any, Message]] = OrderedDict()

    @property
    def strategy(self) -> str | Compressor:
        return self.core.strategy

    @property
    def summarizer(self) -> Summarizer | None:
        return self.core.summarizer

    @property
    def reserve_output(self) -> int | None:
        return self.core.reserve_output

    @property
    def last_report(self) -> MigrationReport | None:
        return self.core.last_report

    def fit(
        self,
        system: SystemMessage | None,
        messages: Sequence[BaseMessage],
        window: ModelWindow,
        *,
        payloads: Sequence[Any] = (),
        max_output_tokens: int | None = None,
        output_parameter: str = "max_tokens",
        provider: str | None = None,
    ) -> tuple[SystemMessage | None, list[BaseMessage]] | None:
        """``None`` when the request (``system``, ``messages``, the ``payloads`` schemas and the
        output it asks for) fits ``window`` as is; else the system message and messages to send
        instead."""
        originals = list(messages)
        core = self._to_core(originals)
        if system is not None:
            core.insert(0, _system_to_core(system))
        fit = self.core.fit(
            core,
            window,
            tools=payloads,
            max_output_tokens=max_output_tokens,
            output_parameter=output_parameter,
            provider=provider,
        )
        anthropic = provider == "anthropic" and fit.report.stable_through is not None
        if not fit.changed:
            if not anthropic or not originals:
                return None
            # it fits: Anthropic reads its cache up to a mark, so the end of the request is one
            return system, cache_breakpoint_at(originals, len(originals) - 1)
        head, rest = _rebuild(fit.messages, core, originals, system)
        through = fit.report.stable_through
        if anthropic:
            # Anthropic reads its cache up to a mark: one where the next request starts to differ
            at = next((k for k, m in enumerate(fit.messages) if m.id == through), None)
            offset = 1 if head is not None else 0
            if at is not None and at >= offset:
                rest = cache_breakpoint_at(rest, at - offset)
        return head, rest

    def _to_core(self, messages: list[BaseMessage]) -> list[Message]:
        """The core messages, reusing the conversion of objects seen in earlier calls (and so
        the token counts cached on them)."""
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
    if system is not None:
        original_of[id(core[0])] = system
    out: list[BaseMessage] = []
    for message in fitted:
        original = original_of.get(id(message))
        if original is None and system is not None and message.id == core[0].id:
            # the system prompt with the library's note folded into it: its own fields kept
            content = message_from_core(message).content
            original = system.model_copy(update={"content": content})
        out.append(original if original is not None else message_from_core(message))
    if out and isinstance(out[0], SystemMessage) and fitted[0].role == "system":
        head = out[0]
        return head, out[1:]
    return None, out
