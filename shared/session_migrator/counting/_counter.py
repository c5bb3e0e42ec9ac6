"""What a counter is: the chat format's accounting, the :class:`TokenCounter` protocol and the
:class:`BaseCounter` every counter of the library derives from, with its caches.

Message accounting follows the OpenAI chat format: every message costs
:data:`TOKENS_PER_MESSAGE` plus its role and content, a ``name`` costs :data:`TOKENS_PER_NAME`
more, and a list of messages costs :data:`REPLY_PRIMING` for the assistant reply that follows.
Tool calls count their name, arguments and id plus :data:`TOKENS_PER_TOOL_CALL`; a tool result
counts its content and its call id; an image part what the counter's image rule says.

Counts are cached per message and counter: on the message object itself, and by the message's
content fingerprint, so counting a session again after one new message tokenizes only that one.
The counters themselves (exact, estimated, heuristic) and the choice of one for a model are
:mod:`session_migrator.counting._tokens`'.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from session_migrator.counting._image_tokens import OPENAI_TILES, ImageRule
from session_migrator.messages._messages import Message

__all__ = [
    "REPLY_PRIMING",
    "TOKENS_PER_MESSAGE",
    "TOKENS_PER_NAME",
    "TOKENS_PER_TOOL_CALL",
    "BaseCounter",
    "EstimateWarning",
    "TokenCount",
    "TokenCounter",
    "counted_exactly",
    "memo_get",
    "memo_put",
]


TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_PER_TOOL_CALL = 3
REPLY_PRIMING = 3

_CACHE_LIMIT = 500_000


class EstimateWarning(UserWarning):
    """Counts are estimated because no exact tokenizer is available."""


@dataclass(frozen=True, slots=True)
class TokenCount:
    """A count and whether it is exact (``False`` means an estimate)."""

    tokens: int
    exact: bool
    counter: str


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens for one model family.

    ``name`` identifies the counting rule (it keys the caches: two counters with the same name
    must give the same counts); ``exact`` says whether counts are exact.
    """

    @property
    def name(self) -> str: ...

    @property
    def exact(self) -> bool: ...

    def count_text(self, text: str) -> int: ...

    def count_message(self, message: Message) -> int: ...

    def count_messages(self, messages: Sequence[Message]) -> int: ...


def memo_get(message: Message, key: str) -> int | None:
    """The count memoised on ``message`` under ``key`` (a counter's name), or ``None``."""
    memo = message._memo
    if memo is None:
        return None
    if type(memo) is tuple:
        return memo[1] if memo[0] == key else None
    return memo.get(key)  # type: ignore[no-any-return]


def memo_put(message: Message, key: str, tokens: int) -> None:
    """Memoise a count on ``message``: one pair for the first counter (the usual case), a dict
    once a second counter counts it.
    """
    memo = message._memo
    if memo is None or (type(memo) is tuple and memo[0] == key):
        object.__setattr__(message, "_memo", (key, tokens))
    elif type(memo) is tuple:
        object.__setattr__(message, "_memo", {memo[0]: memo[1], key: tokens})
    else:
        memo[key] = tokens


class BaseCounter:
    """Message accounting and caching on top of :meth:`count_text`; subclasses count text.

    A message's count is kept on the message object (a pair for the first counter that counts
    it, a small dict once there are more: a long session holds many messages), and by content
    fingerprint.
    """

    _exact: bool
    _name: str = ""
    #: counts offline: a text's count never changes and its exactness is known before counting
    #: (an online counter learns that while counting, and may fall back to estimates). The
    #: built-in local counters say so; a subclass that does may set it too.
    local: bool = False

    def __init__(self, image_rule: ImageRule = OPENAI_TILES) -> None:
        self._by_fingerprint: dict[str, int] = {}
        self._roles: dict[str, int] = {}
        self._lock = threading.Lock()
        self._image_rule = image_rule

    @property
    def image_rule(self) -> ImageRule:
        """How this counter prices image parts (see ``_image_tokens``)."""
        return self._image_rule

    def image_tokens(self, message: Message) -> int:
        """What the image parts of ``message`` cost under :attr:`image_rule` (never cached)."""
        if isinstance(message.content, str):
            return 0
        rule = self._image_rule
        return sum(rule.part_tokens(p.data) for p in message.content if p.type == "image")

    @property
    def name(self) -> str:
        return self._name

    @property
    def exact(self) -> bool:
        return self._exact

    @property
    def cache_owner(self) -> BaseCounter:
        """The counter whose per-message counts this one's are derived from (itself here): what
        a store should persist and prime (under the owner's name) to spare re-tokenizing.
        """
        return self

    def count_text(self, text: str) -> int:
        raise NotImplementedError

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        """Counts of many texts (subclasses may batch)."""
        return [self.count_text(t) for t in texts]

    def _role_tokens(self, role: str) -> int:
        tokens = self._roles.get(role)
        if tokens is None:
            tokens = self._roles[role] = self.count_text(role)
        return tokens

    def _uncached_message(self, message: Message) -> int:
        tokens = TOKENS_PER_MESSAGE + self._role_tokens(message.role)
        if message.name:
            tokens += TOKENS_PER_NAME + self.count_text(message.name)
        if isinstance(message.content, str):
            tokens += self.count_text(message.content) if message.content else 0
        else:
            for part in message.content:
                if part.type == "image":
                    tokens += self._image_rule.part_tokens(part.data)
                elif part.text:
                    tokens += self.count_text(part.text)
                else:
                    tokens += self.count_text(str(dict(part.data)))
        for call in message.tool_calls:
            tokens += TOKENS_PER_TOOL_CALL + self.count_text(call.name)
            tokens += self.count_text(call.arguments) + self.count_text(call.id)
        if message.tool_call_id:
            tokens += self.count_text(message.tool_call_id)
        return tokens

    def cached(self, message: Message) -> int | None:
        """The cached count of ``message``, or ``None`` (never tokenizes)."""
        hit = memo_get(message, self._name)
        if hit is not None:
            return hit
        hit = self._by_fingerprint.get(message.fingerprint())
        if hit is not None:
            memo_put(message, self._name, hit)
        return hit

    def prime(self, counts: Mapping[Message, int]) -> None:
        """Seed the cache with known counts (e.g. read back from a store)."""
        for message, tokens in counts.items():
            self._remember(message, tokens)
            self._by_fingerprint[message.fingerprint()] = tokens

    def _remember(self, message: Message, tokens: int) -> None:
        memo_put(message, self._name, tokens)

    def count_message(self, message: Message) -> int:
        """Tokens of one message, with its chat-format overhead; cached."""
        hit = memo_get(message, self._name)
        if hit is not None:
            return hit
        fp = message.fingerprint()
        tokens = self._by_fingerprint.get(fp)
        if tokens is None:
            tokens = self._uncached_message(message)
            if len(self._by_fingerprint) >= _CACHE_LIMIT:
                with self._lock:
                    self._by_fingerprint.clear()
            self._by_fingerprint[fp] = tokens
        memo_put(message, self._name, tokens)
        return tokens

    def count_messages(self, messages: Sequence[Message]) -> int:
        """Tokens of a list of messages, including the reply priming."""
        return REPLY_PRIMING + sum(self.count_message(m) for m in messages)

    def count(self, messages: Sequence[Message]) -> TokenCount:
        """:meth:`count_messages` with the exactness flag (``False`` when an image is counted)."""
        tokens = self.count_messages(messages)
        return TokenCount(tokens, counted_exactly(self, messages), self._name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r}, exact={self._exact})"


def counted_exactly(counter: TokenCounter, messages: Iterable[Message]) -> bool:
    """Whether ``counter``'s count of ``messages`` is exact: an exact counter and no image (an
    image's cost is always an estimate from the published rules)."""
    if not counter.exact:
        return False
    for message in messages:
        content = message.content
        if not isinstance(content, str) and any(part.type == "image" for part in content):
            return False
    return True
