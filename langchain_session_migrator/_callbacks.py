"""A callback handler that records which model really ran for a session, and what it cost.

Attach one :class:`ModelWatcher` to the chain (``chain.with_config(callbacks=[watcher])``) and
give the same watcher to the histories (the factory does both). For every chat model run it
records, per session:

- the model that ran: ``metadata["ls_model_name"]`` of ``on_chat_model_start`` (LangChain puts
  the running model's name there, also behind configurable models, fallbacks and routers);
- the *overhead*: the messages sent that did not come from the fitted history (the prompt's
  system message, the new input), which the next fit keeps room for;
- after the run, the response's real ``usage_metadata["input_tokens"]``, which calibrates the
  estimate for models whose tokenizer is estimated (see :func:`session_migrator.calibrate`).

The session of a run is ``metadata["session_id"]`` when the caller put it there, else the
session whose fitted messages the run was sent (histories register what they hand out with
:meth:`ModelWatcher.track`). A run of a brand-new, empty session is attributed to no session.
Runs tagged :data:`~langchain_session_migrator._summarizer.SUMMARIZER_TAG` (the summarizer's own
calls) are ignored.

Histories read an observation only at safe points (when the factory hands a history out for a
call, and after the call's messages are added), so the two reads of one
``RunnableWithMessageHistory`` call always agree.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import LLMResult

from langchain_session_migrator._convert import message_to_core
from langchain_session_migrator._models import input_window, model_map, window_for
from langchain_session_migrator._summarizer import SUMMARIZER_TAG
from session_migrator import (
    InvalidMessageError,
    Message,
    ModelWindow,
    UnknownModelError,
    calibrate,
    default_counter,
)

__all__ = ["ModelWatcher", "Observation"]

_log = logging.getLogger("langchain_session_migrator")

#: Calibrate only when the estimate is off by more than this share: every change of the factor
#: changes the counter (and its caches), so tiny corrections cost more than they give.
CALIBRATION_TOLERANCE = 0.03
#: Runs remembered between their start and their end, at most.
MAX_OPEN_RUNS = 1024


@dataclass(frozen=True)
class Observation:
    """What the watcher saw of the newest model run of one session.

    ``window`` is ``None`` when the model's name is unknown (register it with
    :meth:`ModelWatcher.register`). ``overhead`` holds the messages sent around the history.
    ``input_tokens`` is the provider's count when the response reported usage, and
    ``estimated_tokens`` this library's count of the same request.
    """

    model: str
    window: ModelWindow | None
    overhead: tuple[Message, ...] = ()
    input_tokens: int | None = None
    estimated_tokens: int | None = None
    seq: int = 0


@dataclass
class _Run:
    session: str | None
    model: str
    window: ModelWindow | None
    sent: list[Message]
    seq: int


class ModelWatcher(BaseCallbackHandler):
    """Records, per session, which chat model ran, what it was sent, and its real usage.

    ``models`` maps model names (or configurable-alternative keys) to chat models, names or
    windows whose windows the watcher should use for those names (e.g. models with a
    ``profile``, which a name alone does not carry); a list of chat models is keyed by their
    names. ``calibrate=False`` turns usage
    calibration off. ``session_key`` is the metadata key read for a run's session.

    >>> watcher = ModelWatcher()
    >>> watcher.observation("s1") is None
    True
    """

    run_inline = True

    def __init__(
        self,
        *,
        models: Mapping[str, Any] | Sequence[Any] | None = None,
        calibrate: bool = True,
        session_key: str = "session_id",
        max_sessions: int = 1024,
    ) -> None:
        super().__init__()
        self.calibrate = calibrate
        self.session_key = session_key
        self.max_sessions = max_sessions
        self._lock = threading.RLock()
        self._windows: dict[str, ModelWindow] = {}
        self._tracked: OrderedDict[str, dict[str, Message]] = OrderedDict()
        self._owner: dict[str, str] = {}
        # the LangChain objects handed out, by their object key (see _object_key): a message
        # whose user gave it no id is recognised by identity
        self._objects: dict[str, BaseMessage] = {}
        self._observations: OrderedDict[str, Observation] = OrderedDict()
        self._runs: dict[UUID, _Run] = {}
        self._seq = 0
        self.last: Observation | None = None
        for name, model in model_map(models).items():
            self.register(input_window(model), name=name)

    # -- what histories use ----------------------------------------------------------------

    def register(self, window: ModelWindow, *, name: str | None = None) -> None:
        """Use ``window`` for runs whose model is named ``name`` (default: ``window.name``)."""
        with self._lock:
            self._windows[name or window.name] = window
            self._windows.setdefault(window.name, window)

    def resolve(self, name: str) -> ModelWindow | None:
        """The window for a model name: registered, else the core's lookup, else ``None``."""
        with self._lock:
            known = self._windows.get(name)
        if known is not None:
            return known
        try:
            return window_for(name)
        except UnknownModelError:
            _log.debug("model %r ran but its window is unknown; register it", name)
            return None

    def track(
        self,
        session_id: str,
        messages: Sequence[Message],
        handed_out: Sequence[BaseMessage] = (),
    ) -> None:
        """Remember the fitted messages handed out for ``session_id`` (to recognise its runs):
        by id, and by identity of the LangChain objects ``handed_out`` (one per message)."""
        with self._lock:
            old = self._tracked.pop(session_id, None)
            if old:
                self._forget(session_id, old)
            current = {m.id: m for m in messages}
            for obj, message in zip(handed_out, messages, strict=False):
                key = _object_key(obj)
                current[key] = message
                self._objects[key] = obj
            self._tracked[session_id] = current
            for message_id in current:
                self._owner[message_id] = session_id
            while len(self._tracked) > self.max_sessions:
                dropped_session, dropped = self._tracked.popitem(last=False)
                self._forget(dropped_session, dropped)

    def _forget(self, session_id: str, tracked: Mapping[str, Message]) -> None:
        for key in tracked:
            if self._owner.get(key) == session_id:
                del self._owner[key]
                self._objects.pop(key, None)

    def _owner_of(self, message: BaseMessage) -> str | None:
        key = _object_key(message)
        if self._objects.get(key) is message:
            return self._owner.get(key)
        return self._owner.get(message.id) if message.id is not None else None

    def observation(self, session_id: str) -> Observation | None:
        """The newest run of ``session_id`` (``None`` before any)."""
        with self._lock:
            return self._observations.get(session_id)

    # -- callbacks -------------------------------------------------------------------------

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if tags and SUMMARIZER_TAG in tags:
            return
        metadata = metadata or {}
        name = metadata.get("ls_model_name")
        if not isinstance(name, str) or not name or not messages:
            return
        window = self.resolve(name)
        sent = messages[0]
        with self._lock:
            session = metadata.get(self.session_key)
            if not isinstance(session, str):
                session = next((o for o in map(self._owner_of, sent) if o is not None), None)
            tracked = self._tracked.get(session, {}) if session is not None else {}
            objects = {k: self._objects[k] for k in tracked if k in self._objects}
        counter = default_counter(window) if window is not None else None
        needs_sent = session is not None or (
            self.calibrate and counter is not None and not counter.exact
        )
        core = _to_core(sent, tracked, objects) if needs_sent else []
        overhead = tuple(m for m in core if m.id not in tracked)
        with self._lock:
            self._seq += 1
            observation = Observation(name, window, overhead, seq=self._seq)
            self.last = observation
            if session is not None:
                self._observations[session] = observation
                self._observations.move_to_end(session)
                while len(self._observations) > self.max_sessions:
                    self._observations.popitem(last=False)
            self._runs[run_id] = _Run(session, name, window, core, self._seq)
            while len(self._runs) > MAX_OPEN_RUNS:  # runs that never ended (a crashed caller)
                self._runs.pop(next(iter(self._runs)))

    def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            run = self._runs.pop(run_id, None)
        if run is None:
            return
        observed = _input_tokens(response)
        if observed is None or run.window is None:
            return
        counter = default_counter(run.window)
        estimated = counter.count_messages(run.sent)
        with self._lock:
            current = self._observations.get(run.session) if run.session is not None else None
            if run.session is not None and current is not None and current.seq == run.seq:
                updated = replace(current, input_tokens=observed, estimated_tokens=estimated)
                self._observations[run.session] = updated
                if self.last is current:
                    self.last = updated
        if (
            self.calibrate
            and not counter.exact
            and estimated > 0
            and abs(observed / estimated - 1.0) > CALIBRATION_TOLERANCE
        ):
            calibrate(run.window.name, estimated=estimated, observed=observed)

    def on_llm_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            self._runs.pop(run_id, None)

    def __repr__(self) -> str:
        last = self.last.model if self.last is not None else None
        return f"ModelWatcher(sessions={len(self._observations)}, last={last!r})"


def _object_key(message: BaseMessage) -> str:
    return f"\x00{id(message)}"


def _to_core(
    sent: list[BaseMessage], tracked: Mapping[str, Message], objects: Mapping[str, BaseMessage]
) -> list[Message]:
    """The core messages of a run: the history's own where tracked, the rest converted."""
    out: list[Message] = []
    for message in sent:
        key = _object_key(message)
        if objects.get(key) is message:
            out.append(tracked[key])
            continue
        if message.id is not None and message.id in tracked:
            out.append(tracked[message.id])
            continue
        try:
            out.append(message_to_core(message))
        except InvalidMessageError:  # a legacy FunctionMessage: not counted
            continue
    return out


def _input_tokens(response: LLMResult) -> int | None:
    for generations in response.generations:
        for generation in generations:
            message = getattr(generation, "message", None)
            if isinstance(message, AIMessage) and message.usage_metadata is not None:
                tokens = message.usage_metadata.get("input_tokens")
                if tokens > 0:
                    return tokens
    output = response.llm_output if isinstance(response.llm_output, Mapping) else {}
    usage = output.get("token_usage") or output.get("usage")
    if isinstance(usage, Mapping):
        for key in ("prompt_tokens", "input_tokens"):
            value: Any = usage.get(key)
            if isinstance(value, int) and value > 0:
                return value
    return None
