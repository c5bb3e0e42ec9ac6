"""Which model a LangChain history fits to, and how much room it keeps beside the history.

It owns :class:`_ModelChoice`, the part of :class:`FittedChatMessageHistory` that settles the
window of the next read (the model set explicitly, the one the call's configurable field
selects, the one a :class:`ModelWatcher` saw run, the last one the store's migration log
names) and the tokens kept free for what the chain adds around the history (the watcher's
measured prompt plus the call's input, or a default share before any run), with the constants
that bound it. Reading and writing the log stay in :mod:`langchain_session_migrator._history`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable

from langchain_session_migrator._callbacks import ModelWatcher
from langchain_session_migrator._history_state import _SessionState
from langchain_session_migrator._loading import CallInput
from langchain_session_migrator._models import input_window, window_for
from session_migrator import Budget, Message, ModelWindow, UnknownModelError, default_counter

#: Before the watcher has seen a run, this share of the input budget (at most
#: :data:`DEFAULT_RESERVE_CAP` tokens) is left for what the chain adds around the history.
DEFAULT_RESERVE_SHARE = 0.10
DEFAULT_RESERVE_CAP = 1024
#: A learned overhead is rounded up to a multiple of this, so similar calls fit alike (and the
#: next input may be a little longer than the last).
OVERHEAD_STEP = 64
#: The room kept beside the history is at most this share of the input budget.
MAX_RESERVE_SHARE = 0.85
#: The roles of a call's input messages (the rest of what a chain adds is its prompt).
_INPUT_ROLES = frozenset({"user", "tool"})


class _ModelChoice:
    """The model and the reserved room of a :class:`FittedChatMessageHistory` (its base)."""

    # set by FittedChatMessageHistory._setup
    session_id: str
    watcher: ModelWatcher | None
    reserve_tokens: int | None
    _state: _SessionState
    _explicit: ModelWindow | None
    _configured: ModelWindow | Callable[[], ModelWindow | None] | None
    _observed: ModelWindow | None
    _overhead: tuple[Message, ...] | None

    # -- the model ---------------------------------------------------------------------------

    def set_model(
        self, model: str | ModelWindow | BaseChatModel | Runnable[Any, Any] | None
    ) -> None:
        """Fit to ``model`` from now on (``None``: back to the configured/observed model).

        Raises :class:`~session_migrator.UnknownModelError` for a model without a known window.
        """
        if model is None:
            self._explicit = None
            return
        window = input_window(model)
        self._explicit = window
        if self.watcher is not None:
            self.watcher.register(window)

    @property
    def model(self) -> ModelWindow | None:
        """The window the next read fits to (``None``: no model known, reads give everything)."""
        configured = self._configured
        if callable(configured):
            configured = self._configured = configured()
        return self._explicit or configured or self._observed or self._logged_window()

    def _take_observation(self) -> None:
        if self.watcher is None:
            return
        observation = self.watcher.observation(self.session_id)
        if observation is None:
            return
        if observation.window is not None:
            self._observed = observation.window
        self._overhead = observation.overhead

    def _logged_window(self) -> ModelWindow | None:
        state = self._state
        with state.lock:
            if not state.logged_loaded:
                records = state.fitter.store.migrations(self.session_id)
                state.logged_target = records[-1].to_model if records else None
                state.logged_loaded = True
            name = state.logged_target
        if name is None:
            return None
        if self.watcher is not None:
            return self.watcher.resolve(name)
        try:
            return window_for(name)
        except UnknownModelError:
            return None

    def reserved_tokens(self, window: ModelWindow, asked: CallInput | None = None) -> int:
        """Tokens kept free for what the chain adds around the history, for ``window``.

        With what the watcher saw of the last run: what the chain added then besides its input
        (the prompt), plus ``asked``, this call's input (human and tool messages), or the last
        input when this one is not known. Before any run: ``asked`` plus 10% of the budget (at
        most 1,024 tokens) for the prompt. Rounded up to 64 tokens, at most
        :data:`MAX_RESERVE_SHARE` of the budget (the history keeps some room; the chat model
        guard, ``FitToModel``, fits what is still over).
        """
        if self.reserve_tokens is not None:
            return self.reserve_tokens
        budget = Budget.for_window(
            window, exact=True, reserve_output=self._state.fitter.reserve_output
        ).tokens
        counter = default_counter(window)
        now = asked.tokens(counter) if asked is not None else 0
        if self._overhead is not None:
            prompt = [m for m in self._overhead if asked is None or m.role not in _INPUT_ROLES]
            used = sum(counter.count_message(m) for m in prompt) + now
        else:
            used = now + min(DEFAULT_RESERVE_CAP, int(budget * DEFAULT_RESERVE_SHARE))
        return min(-(-used // OVERHEAD_STEP) * OVERHEAD_STEP, int(budget * MAX_RESERVE_SHARE))
