"""A framework's facts about a model, the lookup's last source before an error.

A framework knows some of a model's window itself: a LangChain chat model's ``profile``
(``max_input_tokens``, ``max_output_tokens``), a LlamaIndex LLM's ``metadata`` (its
``context_window`` and ``num_output``). :func:`~session_migrator.lookup_model` with
``framework=`` merges them with what the table (or an override, or the live cache) knows of the
name, the same way for every adapter:

- a name the table knows keeps its provider, tokenizer and date; the framework's window and
  output replace the table's where it gives them, a window as large as the input it gives, and
  an input no larger than the table's own cap where the window is the table's (a class that
  does not know the cap does not lift it);
- a name nothing knows is described by the framework's facts alone (its tokenizer inferred from
  the name), when they give a window or an input; else the lookup raises
  :class:`~session_migrator.UnknownModelError`.
"""

from __future__ import annotations

from session_migrator.models._tokenizers import infer_tokenizer
from session_migrator.models._windows import ModelWindow

__all__ = ["with_framework_facts"]


def with_framework_facts(
    name: str,
    base: ModelWindow | None,
    framework: str,
    *,
    context_window: int | None,
    max_input_tokens: int | None,
    max_output_tokens: int | None,
    provider: str | None,
) -> ModelWindow | None:
    """The window of ``name`` from ``framework``'s facts and ``base`` (what the lookup found,
    or ``None``); ``None`` when neither knows a window. ``source`` is ``framework``."""
    if base is None:
        if context_window is None and max_input_tokens is None:
            return None
        window = context_window or (max_input_tokens or 0) + (max_output_tokens or 0)
        return ModelWindow(
            name=name.strip(),
            provider=provider or "custom",
            context_window=window,
            max_input_tokens=min(max_input_tokens or window, window),
            max_output_tokens=max_output_tokens,
            tokenizer=infer_tokenizer(name),
            source=framework,
        )
    window = context_window or max(base.context_window, max_input_tokens or 0)
    room = min(max_input_tokens or window, window)
    if window == base.context_window:
        room = min(room, base.max_input_tokens)
    output = max_output_tokens if max_output_tokens is not None else base.max_output_tokens
    return ModelWindow(
        name=base.name,
        provider=base.provider,
        context_window=window,
        max_input_tokens=room,
        max_output_tokens=output,
        tokenizer=base.tokenizer,
        source=framework,
        as_of=base.as_of,
    )
