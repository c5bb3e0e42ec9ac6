"""What the ``RunnableWithMessageHistory`` call that is reading a history will send with it.

``BaseChatMessageHistory.messages`` takes no argument, and callbacks do not see a streamed call's
input when its history loads, so the input is read where LangChain holds it: the ``value`` of
the history-loading step (``_enter_history`` / ``_aenter_history``), interpreted as that step
interprets it (``input_messages_key``, ``_get_input_messages``). Anything unexpected gives
``None``: the history then reads as if no call were loading it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from langchain_session_migrator._convert import message_to_core
from session_migrator import InvalidMessageError, Message, TokenCounter

__all__ = ["CallInput", "input_being_loaded"]


@dataclass(frozen=True)
class CallInput:
    """The input messages of the call loading the history (not in the history yet).

    ``question`` is the text of its last human message; ``answers`` are the tool call ids its
    tool messages answer (a trailing call in the history whose results these are goes with them).
    """

    messages: tuple[Message, ...]
    question: str | None
    answers: frozenset[str]
    _tokens: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def tokens(self, counter: TokenCounter) -> int:
        """What the input costs by ``counter`` (counted once per counter)."""
        held = self._tokens.get(counter.name)
        if held is None:
            held = self._tokens[counter.name] = sum(counter.count_message(m) for m in self.messages)
        return held


def call_input(sent: list[BaseMessage]) -> CallInput:
    """The :class:`CallInput` of the messages ``sent``."""
    core: list[Message] = []
    for message in sent:
        try:
            core.append(message_to_core(message))
        except InvalidMessageError:  # a legacy FunctionMessage: not counted
            continue
    question = next(
        (str(m.text).strip() or None for m in reversed(sent) if isinstance(m, HumanMessage)), None
    )
    answers = frozenset(m.tool_call_id for m in sent if isinstance(m, ToolMessage))
    return CallInput(tuple(core), question, answers)


#: The code of ``RunnableWithMessageHistory``'s history-loading steps (sync and async), once
#: looked up.
_LOADERS: frozenset[CodeType] | None = None


def input_being_loaded(frame: FrameType) -> CallInput | None:
    """The input of the ``RunnableWithMessageHistory`` call whose history-loading step made
    this read (``frame``: the reader's caller; the step is it or its caller), else ``None``.
    """
    global _LOADERS
    if _LOADERS is None:
        from langchain_core.runnables.history import RunnableWithMessageHistory

        loader = RunnableWithMessageHistory
        _LOADERS = frozenset((loader._enter_history.__code__, loader._aenter_history.__code__))
    step = frame if frame.f_code in _LOADERS else frame.f_back
    if step is None or step.f_code not in _LOADERS:
        return None
    owner: Any = step.f_locals.get("self")
    value: Any = step.f_locals.get("value")
    try:
        key = owner.input_messages_key
        sent = owner._get_input_messages(value[key] if key else value)
    except Exception:  # an input the chain itself will reject: not ours to report
        return None
    return call_input(list(sent))
