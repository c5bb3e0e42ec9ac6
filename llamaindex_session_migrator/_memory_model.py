"""The model side of :class:`SessionMigratorMemory`: pinning a model and reading back what the
last ``get`` fitted to, as the memory's base :class:`_MemoryModel`.

It owns ``set_model``, ``model_window``, ``model_source``, ``last_report``, ``session_id``,
``store`` and the hook that records the model of a chat call which carried what the memory
handed out (``_observe``). Resolving the window and fitting stay in
:mod:`llamaindex_session_migrator._memory`, which declares the attributes used here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llamaindex_session_migrator._models import ModelLike
from llamaindex_session_migrator._tracking import ModelSource
from session_migrator import MigrationReport, ModelWindow
from session_migrator.store import BaseSessionStore

if TYPE_CHECKING:
    from llamaindex_session_migrator._handout import HandOut
    from llamaindex_session_migrator._tracking import ModelTracker
    from session_migrator import SessionFitter


class _MemoryModel:
    """The model a :class:`SessionMigratorMemory` fits to, and its last fit's report (its base)."""

    if TYPE_CHECKING:  # the memory's fields and private attributes, and its fitter
        chat_store_key: str
        _tracker: ModelTracker
        _handout: HandOut
        _window: ModelWindow | None
        _source: ModelSource | None

        def _get_fitter(self) -> SessionFitter: ...

    def set_model(self, model: ModelLike | None) -> None:
        """Pin the model (a name, a LlamaIndex LLM read on every ``get``, or a window); it wins
        over every other source. ``None`` unpins. An unknown name raises
        :class:`~session_migrator.UnknownModelError` here, not at the next ``get``.
        """
        self._tracker.set_explicit(model)

    @property
    def model_window(self) -> ModelWindow | None:
        """The window the last ``get`` fitted to (``None`` before the first)."""
        return self._window

    @property
    def model_source(self) -> ModelSource | None:
        """Where that window came from: explicit, observed, llm, settings or default."""
        return self._source

    @property
    def last_report(self) -> MigrationReport | None:
        """The report of the last ``get``: decision, tokens before and after, what was cut."""
        result = self._handout.result
        return result.report if result is not None else None

    @property
    def session_id(self) -> str:
        return self.chat_store_key

    @property
    def store(self) -> BaseSessionStore:
        """The session store (opened when the memory was made)."""
        return self._get_fitter().store

    def _observe(self, messages: list[Any], model_dict: dict[str, Any], exact: bool) -> bool:
        """Record the model of a chat call if it carried what this memory handed out (see
        :meth:`HandOut.carried`)."""
        carried = self._handout.carried(messages, exact)
        if carried:
            self._tracker.observe(model_dict)
        return carried
