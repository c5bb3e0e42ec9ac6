"""Which model the memory fits to: the sources, their order, and what was observed.

First hit wins: an explicit model (``set_model``); else the newest of (a) the configured LLM
(the one given to the memory, else ``Settings.llm``), whose metadata is read on every call, and
(b) the model a chat call carrying the memory's history really used; else LlamaIndex's default
window. "Newest" is decided by a sequence number: a configured model that changes after an
observation wins again, and an observation after the last configuration change wins over it.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Hashable, Mapping
from typing import Any, Literal

from llama_index.core.llms import LLM
from llama_index.core.settings import Settings

from llamaindex_session_migrator._models import (
    DEFAULT_WINDOW,
    ModelLike,
    window_for,
    window_from_metadata,
)
from session_migrator import ModelWindow

__all__ = ["ModelSource", "ModelTracker"]

#: Where the window of a fit came from.
ModelSource = Literal["explicit", "observed", "llm", "settings", "default"]


class ModelTracker:
    """The model sources of one memory (thread-safe)."""

    def __init__(self, llm: LLM | None = None) -> None:
        self.llm = llm
        self.explicit: ModelLike | None = None
        self._lock = threading.Lock()
        self._seq = itertools.count()
        self._config_sig: Hashable = None
        self._config_seq = -1
        self._observed: tuple[int, ModelWindow] | None = None
        self._metadata_cache: tuple[Hashable, ModelWindow] | None = None
        self._last: ModelWindow | None = None
        self._observed_cache: tuple[Hashable, ModelWindow] | None = None

    def set_explicit(self, model: ModelLike | None) -> None:
        """Pin ``model`` (checked now: an unknown name raises ``UnknownModelError``)."""
        if model is not None and not isinstance(model, LLM):
            window_for(model)
        self.explicit = model

    def _llm_window(self, llm: LLM) -> ModelWindow:
        metadata = llm.metadata
        key = (metadata.model_name, metadata.context_window, metadata.num_output)
        cached = self._metadata_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        window = window_for(llm)
        self._metadata_cache = (key, window)
        return window

    def resolve(self) -> tuple[ModelWindow, ModelSource]:
        """The window to fit to now, and where it came from."""
        with self._lock:
            window, source = self._resolve()
            self._last = window
            return window, source

    def _resolve(self) -> tuple[ModelWindow, ModelSource]:
        explicit = self.explicit
        if explicit is not None:
            if isinstance(explicit, LLM):
                return self._llm_window(explicit), "explicit"
            return window_for(explicit), "explicit"
        llm = self.llm
        source: ModelSource = "llm"
        if llm is None:
            llm = Settings._llm  # the configured LLM, without resolving LlamaIndex's default
            source = "settings"
        configured = self._llm_window(llm) if llm is not None else None
        sig = (source, id(llm), configured)
        if sig != self._config_sig:
            self._config_sig = sig
            self._config_seq = next(self._seq)
        observed = self._observed
        if observed is not None and (configured is None or observed[0] > self._config_seq):
            return observed[1], "observed"
        if configured is not None:
            return configured, source
        return DEFAULT_WINDOW, "default"

    def observe(self, model_dict: Mapping[str, Any]) -> None:
        """Record the model of a chat call that carried the memory's history (an event's
        ``model_dict``); ignored when it says no window or is the one last resolved.

        The window of the last ``model_dict`` seen is kept: a call costs no lookup (an unknown
        name's lookup ranks every known name) unless the model changed."""
        key = tuple(
            str(model_dict.get(k))
            for k in ("class_name", "model_name", "model", "context_window", "num_output")
        )
        cached = self._observed_cache
        if cached is not None and cached[0] == key:
            window = cached[1]
        else:
            try:
                window = window_from_metadata(model_dict)
            except ValueError:
                return
            self._observed_cache = (key, window)
        with self._lock:
            if window != self._last:
                self._observed = (next(self._seq), window)
