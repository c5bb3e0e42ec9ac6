"""From a LlamaIndex model (an ``LLM``, its ``metadata``, or an event's ``model_dict``) to a
:class:`~session_migrator.ModelWindow`.

The framework's own facts win: ``metadata.context_window`` is the window and ``num_output``
(when positive) the output to reserve, ``source="metadata"``. LlamaIndex asks for the whole
``num_output`` on every call (it is sent as ``max_tokens``), so the input cap is the window less
``num_output``, whatever share of the window that is (the core's default reserve alone would hold
back at most a quarter of it). The ``model_name`` is looked up
only for what the metadata does not say: the tokenizer family (an unknown name is inferred from
its spelling, else counted as ``other``, the most conservative estimate) and, when the bundled
window is the same as the metadata's, the model's separate input cap (gpt-5: 272k of 400k).

An ``OpenAILike`` LLM left at LlamaIndex's default window (3,900) is given the window its server
serves (vLLM's ``/v1/models`` ``max_model_len``, llama.cpp's ``/props`` ``n_ctx``, ...), asked
once through :func:`session_migrator.runtime_window`.

>>> from llama_index.core.llms import MockLLM
>>> w = window_for(MockLLM(max_tokens=64))
>>> (w.context_window, w.max_input_tokens, w.max_output_tokens, w.source)
(3900, 3836, 64, 'metadata')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.base.llms.types import LLMMetadata
from llama_index.core.constants import DEFAULT_CONTEXT_WINDOW, DEFAULT_NUM_OUTPUTS
from llama_index.core.llms import LLM

from session_migrator import ModelWindow, UnknownModelError, lookup_model, runtime_window
from session_migrator import requested_output as core_requested_output

__all__ = [
    "DEFAULT_WINDOW",
    "ModelLike",
    "provider_of",
    "requested_output",
    "window_for",
    "window_from_metadata",
]

#: What a model may be given as: a name, a LlamaIndex LLM, or a window.
ModelLike = str | LLM | ModelWindow

#: Used only when no model is known at all: LlamaIndex's own defaults for an LLM's metadata
#: (3,900 tokens, 256 out), counted with the most conservative estimate.
DEFAULT_WINDOW = ModelWindow(
    name="unknown",
    provider="unknown",
    context_window=DEFAULT_CONTEXT_WINDOW,
    max_input_tokens=DEFAULT_CONTEXT_WINDOW,
    max_output_tokens=DEFAULT_NUM_OUTPUTS,
    tokenizer="other",
    source="default",
)


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def window_from_metadata(metadata: LLMMetadata | Mapping[str, Any]) -> ModelWindow:
    """The window an LLM's metadata describes (a ``LLMMetadata`` or its dict, e.g. an
    instrumentation event's ``model_dict``).

    Raises ``ValueError`` when there is no positive ``context_window``.
    """
    data = metadata.model_dump() if isinstance(metadata, LLMMetadata) else metadata
    context_window = _positive(data.get("context_window"))
    if context_window is None:
        raise ValueError(f"the LLM metadata has no positive context_window: {dict(data)!r}")
    raw_name = data.get("model_name") or data.get("model") or "unknown"
    name = str(raw_name).strip() or "unknown"
    num_output = _positive(data.get("num_output"))
    # the input LlamaIndex can send beside the max_tokens it asks for (at least one token)
    room = context_window - min(num_output, context_window - 1) if num_output else context_window
    return lookup_model(
        name,
        context_window=context_window,
        max_input_tokens=room,
        max_output_tokens=num_output,
        framework="metadata",
        provider=str(data.get("class_name") or "llamaindex"),
    )


def window_for(model: ModelLike) -> ModelWindow:
    """The window of ``model``: an LLM (its metadata, read now), a name (looked up; raises
    :class:`~session_migrator.UnknownModelError` when unknown) or a window (itself).
    """
    if isinstance(model, ModelWindow):
        return model
    if isinstance(model, str):
        try:
            return lookup_model(model)
        except UnknownModelError as exc:
            raise exc.with_remedy(
                "Pass the LLM itself (its metadata.context_window is read) or a "
                "session_migrator.ModelWindow instead of the name, or register the name once "
                f"with session_migrator.register_model({model!r}, context_window=N, "
                "max_output_tokens=M)."
            ) from None
    served = _served(model)
    if served is not None:
        return served
    return window_from_metadata(model.metadata)


def _served(llm: Any) -> ModelWindow | None:
    """The window an ``OpenAILike`` LLM's server serves, when the LLM leaves ``context_window``
    at LlamaIndex's default (3,900: it does not know) and the server says (vLLM, SGLang,
    llama.cpp, LM Studio, TGI; see docs/models.md, Local models). The reserve stays LlamaIndex's
    ``num_output``, asked on every call."""
    if "OpenAILike" not in {cls.__name__ for cls in type(llm).__mro__}:
        return None
    if getattr(llm, "context_window", None) != DEFAULT_CONTEXT_WINDOW:
        return None
    name, base_url = getattr(llm, "model", None), getattr(llm, "api_base", None)
    if not isinstance(name, str) or not isinstance(base_url, str):
        return None
    found = runtime_window(name, runtime="openai", base_url=base_url)
    if found is None:
        return None
    output = _positive(getattr(llm.metadata, "num_output", None))
    if output is None:
        return found
    room = max(1, found.context_window - output)
    return found.with_changes(max_input_tokens=room, max_output_tokens=output)


def requested_output(llm: Any, kwargs: Mapping[str, Any] | None = None) -> tuple[int | None, str]:
    """The output tokens a request of ``llm`` asks for, and the name it goes by: the call's
    ``kwargs``, then ``llm.additional_kwargs``, then the LLM's own fields (``max_tokens``, ...),
    then ``metadata.num_output`` when positive (LlamaIndex's ``OpenAI()`` leaves ``max_tokens``
    unset and says ``num_output=-1``: nothing is asked, and the core's default reserve holds).

    >>> from llama_index.core.llms import MockLLM
    >>> requested_output(MockLLM(max_tokens=64))
    (64, 'max_tokens')
    """
    found = core_requested_output(kwargs, getattr(llm, "additional_kwargs", None), model=llm)
    if found[0] is not None:
        return found
    metadata = getattr(llm, "metadata", None)
    return _positive(getattr(metadata, "num_output", None)), "max_tokens"


def provider_of(llm: Any) -> str | None:
    """The provider an LLM class calls, by its class name (``OpenAI``, ``Anthropic``,
    ``Gemini``, ...), ``None`` when it says nothing known: the window's provider then rules."""
    name = type(llm).__name__.lower()
    for provider in ("anthropic", "gemini", "vertex", "openai"):
        if provider in name:
            return provider
    return None
