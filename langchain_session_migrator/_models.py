"""The :class:`~session_migrator.ModelWindow` of a LangChain model, a name, or a window.

One place answers "what can this model take?", in this order:

1. a :class:`~session_migrator.ModelWindow` is used as given;
2. a name found in ``registry`` (windows the caller or the adapter already resolved, e.g. the
   alternatives of a configurable chat model) wins over the bundled table;
3. a chat model served by a runtime that sets its window: ``ChatOllama``'s ``num_ctx`` (else
   the Ollama server's answer), ``ChatOpenAI(base_url=...)`` at a vLLM, SGLang, TGI, llama.cpp
   or LM Studio server (the server's answer), through
   :func:`session_migrator.runtime_window` (``source`` names the class field or the route read);
4. a chat model object with ``profile["max_input_tokens"]`` (LangChain model profiles) is
   described by its profile (``source="profile"``): the input cap and ``max_output_tokens``
   from the profile, the total window and tokenizer from the core's table when its name is
   known there, else ``max_input + max_output`` and the tokenizer family inferred from the name
   (``other``, counted most conservatively, when the name says nothing);
5. otherwise the model's name (``_get_ls_params()["ls_model_name"]``, then ``model_name``,
   ``model``, ``model_id``, ``deployment_name``) or the given string is looked up with
   :func:`session_migrator.models._lookup.lookup_model` (names are normalised there;
   ``"provider:model"`` as ``init_chat_model`` writes it is tried without the provider too).

An unknown model raises :class:`~session_migrator.UnknownModelError`: a window is never guessed.
A model that reports no name is looked up in ``registry`` by its class name.
Wrappers are looked through: ``bind_tools``/``bind`` bindings, fallbacks (the primary model) and
configurable alternatives (the default).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableBinding
from langchain_core.runnables.configurable import RunnableConfigurableAlternatives
from langchain_core.runnables.fallbacks import RunnableWithFallbacks

from langchain_session_migrator._request import provider_of, requested_output
from session_migrator import (
    ModelWindow,
    UnknownModelError,
    lookup_model,
    output_reserve,
    runtime_window,
)

__all__ = ["ModelLike", "input_window", "model_map", "model_name", "unwrap_model", "window_for"]

#: What the adapter accepts wherever a model is named.
ModelLike: TypeAlias = "str | ModelWindow | BaseChatModel | Runnable[Any, Any]"

_NAME_ATTRIBUTES = ("model_name", "model", "model_id", "deployment_name")


def unwrap_model(model: Any) -> Any:
    """The chat model inside bindings, fallbacks (the primary) and alternatives (the default)."""
    for _ in range(16):
        if isinstance(model, RunnableBinding):
            model = model.bound
        elif isinstance(model, RunnableWithFallbacks):
            model = model.runnable
        elif isinstance(model, RunnableConfigurableAlternatives):
            model = model.default
        else:
            break
    return model


def model_name(model: Any) -> str | None:
    """The name a chat model reports to LangSmith (``ls_model_name``), else a name attribute."""
    model = unwrap_model(model)
    if isinstance(model, str):
        return model
    if isinstance(model, ModelWindow):
        return model.name
    if isinstance(model, BaseChatModel):
        try:
            name = model._get_ls_params().get("ls_model_name")
        except Exception:
            name = None
        if isinstance(name, str) and name:
            return name
    for attribute in _NAME_ATTRIBUTES:
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return None


def model_map(models: Mapping[str, Any] | Sequence[Any] | None) -> dict[str, Any]:
    """``models`` as a mapping: a sequence of models is keyed by each model's name."""
    if models is None:
        return {}
    if isinstance(models, Mapping):
        return dict(models)
    out: dict[str, Any] = {}
    for model in models:
        name = model_name(model)
        if name is None:
            raise ValueError(
                f"cannot tell the name of {type(model).__name__}; pass models as a mapping "
                "{name: model}"
            )
        out[name] = model
    return out


def window_for(model: Any, *, registry: Mapping[str, ModelWindow] | None = None) -> ModelWindow:
    """The window of ``model``: a name, a chat model (its profile), or a window.

    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> llm = FakeListChatModel(responses=["ok"], profile={"max_input_tokens": 8000,
    ...                                                    "max_output_tokens": 1000})
    >>> w = window_for(llm)
    >>> (w.max_input_tokens, w.max_output_tokens, w.source)
    (8000, 1000, 'profile')
    """
    model = unwrap_model(model)
    if isinstance(model, ModelWindow):
        return model
    if isinstance(model, str):
        return _by_name(model, registry)
    name = model_name(model)
    if name is not None and registry and name in registry:
        return registry[name]
    served = _served(model, name)
    if served is not None:
        return served
    profile = getattr(model, "profile", None)
    max_input = profile.get("max_input_tokens") if isinstance(profile, Mapping) else None
    if isinstance(max_input, int) and not isinstance(max_input, bool) and max_input > 0:
        assert isinstance(profile, Mapping)
        return _from_profile(model, name, max_input, profile.get("max_output_tokens"))
    if name is None:
        label = type(model).__name__
        if registry and label in registry:
            return registry[label]
        raise UnknownModelError(
            label,
            reason=f"{label} reports no model name, so its window cannot be looked up.",
            remedy=(
                f"Give it a profile ({label}(..., profile={{'max_input_tokens': N, "
                "'max_output_tokens': M})), pass a session_migrator.ModelWindow in its place, "
                f"or map its class name to a window: models={{{label!r}: window}} "
                "(FitToModelMiddleware, FittedHistoryFactory)."
            ),
        )
    try:
        return _by_name(name, registry)
    except UnknownModelError as exc:
        deployment = getattr(model, "deployment_name", None)
        if deployment is None or name != deployment:
            raise
        # an Azure deployment is named by its owner, not by the model it runs
        raise exc.with_remedy(
            f"{name!r} is an Azure deployment's name, not a model's: say which model it runs, "
            f"AzureChatOpenAI(azure_deployment={name!r}, model='gpt-4o', ...), or give it a "
            "profile (profile={'max_input_tokens': N, 'max_output_tokens': M})."
        ) from None


def _served(model: Any, name: str | None) -> ModelWindow | None:
    """The window the runtime behind ``model`` serves, when its class or its server says."""
    if name is None:
        return None
    classes = {cls.__name__ for cls in type(model).__mro__}
    if "ChatOllama" in classes:
        num_ctx = getattr(model, "num_ctx", None)
        given = num_ctx if isinstance(num_ctx, int) and num_ctx > 0 else None
        return runtime_window(
            name,
            runtime="ollama",
            base_url=getattr(model, "base_url", None),
            context_window=given,
            said_by="ChatOllama.num_ctx",
        )
    if "ChatOpenAI" in classes and "AzureChatOpenAI" not in classes:
        base_url = getattr(model, "openai_api_base", None)
        if isinstance(base_url, str) and base_url:
            return runtime_window(name, runtime="openai", base_url=base_url)
    return None


def _by_name(name: str, registry: Mapping[str, ModelWindow] | None) -> ModelWindow:
    if registry and name in registry:
        return registry[name]
    try:
        return lookup_model(name)  # (init_chat_model's "provider:model" is the core's to read)
    except UnknownModelError as exc:
        raise exc.with_remedy(
            "Give the chat model a profile (profile={'max_input_tokens': N, "
            "'max_output_tokens': M}), pass a session_migrator.ModelWindow where you name the "
            "model (or in models={name: window}), or register the name once with "
            f"session_migrator.register_model({name!r}, context_window=N, max_output_tokens=M)."
        ) from None


def _provider_of(model: Any) -> str:
    if isinstance(model, BaseChatModel):
        try:
            provider = model._get_ls_params().get("ls_provider")
        except Exception:
            provider = None
        if isinstance(provider, str) and provider:
            return provider
    return "custom"


def _from_profile(model: Any, name: str | None, max_input: int, max_output: Any) -> ModelWindow:
    label = name or type(model).__name__
    output = max_output if isinstance(max_output, int) and max_output >= 0 else None
    return lookup_model(
        label,
        max_input_tokens=max_input,
        max_output_tokens=output,
        framework="profile",
        provider=_provider_of(model),
    ).with_changes(name=label)


def input_window(model: Any, *, registry: Mapping[str, ModelWindow] | None = None) -> ModelWindow:
    """:func:`window_for` ``model``, with its input cap lowered by the output the model asks
    for on every request (``ChatOpenAI(max_tokens=4096)``: 4,096 of gpt-4's 8,192), where the
    provider counts the two together (OpenAI, Anthropic since Claude 3.7; not Gemini). What a
    history registers for a model object, so its view leaves the room the request will take.
    """
    window = window_for(model, registry=registry)
    if isinstance(model, str | ModelWindow):
        return window
    inner = unwrap_model(model)
    asked, _ = requested_output(inner, getattr(model, "kwargs", None))
    if asked is None:
        return window
    reserve, source = output_reserve(window, asked, provider=provider_of(inner))
    room = window.context_window - reserve
    if source != "request" or room < 1 or room >= window.max_input_tokens:
        return window
    return window.with_changes(max_input_tokens=room)
