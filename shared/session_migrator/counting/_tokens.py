"""Token counting: exact for OpenAI encodings, estimated (and flagged) for everything else.

Message accounting follows the OpenAI chat format: every message costs
:data:`TOKENS_PER_MESSAGE` plus its role and content, a ``name`` costs :data:`TOKENS_PER_NAME`
more, and a list of messages costs :data:`REPLY_PRIMING` for the assistant reply that follows
(the count OpenAI bills: 129 tokens on gpt-4 and 124 on gpt-4o for the cookbook's example).
Tool calls count their name, arguments and id plus :data:`TOKENS_PER_TOOL_CALL` (the id goes over
the wire with the call, as it does with the result); a tool result counts its content and its call
id. An image part costs what the counter's image rule says for the model
(``_image_tokens``: OpenAI tiles or patches, Anthropic's pixels / 750, Gemini's tiles), from the
image's size where inline data tells it; a count that includes an image is an estimate
(:func:`counted_exactly`).

Other tokenizer families are estimated as the o200k count times a conservative multiplier,
the largest ratio measured over prose, licence text, code, JSON and Chinese samples (see
:data:`FAMILY_MULTIPLIERS`). When no o200k encoding file can be found offline, text is estimated
by :func:`heuristic_tokens`, which over-counts both OpenAI encodings on prose, code, JSON, base64
and CJK text, and a :class:`EstimateWarning` is issued once.

Counts are cached per message and counter: on the message object itself, and by the message's
content fingerprint, so counting a session again after one new message tokenizes only that one.
An estimating counter keeps no counts of its own: it scales the o200k counter's cached count of
each message (its :attr:`~BaseCounter.cache_owner`), so a calibration, which changes only the
multiplier, re-tokenizes nothing.
"""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from session_migrator._digest_memo import DigestMemo
from session_migrator.counting._calibration import calibrate, calibration_factor
from session_migrator.counting._calibration import reset_calibration as reset_calibration
from session_migrator.counting._encodings import ENCODINGS, get_encoding
from session_migrator.counting._heuristic import heuristic_tokens
from session_migrator.counting._image_tokens import OPENAI_TILES, ImageRule, image_rule_for
from session_migrator.messages._messages import Message
from session_migrator.models._tokenizers import FAMILY_MULTIPLIERS

__all__ = [
    "FAMILY_MULTIPLIERS",
    "DigestMemo",
    "EstimateWarning",
    "EstimatingCounter",
    "TiktokenCounter",
    "TokenCount",
    "TokenCounter",
    "calibrate",
    "calibration_factor",
    "counted_exactly",
    "counter_for",
    "heuristic_tokens",
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


def _memo_get(message: Message, key: str) -> int | None:
    """The count memoised on ``message`` under ``key`` (a counter's name), or ``None``."""
    memo = message._memo
    if memo is None:
        return None
    if type(memo) is tuple:
        return memo[1] if memo[0] == key else None
    return memo.get(key)  # type: ignore[no-any-return]


def _memo_put(message: Message, key: str, tokens: int) -> None:
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
        hit = _memo_get(message, self._name)
        if hit is not None:
            return hit
        hit = self._by_fingerprint.get(message.fingerprint())
        if hit is not None:
            _memo_put(message, self._name, hit)
        return hit

    def prime(self, counts: Mapping[Message, int]) -> None:
        """Seed the cache with known counts (e.g. read back from a store)."""
        for message, tokens in counts.items():
            self._remember(message, tokens)
            self._by_fingerprint[message.fingerprint()] = tokens

    def _remember(self, message: Message, tokens: int) -> None:
        _memo_put(message, self._name, tokens)

    def count_message(self, message: Message) -> int:
        """Tokens of one message, with its chat-format overhead; cached."""
        hit = _memo_get(message, self._name)
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
        _memo_put(message, self._name, tokens)
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


#: No special tokens: their text counts as ordinary text, as ``encode_ordinary`` counts it.
_NO_SPECIAL: frozenset[str] = frozenset()


class TiktokenCounter(BaseCounter):
    """Exact counts with a tiktoken encoding (``o200k_base`` or ``cl100k_base``), offline.

    >>> TiktokenCounter("o200k_base").count_text("hello world")
    2
    """

    local = True

    def __init__(self, encoding: str = "o200k_base", image_rule: ImageRule = OPENAI_TILES) -> None:
        super().__init__(image_rule)
        enc = get_encoding(encoding)
        if enc is None:
            raise LookupError(
                f"no local copy of the {encoding} encoding; install llama-index-core or set "
                "TIKTOKEN_CACHE_DIR to a folder holding tiktoken's cached files"
            )
        self._encoding = enc
        self._name = _with_rule(encoding, image_rule, OPENAI_TILES)
        self._exact = True
        # tiktoken's buffer of 4-byte token ids: counting a long text makes no Python int per
        # token (a 500 KB summary would make 130,000 of them, 4.7 MB, only to be counted)
        self._buffer = getattr(getattr(enc, "_core_bpe", None), "encode_to_tiktoken_buffer", None)

    def count_text(self, text: str) -> int:
        if self._buffer is not None:
            try:
                return memoryview(self._buffer(text, _NO_SPECIAL)).nbytes // 4
            except UnicodeEncodeError:
                pass  # a lone surrogate: encode_ordinary replaces it, as tiktoken does
        return len(self._encoding.encode_ordinary(text))


class EstimatingCounter(BaseCounter):
    """Estimated counts: the o200k count times ``multiplier`` (flagged ``exact=False``).

    A message counts ``ceil(o200k count of the message x multiplier)``, its chat-format overhead
    scaled too (conservative): the per-message o200k counts are the shared o200k counter's
    cached ones (:attr:`cache_owner`), so counters for other multipliers (other families, or
    this family after a calibration) reuse them instead of tokenizing again. Counts given to
    :meth:`prime` are kept as this counter's own and win.

    Without a local o200k encoding it uses :func:`heuristic_tokens` and warns once.

    >>> c = EstimatingCounter("claude", 1.43)
    >>> c.exact
    False
    """

    local = True

    def __init__(self, family: str, multiplier: float, image_rule: ImageRule | None = None) -> None:
        default_rule = image_rule_for(None, family)
        super().__init__(image_rule or default_rule)
        if multiplier <= 0:
            raise ValueError("multiplier must be positive")
        self._multiplier = multiplier
        base = _shared_tiktoken("o200k_base")
        self._owner: BaseCounter = base if base is not None else _shared_heuristic("o200k_base")
        basis = "o200k" if base is not None else "chars"
        name = f"estimate:{family}:{basis}x{multiplier:.4f}"
        self._name = _with_rule(name, self._image_rule, default_rule)
        self._exact = False
        self.family = family

    @property
    def multiplier(self) -> float:
        return self._multiplier

    @property
    def cache_owner(self) -> BaseCounter:
        return self._owner

    def count_text(self, text: str) -> int:
        return math.ceil(self._owner.count_text(text) * self._multiplier)

    def _scaled(self, message: Message, owner_tokens: int) -> int:
        """The owner's count of ``message`` scaled, its images priced by this counter's rule."""
        if isinstance(message.content, str):
            return math.ceil(owner_tokens * self._multiplier)
        text = owner_tokens - self._owner.image_tokens(message)
        return math.ceil(text * self._multiplier) + self.image_tokens(message)

    def _uncached_message(self, message: Message) -> int:
        return self._scaled(message, self._owner.count_message(message))

    def count_message(self, message: Message) -> int:
        """``ceil(o200k count x multiplier)``, from the o200k counter's cache (or a primed
        count)."""
        hit = _memo_get(message, self._name)
        if hit is not None:
            return hit
        if self._by_fingerprint:  # only primed counts live here
            hit = self._by_fingerprint.get(message.fingerprint())
            if hit is not None:
                return hit
        return self._uncached_message(message)

    def cached(self, message: Message) -> int | None:
        own = super().cached(message)
        if own is not None:
            return own
        base = self._owner.cached(message)
        return None if base is None else self._scaled(message, base)


class HeuristicCounter(BaseCounter):
    """The no-tokenizer fallback for an OpenAI encoding that has no local file."""

    local = True

    def __init__(self, encoding: str) -> None:
        super().__init__()
        self._name = f"heuristic:{encoding}"
        self._exact = False

    def count_text(self, text: str) -> int:
        return heuristic_tokens(text)


_registry_lock = threading.Lock()
_tiktoken_counters: dict[tuple[str, str], TiktokenCounter | None] = {}
_estimating: dict[tuple[str, float, str], EstimatingCounter] = {}
_heuristic: dict[str, HeuristicCounter] = {}
_warned: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    with _registry_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, EstimateWarning, stacklevel=3)


def _shared_tiktoken(encoding: str, image_rule: ImageRule = OPENAI_TILES) -> TiktokenCounter | None:
    key = (encoding, image_rule.name)
    try:
        return _tiktoken_counters[key]
    except KeyError:
        pass
    counter: TiktokenCounter | None
    try:
        counter = TiktokenCounter(encoding, image_rule)
    except LookupError:
        counter = None
        _warn_once(
            f"missing:{encoding}",
            f"No local copy of tiktoken's {encoding} encoding was found (searched "
            "TIKTOKEN_CACHE_DIR, tiktoken's cache and llama-index-core's bundled copy); token "
            "counts are estimated by a conservative heuristic and flagged exact=False. "
            "Install llama-index-core or set TIKTOKEN_CACHE_DIR for exact counts.",
        )
    with _registry_lock:
        return _tiktoken_counters.setdefault(key, counter)


def _shared_heuristic(encoding: str) -> HeuristicCounter:
    try:
        return _heuristic[encoding]
    except KeyError:
        pass
    with _registry_lock:
        return _heuristic.setdefault(encoding, HeuristicCounter(encoding))


# -- calibration: persisted per model in _calibration (calibrate, calibration_factor and
# reset_calibration are re-exported from here) ----------------------------------------


def counter_for(tokenizer: str, *, model: str | None = None) -> BaseCounter:
    """The shared counter for a tokenizer name (an encoding or an estimated family).

    Exact for ``o200k_base`` and ``cl100k_base`` when the encoding is available offline; an
    :class:`EstimatingCounter` for other families, corrected by ``model``'s calibration. Images
    are priced by ``model``'s image rule (else the tokenizer family's).
    """
    rule = image_rule_for(model, tokenizer)
    if tokenizer in ENCODINGS:
        exact = _shared_tiktoken(tokenizer, rule)
        if exact is not None:
            return exact
        return _shared_heuristic(tokenizer)
    base = FAMILY_MULTIPLIERS.get(tokenizer, FAMILY_MULTIPLIERS["other"])
    multiplier = round(base * (calibration_factor(model) if model else 1.0), 4)
    key = (tokenizer, multiplier, rule.name)
    try:
        return _estimating[key]
    except KeyError:
        pass
    counter = EstimatingCounter(tokenizer, multiplier, rule)
    with _registry_lock:
        return _estimating.setdefault(key, counter)


#: Token counts of texts by local counters (the counter's name is the namespace).
_text_counts: DigestMemo[int] = DigestMemo()


def remembered_count(counter: TokenCounter, text: str) -> int:
    """``counter.count_text(text)``, remembered by the text's digest where the count cannot
    change (a local counter's); an estimating counter scales its owner's remembered count, which
    a calibration leaves valid. Other counters (online ones, which may fall back to estimates
    and keep their own cache of exact counts) just count.
    """
    if isinstance(counter, EstimatingCounter):
        return math.ceil(remembered_count(counter.cache_owner, text) * counter.multiplier)
    if not getattr(counter, "local", False):
        return counter.count_text(text)
    return _text_counts.get(text, counter.count_text, counter.name)


def count_all(counter: TokenCounter, messages: Iterable[Message]) -> list[int]:
    """Per-message counts (cached where the counter caches)."""
    return [counter.count_message(m) for m in messages]


def _with_rule(name: str, rule: ImageRule, default: ImageRule) -> str:
    """A counter's name: its counting rule, and its image rule where that is not the default
    (the name keys the caches: counters that price images apart must not share counts)."""
    return name if rule is default else f"{name}+images:{rule.name}"


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
