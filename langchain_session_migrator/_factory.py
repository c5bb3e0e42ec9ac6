"""``FittedHistoryFactory``: the ``get_session_history`` for ``RunnableWithMessageHistory``."""

from __future__ import annotations

import functools
import inspect
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Self

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import ConfigurableFieldSpec, Runnable, RunnableBinding
from langchain_core.runnables.base import RunnableParallel, RunnableSequence
from langchain_core.runnables.configurable import RunnableConfigurableAlternatives
from langchain_core.runnables.fallbacks import RunnableWithFallbacks

from langchain_session_migrator._callbacks import ModelWatcher
from langchain_session_migrator._guard import FitToModel
from langchain_session_migrator._history import FittedChatMessageHistory
from langchain_session_migrator._history_state import _SessionState
from langchain_session_migrator._models import input_window, model_map, model_name, window_for
from langchain_session_migrator._summarizer import as_summarizer, check_store
from session_migrator import (
    DEFAULT_SLACK,
    Compactor,
    Compressor,
    Embeddings,
    ModelWindow,
    SessionFitter,
    Summarizer,
    UnknownModelError,
    check_slack,
    check_strategy,
)

__all__ = ["FittedHistoryFactory"]


class FittedHistoryFactory:
    """Builds the fitted history of each call, and the ``history_factory_config`` that feeds it.

    Pass the factory as ``get_session_history`` and :attr:`config_specs` as
    ``history_factory_config``; attach :attr:`watcher` to the chain. Then one
    ``{"configurable": {"session_id": ..., "model": ...}}`` selects both the configurable chat
    model and the window the history is fitted to:

    .. code-block:: python

        history = FittedHistoryFactory(store="sqlite:///chat.db", llm=llm)
        chain = RunnableWithMessageHistory(
            prompt | llm, history, input_messages_key="input",
            history_messages_key="history", history_factory_config=history.config_specs,
        ).with_config(callbacks=[history.watcher])
        chain.invoke({"input": "hi"}, {"configurable": {"session_id": "s1", "model": "small"}})

    ``llm`` is the configurable chat model (or a chain holding it): the alternatives of a
    ``configurable_alternatives`` model whose field id is ``model_key`` are registered, so the
    configured key (``"small"``) resolves to that model's ``profile``, and the field's spec is
    copied so LangChain sees one consistent ``model`` field. A configured value that is not a
    registered key is a model name (``init_chat_model(configurable_fields=("model",))``) or a
    chat model / window; ``models`` maps more keys or names to models (a list of chat models
    is keyed by their names), which the watcher uses too: a model's ``profile`` travels only
    with the object, so list the models that may run when their names are not in the table. With
    ``model_key=None`` the config carries only the session id and the model comes from the
    watcher (or ``FittedChatMessageHistory.set_model``). Note that ``RunnableWithMessageHistory``
    requires every key of ``history_factory_config`` in each call's ``configurable``.

    One store serves every session (:meth:`close` or ``with`` closes it when the factory opened
    it from a URL); the per-session state (fitted view, conversion cache) of the
    ``max_sessions`` most recent sessions is kept, so a warm read costs no tokenization. Other
    arguments are those of :class:`FittedChatMessageHistory`.

    >>> factory = FittedHistoryFactory(store="memory://", model_key=None)
    >>> [spec.id for spec in factory.config_specs]
    ['session_id']
    >>> factory("s1").session_id
    's1'
    """

    def __init__(
        self,
        *,
        store: Any = None,
        strategy: str | Compressor = "auto",
        summarizer: Summarizer | BaseChatModel | Runnable[Any, Any] | None = None,
        llm: Runnable[Any, Any] | None = None,
        models: Mapping[str, Any] | Sequence[Any] | None = None,
        model_key: str | None = "model",
        session_key: str = "session_id",
        reserve_output: int | None = None,
        reserve_tokens: int | None = None,
        watcher: ModelWatcher | None = None,
        workspace: str = "default",
        max_sessions: int = 256,
        slack: float = DEFAULT_SLACK,
        embeddings: Any = None,
        compactor: Compactor | bool | None = None,
    ) -> None:
        from session_migrator.store import open_store

        self.slack = check_slack(slack)  # before the store is opened, so a bad value leaks none
        check_store(store)
        self._owns_store = store is None or isinstance(store, str)
        self.store = open_store(store) if self._owns_store else store
        check_strategy(strategy)  # (now, not at the first call)
        self.strategy = strategy
        self.summarizer = as_summarizer(summarizer)
        self.embeddings = None if embeddings is None else Embeddings.of(embeddings)
        self.compactor = compactor
        self.model_key = model_key
        self.session_key = session_key
        self.reserve_output = reserve_output
        self.reserve_tokens = reserve_tokens
        self.workspace = workspace
        self.max_sessions = max_sessions
        self.watcher = watcher or ModelWatcher(session_key=session_key)
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, _SessionState] = OrderedDict()
        self._models: dict[str, ModelWindow] = {}
        model_spec: ConfigurableFieldSpec | None = None
        if llm is not None and model_key is not None:
            found = _alternatives(llm, model_key)
            for key, runnable in found.items():
                self._register(key, runnable)
            model_spec = _spec_of(llm, model_key)
            if not found and model_spec is None:
                _check_key(llm, model_key)
        for key, model in model_map(models).items():
            self._register(key, model)
        specs = [
            ConfigurableFieldSpec(
                id=session_key,
                annotation=str,
                name="Session ID",
                description="Unique identifier for a session.",
                default="",
                is_shared=True,
            )
        ]
        parameters = [inspect.Parameter(session_key, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        if model_key is not None:
            specs.append(
                model_spec
                or ConfigurableFieldSpec(
                    id=model_key,
                    annotation=str,
                    name="Model",
                    description="The chat model to run; the history is fitted to its window.",
                    default=None,
                    is_shared=True,
                )
            )
            parameters.append(
                inspect.Parameter(model_key, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
            )
        self.config_specs: list[ConfigurableFieldSpec] = specs
        self.__signature__ = inspect.Signature(parameters)

    def _register(self, key: str, model: Any) -> None:
        window = input_window(model)
        if not isinstance(model, str | ModelWindow) and model_name(model) is None:
            # a model that reports no name (its window is named by its class) goes by its key,
            # so two of one class stay apart (in the migration log, say)
            window = window.with_changes(name=key)
        self._models[key] = window
        self.watcher.register(window, name=key)

    def _guard_settings(self) -> dict[str, Any]:
        """What :class:`FitToModel` takes from this factory."""
        return {
            "strategy": self.strategy,
            "summarizer": self.summarizer,
            "reserve_output": self.reserve_output,
            "embeddings": self.embeddings,
            "registry": dict(self._models),
        }

    @property
    def windows(self) -> dict[str, ModelWindow]:
        """The registered windows by key or name (a copy): configurable keys and ``models``."""
        return dict(self._models)

    def resolve(self, model: Any) -> ModelWindow | None:
        """The window a configured value stands for (``None`` for no value).

        Raises :class:`~session_migrator.UnknownModelError` for a name nothing knows.
        """
        if model is None or model == "":
            return None
        if isinstance(model, str) and model in self._models:
            return self._models[model]
        try:
            window = window_for(model, registry=self._models)
        except UnknownModelError as exc:
            if not isinstance(model, str) or not self._models:
                raise
            keys = ", ".join(repr(k) for k in sorted(self._models))
            raise exc.with_remedy(
                f"The registered keys are {keys}: configure one of them, or register "
                f"{model!r} with models={{{model!r}: chat_model_or_window}}."
            ) from None
        self.watcher.register(window)
        return window

    def __call__(self, *args: Any, **kwargs: Any) -> FittedChatMessageHistory:
        """The history for one call: ``(session_id)`` or ``(session_id, model)``."""
        bound = self.__signature__.bind(*args, **kwargs)
        bound.apply_defaults()
        session_id = bound.arguments[self.session_key]
        model = bound.arguments.get(self.model_key) if self.model_key is not None else None
        if not isinstance(session_id, str) or not session_id:
            raise ValueError(
                f"a non-empty {self.session_key!r} is needed in config['configurable'], "
                f"got {session_id!r}"
            )
        configured: ModelWindow | Callable[[], ModelWindow | None] | None
        if model is None or model == "":
            configured = None
        elif isinstance(model, str) and model in self._models:
            configured = self._models[model]
        else:  # resolved at the history's first read, in the caller's worker thread when async
            configured = functools.partial(self.resolve, model)
        return FittedChatMessageHistory._view(
            session_id,
            self._state(session_id),
            watcher=self.watcher,
            reserve_tokens=self.reserve_tokens,
            configured=configured,
        )

    def with_message_history(
        self, runnable: Runnable[Any, Any], **kwargs: Any
    ) -> Runnable[Any, Any]:
        """``RunnableWithMessageHistory(runnable, self, **kwargs)`` wired to this factory: the
        ``history_factory_config`` is :attr:`config_specs`, the :attr:`watcher` is attached, and
        a call whose ``configurable`` has no model uses the model field's default (the
        configurable model's ``default_key``; ``RunnableWithMessageHistory`` alone refuses such
        a call with "Missing keys"). ``kwargs`` are ``RunnableWithMessageHistory``'s
        (``input_messages_key``, ``history_messages_key``, ...). Its deprecation warning
        (langchain-core 1.x) is not raised again here: the class is supported until 2.0.
        """
        from langchain_core._api import LangChainDeprecationWarning
        from langchain_core.runnables.history import RunnableWithMessageHistory

        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore",
                message="RunnableWithMessageHistory is deprecated",
                category=LangChainDeprecationWarning,
            )
            chain = RunnableWithMessageHistory(
                runnable, self, history_factory_config=self.config_specs, **kwargs
            )
        defaults: dict[str, Any] = {}
        if self.model_key is not None:
            spec = next(s for s in self.config_specs if s.id == self.model_key)
            defaults[self.model_key] = spec.default if spec.default is not None else ""
        return chain.with_config(configurable=defaults, callbacks=[self.watcher])

    def _state(self, session_id: str) -> _SessionState:
        with self._lock:
            state = self._sessions.get(session_id)
            if state is None:
                fitter = SessionFitter(
                    session_id,
                    store=self.store,
                    strategy=self.strategy,
                    summarizer=self.summarizer,
                    reserve_output=self.reserve_output,
                    workspace=self.workspace,
                    slack=self.slack,
                    embeddings=self.embeddings,
                    compactor=self.compactor,
                )
                state = self._sessions[session_id] = _SessionState(fitter)
            self._sessions.move_to_end(session_id)
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
            return state

    def close(self) -> None:
        """Close the store if the factory opened it from a URL (a given store is left open)."""
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FittedHistoryFactory(store={self.store!r}, model_key={self.model_key!r})"


def _walk(runnable: Any, depth: int = 0) -> Iterator[Any]:
    if depth > 32:
        return
    yield runnable
    children: list[Any] = []
    if isinstance(runnable, RunnableSequence):
        children = list(runnable.steps)
    elif isinstance(runnable, RunnableParallel):
        children = list(runnable.steps__.values())
    elif isinstance(runnable, RunnableBinding):
        children = [runnable.bound]
    elif isinstance(runnable, FitToModel):
        children = [runnable.model]
    elif isinstance(runnable, RunnableWithFallbacks):
        children = [runnable.runnable, *runnable.fallbacks]
    elif isinstance(runnable, RunnableConfigurableAlternatives):
        children = [runnable.default, *runnable.alternatives.values()]
    for child in children:
        yield from _walk(child, depth + 1)


def _alternatives(llm: Runnable[Any, Any], key: str) -> dict[str, Runnable[Any, Any]]:
    found: dict[str, Runnable[Any, Any]] = {}
    for node in _walk(llm):
        if isinstance(node, RunnableConfigurableAlternatives) and node.which.id == key:
            found[node.default_key] = node.default
            for name, alternative in node.alternatives.items():
                if isinstance(alternative, Runnable):
                    found[name] = alternative
    return found


def _check_key(llm: Runnable[Any, Any], key: str) -> None:
    """Refuse an ``llm`` whose configurable fields are all named other than ``model_key``."""
    try:
        ids = sorted({spec.id for spec in llm.config_specs})
    except ValueError:
        return
    if ids:
        raise ValueError(
            f"llm has no configurable field {key!r} (its fields: {', '.join(map(repr, ids))}); "
            f"pass model_key= the id of the field that selects the model, e.g. "
            f"model_key={ids[0]!r}"
        )


def _spec_of(llm: Runnable[Any, Any], key: str) -> ConfigurableFieldSpec | None:
    try:
        specs = llm.config_specs
    except ValueError:
        return None
    return next((spec for spec in specs if spec.id == key), None)
