"""``FitToModel``: the model-boundary guard for chains (LCEL, ``RunnableWithMessageHistory``).

A chain adds to the history before its chat model runs (a prompt, the input, retrieved context)
and binds tools and structured-output schemas to the model. Only the model's own input is the
complete request, so the guard sits there: it wraps the chat model and fits the final message
list to the model that is about to run, counting what is bound to it. Fallbacks
(``with_fallbacks``) and alternatives (``configurable_alternatives``) are looked through when the
guard is built, each model getting its own guard, so the model that really runs is the one the
request is fitted to, on its first call; ``configurable_fields`` models are resolved per call.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, convert_to_messages
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import (
    ConfigurableFieldSpec,
    Runnable,
    RunnableBinding,
    RunnableConfig,
    RunnableParallel,
)
from langchain_core.runnables.base import RunnableSequence
from langchain_core.runnables.config import ensure_config, merge_configs
from langchain_core.runnables.configurable import (
    DynamicRunnable,
    RunnableConfigurableAlternatives,
)
from langchain_core.runnables.fallbacks import RunnableWithFallbacks

from langchain_session_migrator._models import model_map, window_for
from langchain_session_migrator._request import (
    RequestFitter,
    binding_payloads,
    provider_of,
    requested_output,
)
from langchain_session_migrator._summarizer import as_summarizer
from session_migrator import (
    Compressor,
    MigrationReport,
    ModelWindow,
    Summarizer,
    narrowed,
    note_prompt_read,
)

__all__ = ["FitToModel", "SharesGuardSettings"]


class SharesGuardSettings(Protocol):
    """What the guard takes from a history or a history factory (a
    ``FittedHistoryFactory`` or a ``FittedChatMessageHistory``): their shared settings."""

    def _guard_settings(self) -> dict[str, Any]: ...


_DEPTH = 32


class FitToModel(Runnable[LanguageModelInput, Any]):
    """A chat model whose every request is fitted to it first: use it where the model goes.

    ``FitToModel(llm)`` runs as ``llm`` does (``invoke``, ``ainvoke``, ``stream``, ``astream``,
    ``batch``, ``abatch``), and before each call fits the messages the model is about to get to
    that model's input budget: its window (``profile``, else its name; ``models`` maps names to
    windows or models for the rest), minus the output reserve, minus the tokens of what is bound
    to it (``bind_tools`` tools, ``with_structured_output`` / ``response_format`` schemas,
    legacy ``functions``). A request that fits goes over untouched (the same objects); one that
    does not is fitted with ``strategy`` like :class:`FitToModelMiddleware` does: the system
    message, a summary or note on the cut part folded into it, relevant older turns and the
    newest turns, tool calls with their results. A request with a broken tool pair (a result
    whose call is not in it) loses that pair, which a provider would reject.

    Wrap the model, not the chain: ``prompt | FitToModel(llm)``. ``llm`` may be a chat model, a
    binding of one (``llm.bind_tools(...)``), ``llm.with_structured_output(...)``,
    ``llm.with_fallbacks([...])`` or ``llm.configurable_alternatives(...)`` (each model inside
    is guarded for itself, so a fallback is fitted on its first call), or a mix of those.
    :meth:`bind_tools` and :meth:`with_structured_output` return a guard of the bound model.

    ``history`` (a :class:`FittedHistoryFactory` or :class:`FittedChatMessageHistory`) shares
    what the history knows: its strategy, summarizer, output reserve and registered models
    (configurable keys, profiles), unless given here. :attr:`last_report` is the newest fit.

    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> llm = FakeListChatModel(responses=["ok"], profile={"max_input_tokens": 2000,
    ...                                                    "max_output_tokens": 200})
    >>> guarded = FitToModel(llm, strategy="trim")
    >>> guarded.invoke("Hello!").content
    'ok'
    >>> guarded.last_report.decision
    'fits'
    """

    def __init__(
        self,
        model: Runnable[Any, Any],
        *,
        strategy: str | Compressor | None = None,
        summarizer: Summarizer | BaseChatModel | Runnable[Any, Any] | None = None,
        reserve_output: int | None = None,
        reserve_tokens: int = 0,
        models: Mapping[str, Any] | Sequence[Any] | None = None,
        history: SharesGuardSettings | None = None,
        count_tools: bool = True,
        max_summaries: int = 256,
        embeddings: Any = None,
    ) -> None:
        if not isinstance(model, Runnable):
            raise TypeError(
                f"FitToModel wraps a chat model (a Runnable), got {type(model).__name__}"
            )
        shared = _shared(history)
        self.model = model
        self.count_tools = count_tools
        self._fitter = RequestFitter(
            strategy=strategy if strategy is not None else shared.get("strategy", "auto"),
            summarizer=as_summarizer(summarizer) or shared.get("summarizer"),
            reserve_output=(
                reserve_output if reserve_output is not None else shared.get("reserve_output")
            ),
            reserve_tokens=reserve_tokens,
            max_summaries=max_summaries,
            embeddings=embeddings if embeddings is not None else shared.get("embeddings"),
        )
        registry = dict(shared.get("registry", {}))
        registry.update({name: window_for(m) for name, m in model_map(models).items()})
        self._registry = registry
        self.bound: Runnable[Any, Any] = _guard_tree(model, self, 0)

    # -- the guard's settings ----------------------------------------------------------------

    @property
    def last_report(self) -> MigrationReport | None:
        """The report of the newest call's fit (``None`` before any)."""
        return self._fitter.last_report

    def window(self, model: Any) -> ModelWindow:
        """The window of ``model`` (registered names first), narrowed to what its runtime was
        seen to read when a reply said it cut the prompt silently."""
        return narrowed(window_for(model, registry=self._registry))

    def _derived(self, model: Runnable[Any, Any]) -> FitToModel:
        """A guard of ``model`` with this one's settings, fitter and summaries."""
        derived = FitToModel.__new__(FitToModel)
        derived.model = model
        derived.count_tools = self.count_tools
        derived._fitter = self._fitter
        derived._registry = self._registry
        derived.bound = _guard_tree(model, derived, 0)
        return derived

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FitToModel:
        """A guard of ``model.bind_tools(tools, ...)`` (same settings, same summaries)."""
        binder = getattr(self.model, "bind_tools", None)
        if binder is None:
            raise TypeError(f"{type(self.model).__name__} has no bind_tools")
        return self._derived(binder(tools, **kwargs))

    def with_structured_output(self, schema: Any, **kwargs: Any) -> FitToModel:
        """A guard of ``model.with_structured_output(schema, ...)``."""
        maker = getattr(self.model, "with_structured_output", None)
        if maker is None:
            raise TypeError(f"{type(self.model).__name__} has no with_structured_output")
        return self._derived(maker(schema, **kwargs))

    # -- running -----------------------------------------------------------------------------

    def invoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Any:
        return self.bound.invoke(input, config, **kwargs)

    async def ainvoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Any:
        return await self.bound.ainvoke(input, config, **kwargs)

    def stream(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        yield from self.bound.stream(input, config, **kwargs)

    async def astream(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        async for chunk in self.bound.astream(input, config, **kwargs):
            yield chunk

    @property
    def InputType(self) -> Any:
        return self.model.InputType

    @property
    def OutputType(self) -> Any:
        return self.model.OutputType

    @property
    def config_specs(self) -> list[ConfigurableFieldSpec]:
        """The configurable fields of the wrapped model (``configurable_alternatives``, ...)."""
        return self.bound.config_specs

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        return self.model.get_name(suffix, name=name)

    def __repr__(self) -> str:
        return f"FitToModel({self.model!r})"


class _ModelCall(Runnable[LanguageModelInput, Any]):
    """One chat model (or a binding of one) behind the guard: fits, then calls it."""

    def __init__(self, model: Runnable[Any, Any], guard: FitToModel) -> None:
        self.model = model
        self.guard = guard

    def fitted(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None,
        call_kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        """``input`` itself when the request fits the model about to run, else the fitted
        message list. ``call_kwargs`` are the call's own (``max_tokens=``, ``tools=``, ...)."""
        target, bound = _resolve(self.model, ensure_config(config))
        kwargs = {**bound, **(call_kwargs or {})}
        window = self.guard.window(target)
        messages = _messages_of(input)
        system = messages[0] if messages and isinstance(messages[0], SystemMessage) else None
        rest = messages[1:] if system is not None else messages
        payloads = binding_payloads(kwargs) if self.guard.count_tools else []
        asked, parameter = requested_output(target, kwargs)
        fitted = self.guard._fitter.fit(
            system,
            rest,
            window,
            payloads=payloads,
            max_output_tokens=asked,
            output_parameter=parameter,
            provider=provider_of(target),
        )
        if fitted is None:
            return input
        new_system, new_messages = fitted
        return ([new_system] if new_system is not None else []) + new_messages

    def read_check(self, reply: Any, config: RunnableConfig | None) -> Any:
        """``reply``, after noting the prompt tokens it says the runtime read (Ollama's
        ``prompt_eval_count``): fewer than were sent is a silent cut (the guard warns once and
        fits to what was read from the next request on)."""
        metadata = getattr(reply, "response_metadata", None)
        read = metadata.get("prompt_eval_count") if isinstance(metadata, Mapping) else None
        report = self.guard.last_report
        if isinstance(read, int) and report is not None:
            target, _ = _resolve(self.model, ensure_config(config))
            note_prompt_read(self.guard.window(target), report.tokens_after, read)
        return reply

    def invoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Any:
        reply = self.model.invoke(self.fitted(input, config, kwargs), config, **kwargs)
        return self.read_check(reply, config)

    async def ainvoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Any:
        fitted = await asyncio.to_thread(self.fitted, input, config, kwargs)
        return self.read_check(await self.model.ainvoke(fitted, config, **kwargs), config)

    def stream(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        for chunk in self.model.stream(self.fitted(input, config, kwargs), config, **kwargs):
            yield self.read_check(chunk, config)

    async def astream(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        fitted = await asyncio.to_thread(self.fitted, input, config, kwargs)
        async for chunk in self.model.astream(fitted, config, **kwargs):
            yield self.read_check(chunk, config)

    @property
    def OutputType(self) -> Any:
        return self.model.OutputType

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        return self.model.get_name(suffix, name=name)

    def __repr__(self) -> str:
        return f"_ModelCall({self.model!r})"


def _guard_tree(node: Runnable[Any, Any], guard: FitToModel, depth: int) -> Runnable[Any, Any]:
    """``node`` with a :class:`_ModelCall` around each chat model a call may end at."""
    if depth > _DEPTH or isinstance(node, _ModelCall):
        return node
    if isinstance(node, FitToModel):
        return _guard_tree(node.model, guard, depth + 1)
    if isinstance(node, RunnableWithFallbacks):
        return node.model_copy(
            update={
                "runnable": _guard_tree(node.runnable, guard, depth + 1),
                "fallbacks": [_guard_tree(f, guard, depth + 1) for f in node.fallbacks],
            }
        )
    if isinstance(node, RunnableConfigurableAlternatives):
        return node.model_copy(
            update={
                "default": _guard_tree(node.default, guard, depth + 1),
                "alternatives": {
                    key: _guard_tree(alt, guard, depth + 1) if isinstance(alt, Runnable) else alt
                    for key, alt in node.alternatives.items()
                },
            }
        )
    if isinstance(node, RunnableSequence):  # with_structured_output: the model, then a parser
        first = _guard_tree(node.first, guard, depth + 1)
        return RunnableSequence(first, *node.middle, node.last, name=node.name)
    if isinstance(node, RunnableParallel):  # with_structured_output(include_raw=True)
        steps = {
            key: _guard_tree(step, guard, depth + 1) if _is_model(step) else step
            for key, step in node.steps__.items()
        }
        if steps == node.steps__:
            raise TypeError(
                "FitToModel wraps a chat model, and this RunnableParallel holds none: wrap the "
                "model inside the chain (prompt | FitToModel(llm)), not the chain"
            )
        return node.model_copy(update={"steps__": steps})
    if not _is_model(node):
        raise TypeError(
            f"FitToModel wraps a chat model, and {type(node).__name__} is not one: wrap the "
            "model inside the chain (prompt | FitToModel(llm)), not the chain"
        )
    return _ModelCall(node, guard)


def _is_model(node: Any) -> bool:
    for _ in range(_DEPTH):
        if isinstance(node, RunnableBinding):
            node = node.bound
        elif isinstance(node, DynamicRunnable):  # alternatives and configurable fields
            node = node.default
        elif isinstance(node, RunnableWithFallbacks):
            node = node.runnable
        else:
            break
    return (
        isinstance(node, BaseChatModel | _ModelCall)
        or _is_configurable_model(node)
        or hasattr(type(node), "bind_tools")
    )


def _resolve(node: Any, config: RunnableConfig) -> tuple[Any, dict[str, Any]]:
    """The chat model a call of ``node`` with ``config`` runs, and the kwargs bound to it."""
    kwargs: dict[str, Any] = {}
    for _ in range(_DEPTH):
        if isinstance(node, RunnableBinding):
            kwargs = {**node.kwargs, **kwargs}
            config = merge_configs(node.config, config)
            node = node.bound
        elif isinstance(node, DynamicRunnable):
            node, config = node.prepare(config)
        elif _is_configurable_model(node):  # init_chat_model(configurable_fields=...)
            node = _configured_model(node, config)
        elif isinstance(node, RunnableWithFallbacks):
            node = node.runnable
        else:
            break
    return node, kwargs


def _is_configurable_model(node: Any) -> bool:
    """``init_chat_model(..., configurable_fields=...)``'s model, built per call from the
    call's ``configurable`` values (langchain's ``_ConfigurableModel``)."""
    return callable(getattr(type(node), "_model", None)) and hasattr(node, "_default_config")


def _configured_model(node: Any, config: RunnableConfig) -> Any:
    """The chat model ``node`` runs with ``config`` (its queued ``bind_tools`` and
    ``with_structured_output`` applied): the one this call's request is fitted to."""
    return node._model(config)


def _messages_of(input: Any) -> list[BaseMessage]:
    if isinstance(input, PromptValue):
        return input.to_messages()
    if isinstance(input, str):
        return [HumanMessage(input)]
    if isinstance(input, Sequence):
        return convert_to_messages(input)
    raise TypeError(
        f"a chat model's input is a string, a prompt value or a list of messages, got "
        f"{type(input).__name__}"
    )


def _shared(history: Any) -> dict[str, Any]:
    """What a history (or history factory) shares with the guard."""
    if history is None:
        return {}
    settings = getattr(history, "_guard_settings", None)
    if settings is None:
        raise TypeError(
            "history must be a FittedHistoryFactory or a FittedChatMessageHistory, got "
            f"{type(history).__name__}"
        )
    shared: dict[str, Any] = settings()
    return shared
