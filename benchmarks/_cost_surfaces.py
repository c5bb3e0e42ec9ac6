"""The surfaces :mod:`benchmarks.conversation_cost` replays a conversation through: this
project's (``migrate()``, ``SessionFitter`` with and without a compactor, the LangChain history,
the LlamaIndex memory) and the frameworks' built-ins (LangChain's ``SummarizationMiddleware``
and ``trim_messages``, LlamaIndex ``Memory``), and no fitting at all.

Each surface answers ``request`` (what it sends after the user's new messages), ``reply`` (the
model's answer is added) and ``ask`` (what it would send with a question asked aside). A
summarizer's latency is not slept: it is charged to the thread that called it
(:func:`charged`), so a turn's wait is its fit's own time plus the latency of the summaries
written on the request's thread; a summary written by a compactor's worker is charged to no
turn.
"""

from __future__ import annotations

import itertools
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from session_migrator import (
    Compactor,
    ExtractiveSummarizer,
    Message,
    ModelWindow,
    RequestFitter,
    SessionFitter,
    TokenCounter,
    counter_for,
    migrate,
)
from session_migrator.counting._encodings import get_encoding

_ENCODING = get_encoding("o200k_base")
_CHARGED: defaultdict[int, float] = defaultdict(float)
_LOCK = threading.Lock()
_NAMES = itertools.count()


def charged() -> float:
    """The summarizer latency charged to this thread so far."""
    with _LOCK:
        return _CHARGED[threading.get_ident()]


def _charge(seconds: float) -> None:
    with _LOCK:
        _CHARGED[threading.get_ident()] += seconds


def o200k(text: str) -> int:
    assert _ENCODING is not None, "o200k_base is not available offline"
    return len(_ENCODING.encode(text, disallowed_special=()))


class Surface(Protocol):
    calls: int

    def request(self, history: list[Message], new: list[Message]) -> list[Message]: ...
    def reply(self, messages: list[Message]) -> None: ...
    def ask(self, history: list[Message], question: Message) -> list[Message]: ...


class Latent:
    """The offline summary, as if a model took ``latency`` seconds to write it."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.calls = 0
        self._inner = ExtractiveSummarizer()

    @property
    def name(self) -> str:
        return f"model-{self.latency:g}s"

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str:
        self.calls += 1
        _charge(self.latency)
        # (the offline summary reads the whole part again, not the previous summary)
        return self._inner.summarize(messages, max_tokens=max_tokens, counter=counter)


class Whole:
    """No fitting: the whole history (the cache's best case, and over the budget)."""

    calls = 0

    def __init__(self, window: ModelWindow, system: Message) -> None:
        pass

    def request(self, history: list[Message], new: list[Message]) -> list[Message]:
        return list(history)

    def reply(self, messages: list[Message]) -> None:
        pass

    def ask(self, history: list[Message], question: Message) -> list[Message]:
        return [*history, question]


class Migrate:
    """``migrate()`` on the whole history at every turn (no state)."""

    calls = 0

    def __init__(self, window: ModelWindow, system: Message, strategy: str = "auto") -> None:
        self.window, self.strategy = window, strategy

    def request(self, history: list[Message], new: list[Message]) -> list[Message]:
        return migrate(history, self.window, strategy=self.strategy, reserve_output=0).messages

    def reply(self, messages: list[Message]) -> None:
        pass

    def ask(self, history: list[Message], question: Message) -> list[Message]:
        return self.request([*history, question], [question])


class Fitter:
    """A :class:`SessionFitter` on ``memory://``, appended to as the conversation goes; with a
    summarizer of ``latency`` seconds, in the request or (``background``) by a compactor,
    whose summaries are written between turns (turns at least ``latency`` apart)."""

    def __init__(
        self,
        window: ModelWindow,
        system: Message,
        strategy: str = "auto",
        latency: float | None = None,
        background: bool = False,
    ) -> None:
        self.summarizer = None if latency is None else Latent(latency)
        self.compactor = Compactor(workers=1) if background else None
        self.fitter = SessionFitter(
            f"cost-{next(_NAMES)}",
            store="memory://",
            strategy=strategy,
            summarizer=self.summarizer,
            reserve_output=0,
            compactor=self.compactor,
        )
        self.fitter.append([system])
        self.window = window

    @property
    def calls(self) -> int:
        return 0 if self.summarizer is None else self.summarizer.calls

    def request(self, history: list[Message], new: list[Message]) -> list[Message]:
        self.fitter.append(new)
        return self.fitter.fit(self.window).messages

    def reply(self, messages: list[Message]) -> None:
        self.fitter.append(messages)
        if self.compactor is not None:
            self.compactor.wait(60)  # (the model's answer and the user's next turn take longer)

    def ask(self, history: list[Message], question: Message) -> list[Message]:
        return [*self.fitter.fit(self.window, query=question.text).messages, question]


class Guard:
    """What the guards (``FitToModel``, ``FitToModelMiddleware``, the LlamaIndex guard) do at
    each call: a :class:`RequestFitter` given the whole conversation, keeping per conversation
    only the stable cut's state."""

    calls = 0

    def __init__(self, window: ModelWindow, system: Message, slack: float | None = None) -> None:
        extra = {} if slack is None else {"slack": slack}
        self.fitter = RequestFitter(reserve_output=0, **extra)
        # (the question asked aside goes through a guard of its own: it is not a turn of the
        # conversation the guard sees)
        self.aside = RequestFitter(reserve_output=0, **extra)
        self.window = window

    def request(self, history: list[Message], new: list[Message]) -> list[Message]:
        return self.fitter.fit(history, self.window).messages

    def reply(self, messages: list[Message]) -> None:
        pass

    def ask(self, history: list[Message], question: Message) -> list[Message]:
        return self.aside.fit([*history, question], self.window).messages


def _lc(messages: Sequence[Any]) -> list[Message]:
    role = {"human": "user", "ai": "assistant", "system": "system"}
    return [Message(role.get(m.type, "user"), str(m.content)) for m in messages]


def _to_lc(messages: Sequence[Message]) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    kinds = {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}
    return [kinds[m.role](content=m.text, id=m.id) for m in messages]


def _lc_counter(messages: Sequence[Any]) -> int:
    return sum(o200k(str(m.content)) + 4 for m in messages)


class LcHistory:
    """``FittedChatMessageHistory``, as ``RunnableWithMessageHistory`` reads and writes it (its
    history-loading read recalls by the call's input: the question asked aside is that input)."""

    calls = 0

    def __init__(self, window: ModelWindow, system: Message) -> None:
        from langchain_session_migrator import FittedChatMessageHistory

        self.history = FittedChatMessageHistory(
            f"cost-lc-{next(_NAMES)}", model=window, store="memory://", reserve_output=0
        )
        self.history.add_messages(_to_lc([system]))

    def request(self, history: list[Message], new: list[Message]) -> list[Message]:
        self.history.add_messages(_to_lc(new))
        return _lc(self.history.messages)

    def reply(self, messages: list[Message]) -> None:
        self.history.add_messages(_to_lc(messages))

    def ask(self, history: list[Message], question: Message) -> list[Message]:
        window = self.history.model
        assert window is not None
        fitted = self.history.fitter.fit(window, query=question.text).messages
        return [*fitted, question]


class Summarizing:
    """LangChain's ``SummarizationMiddleware`` as an agent runs it before each model call:
    over ``trigger`` tokens it summarizes the older part once and keeps the newest
    ``keep`` tokens; its model takes ``latency`` seconds, in the request."""

    def __init__(self, window: ModelWindow, system: Message, latency: float = 1.0) -> None:
        from langchain.agents.middleware import SummarizationMiddleware
        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

        self.calls = 0
        self.latency = latency
        counter = counter_for("o200k_base")
        outer = self

        class Model(GenericFakeChatModel):
            def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> Any:
                from langchain_core.messages import AIMessage
                from langchain_core.outputs import ChatGeneration, ChatResult

                outer.calls += 1
                _charge(outer.latency)
                text = " ".join(str(m.content) for m in messages)
                room = window.max_input_tokens // 8
                summary = ExtractiveSummarizer().summarize(
                    [Message("user", text)], max_tokens=room, counter=counter
                )
                return ChatResult(generations=[ChatGeneration(message=AIMessage(summary))])

        budget = window.max_input_tokens
        self.middleware = SummarizationMiddleware(
            Model(messages=iter(())),
            trigger=("tokens", int(budget * 0.9)),
            keep=("tokens", budget // 2),
            token_counter=_lc_counter,
        )
        self.state: list[Any] = _to_lc([system])

    def request(self, history: list[Message], new: list[Message]) -> list[Message]:
        from langchain_core.messages import RemoveMessage

        self.state += _to_lc(new)
        update = self.middleware.before_model({"messages": self.state}, None)  # type: ignore[arg-type]
        if update is not None:
            kept = update["messages"]
            self.state = [m for m in kept if not isinstance(m, RemoveMessage)]
        return _lc(self.state)

    def reply(self, messages: list[Message]) -> None:
        self.state += _to_lc(messages)

    def ask(self, history: list[Message], question: Message) -> list[Message]:
        return [*_lc(self.state), question]


class Trimmed:
    """LangChain's ``trim_messages`` (the newest messages that fit, the system prompt kept)."""

    calls = 0

    def __init__(self, window: ModelWindow, system: Message) -> None:
        self.budget = window.max_input_tokens

    def _trim(self, history: list[Message]) -> list[Message]:
        from langchain_core.messages import trim_messages

        kept = trim_messages(
            _to_lc(history),
            max_tokens=self.budget,
            token_counter=_lc_counter,
            strategy="last",
            include_system=True,
            start_on="human",
        )
        return _lc(kept)

    def request(self, history: list[Message], new: list[Message]) -> list[Message]:
        return self._trim(history)

    def reply(self, messages: list[Message]) -> None:
        pass

    def ask(self, history: list[Message], question: Message) -> list[Message]:
        return self._trim([*history, question])


class LiMemory:
    """LlamaIndex ``Memory`` (its default: the chat history within a share of ``token_limit``,
    older messages flushed out)."""

    calls = 0

    def __init__(self, window: ModelWindow, system: Message) -> None:
        from llama_index.core.memory import Memory

        self.memory = Memory.from_defaults(
            session_id=f"cost-li-{next(_NAMES)}",
            token_limit=window.max_input_tokens,
            tokenizer_fn=lambda text: [0] * o200k(text),
        )
        self._put([system])

    def _put(self, messages: Sequence[Message]) -> None:
        from llama_index.core.llms import ChatMessage

        for m in messages:
            self.memory.put(ChatMessage(role=m.role, content=m.text))

    def _get(self) -> list[Message]:
        return [Message(str(m.role.value), m.content or "") for m in self.memory.get()]

    def request(self, history: list[Message], new: list[Message]) -> list[Message]:
        self._put(new)
        return self._get()

    def reply(self, messages: list[Message]) -> None:
        self._put(messages)

    def ask(self, history: list[Message], question: Message) -> list[Message]:
        return [*self._get(), question]


class LiFitted:
    """``SessionMigratorMemory`` as a LlamaIndex agent reads and writes it (its ``get`` takes
    the call's input: the question asked aside is that input)."""

    calls = 0

    def __init__(self, window: ModelWindow, system: Message) -> None:
        from llamaindex_session_migrator import SessionMigratorMemory

        self.memory = SessionMigratorMemory.from_defaults(
            chat_store_key=f"cost-lim-{next(_NAMES)}",
            store="memory://",
            model=window,
            reserve_output=0,
        )
        self._put([system])

    def _put(self, messages: Sequence[Message]) -> None:
        from llama_index.core.llms import ChatMessage

        for m in messages:
            self.memory.put(ChatMessage(role=m.role, content=m.text))

    def request(self, history: list[Message], new: list[Message]) -> list[Message]:
        self._put(new)
        return [Message(str(m.role.value), m.content or "") for m in self.memory.get()]

    def reply(self, messages: list[Message]) -> None:
        self._put(messages)

    def ask(self, history: list[Message], question: Message) -> list[Message]:
        got = self.memory.get(input=question.text)
        return [*(Message(str(m.role.value), m.content or "") for m in got), question]


SURFACES: dict[str, Callable[[ModelWindow, Message], Surface]] = {
    "no fitting": Whole,
    "migrate(), auto": Migrate,
    "migrate(), trim": lambda w, s: Migrate(w, s, "trim"),
    "SessionFitter, auto": Fitter,
    "SessionFitter, auto, 1 s summarizer in the request": lambda w, s: Fitter(w, s, latency=1.0),
    "SessionFitter, auto, 1 s summarizer, compactor": lambda w, s: Fitter(
        w, s, latency=1.0, background=True
    ),
    "SessionFitter, auto, 10 s summarizer, compactor": lambda w, s: Fitter(
        w, s, latency=10.0, background=True
    ),
    "SessionFitter, trim": lambda w, s: Fitter(w, s, "trim"),
    "the guards (RequestFitter), auto": Guard,
    "the guards (RequestFitter), auto, slack=0": lambda w, s: Guard(w, s, slack=0.0),
    "LangChain FittedChatMessageHistory, auto": LcHistory,
    "LangChain SummarizationMiddleware, 1 s": Summarizing,
    "LangChain SummarizationMiddleware, 10 s": lambda w, s: Summarizing(w, s, 10.0),
    "LangChain trim_messages": Trimmed,
    "LlamaIndex SessionMigratorMemory, auto": LiFitted,
    "LlamaIndex Memory": LiMemory,
}
