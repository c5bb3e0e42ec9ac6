"""Token counting: exact for OpenAI encodings, estimated (and flagged) for everything else.

Message accounting follows the OpenAI chat format: every message costs
:data:`TOKENS_PER_MESSAGE` plus its role and content, a ``name`` costs :data:`TOKENS_PER_NAME`
more, and a list of messages costs :data:`REPLY_PRIMING` for the assistant reply that follows
(the count OpenAI bills: 129 tokens on gpt-4 and 124 on gpt-4o for the cookbook's example).
Tool calls count their name and arguments plus :data:`TOKENS_PER_TOOL_CALL`; a tool result counts
its content and its call id. An image part counts :data:`IMAGE_TOKENS` (:data:`IMAGE_TOKENS_LOW`
with ``detail: low``), the cost of a 1024x1024 high-detail image on gpt-4o.

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

import hashlib
import math
import re
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, runtime_checkable

from session_migrator._calibration import calibrate, calibration_factor
from session_migrator._calibration import reset_calibration as reset_calibration
from session_migrator._encodings import ENCODINGS, get_encoding
from session_migrator._messages import Message

__all__ = [
    "FAMILY_MULTIPLIERS",
    "EstimateWarning",
    "EstimatingCounter",
    "TiktokenCounter",
    "TokenCount",
    "TokenCounter",
    "calibrate",
    "calibration_factor",
    "counter_for",
]

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_PER_TOOL_CALL = 3
REPLY_PRIMING = 3
IMAGE_TOKENS = 765
IMAGE_TOKENS_LOW = 85

#: Conservative o200k multipliers per tokenizer family (the largest measured ratio, rounded up;
#: source: shared tokenizer_ratios.csv, measured with each tokenizer's own package).
FAMILY_MULTIPLIERS: Mapping[str, float] = {
    "claude": 1.43,  # Claude 3 - 4.6 (legacy SDK tokenizer: 0.98-1.43 of o200k)
    "claude-4.7": 1.63,  # Claude Opus 4.7 and later (new tokenizer: 1.46-1.63)
    "gemini": 1.20,  # no public tokenizer; count endpoints show about 1.15
    "mistral": 1.24,  # tekken (0.99-1.24)
    "mistral-spm": 1.42,  # SentencePiece v3 (1.15-1.42)
    "qwen": 1.19,  # Qwen 3.5/3.6 (0.68-1.19)
    "deepseek": 1.09,  # DeepSeek V4 (0.69-1.09)
    "llama": 1.05,  # Llama 3 (0.99-1.05)
    "other": 1.45,  # unknown tokenizer: the most conservative of the above, plus a little
}

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

    def __init__(self) -> None:
        self._by_fingerprint: dict[str, int] = {}
        self._roles: dict[str, int] = {}
        self._lock = threading.Lock()

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
                    detail = _image_detail(part.data)
                    tokens += IMAGE_TOKENS_LOW if detail == "low" else IMAGE_TOKENS
                elif part.text:
                    tokens += self.count_text(part.text)
                else:
                    tokens += self.count_text(str(dict(part.data)))
        for call in message.tool_calls:
            tokens += TOKENS_PER_TOOL_CALL + self.count_text(call.name)
            tokens += self.count_text(call.arguments)
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
        """:meth:`count_messages` with the exactness flag."""
        return TokenCount(self.count_messages(messages), self._exact, self._name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r}, exact={self._exact})"


def _image_detail(data: Mapping[str, object]) -> str | None:
    image = data.get("image_url")
    if isinstance(image, Mapping):
        detail = image.get("detail")
        return detail if isinstance(detail, str) else None
    detail = data.get("detail")
    return detail if isinstance(detail, str) else None


_PIECES = re.compile(r"[A-Za-z0-9+/=_-]{24,}|[A-Za-z]+|[0-9]+|\s+|[^\sA-Za-z0-9]")


def heuristic_tokens(text: str) -> int:
    """A conservative estimate without any tokenizer.

    Long unbroken runs of letters, digits and ``+/=_-`` (base64, hashes, ids) count one token
    per character; other letter runs one per 2.5 letters (rounded up), digit runs one per 2, every
    other ASCII character one, a non-ASCII character one per two bytes of UTF-8 (CJK: two), and
    whitespace nothing when it is one space, else one. Over-counts o200k and cl100k on prose,
    code, JSON, base64 and Chinese.
    """
    total = 0
    for piece in _PIECES.findall(text):
        first = piece[0]
        if len(piece) >= 24 and not first.isspace():
            total += len(piece)
        elif first.isascii() and first.isalpha():
            total += math.ceil(len(piece) / 2.5)
        elif first.isdigit() and first.isascii():
            total += math.ceil(len(piece) / 2)
        elif first.isspace():
            total += 0 if piece == " " else 1
        elif first.isascii():
            total += 1
        else:
            total += (len(first.encode("utf-8", "surrogatepass")) + 1) // 2
    return total


#: No special tokens: their text counts as ordinary text, as ``encode_ordinary`` counts it.
_NO_SPECIAL: frozenset[str] = frozenset()


class TiktokenCounter(BaseCounter):
    """Exact counts with a tiktoken encoding (``o200k_base`` or ``cl100k_base``), offline.

    >>> TiktokenCounter("o200k_base").count_text("hello world")
    2
    """

    local = True

    def __init__(self, encoding: str = "o200k_base") -> None:
        super().__init__()
        enc = get_encoding(encoding)
        if enc is None:
            raise LookupError(
                f"no local copy of the {encoding} encoding; install llama-index-core or set "
                "TIKTOKEN_CACHE_DIR to a folder holding tiktoken's cached files"
            )
        self._encoding = enc
        self._name = encoding
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

    def __init__(self, family: str, multiplier: float) -> None:
        super().__init__()
        if multiplier <= 0:
            raise ValueError("multiplier must be positive")
        self._multiplier = multiplier
        base = _shared_tiktoken("o200k_base")
        self._owner: BaseCounter = base if base is not None else _shared_heuristic("o200k_base")
        basis = "o200k" if base is not None else "chars"
        self._name = f"estimate:{family}:{basis}x{multiplier:.4f}"
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

    def _uncached_message(self, message: Message) -> int:
        return math.ceil(self._owner.count_message(message) * self._multiplier)

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
        return None if base is None else math.ceil(base * self._multiplier)


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
_tiktoken_counters: dict[str, TiktokenCounter | None] = {}
_estimating: dict[tuple[str, float], EstimatingCounter] = {}
_heuristic: dict[str, HeuristicCounter] = {}
_warned: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    with _registry_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, EstimateWarning, stacklevel=3)


def _shared_tiktoken(encoding: str) -> TiktokenCounter | None:
    try:
        return _tiktoken_counters[encoding]
    except KeyError:
        pass
    counter: TiktokenCounter | None
    try:
        counter = TiktokenCounter(encoding)
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
        return _tiktoken_counters.setdefault(encoding, counter)


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
    :class:`EstimatingCounter` for other families, corrected by ``model``'s calibration.
    """
    if tokenizer in ENCODINGS:
        exact = _shared_tiktoken(tokenizer)
        if exact is not None:
            return exact
        return _shared_heuristic(tokenizer)
    base = FAMILY_MULTIPLIERS.get(tokenizer, FAMILY_MULTIPLIERS["other"])
    multiplier = round(base * (calibration_factor(model) if model else 1.0), 4)
    key = (tokenizer, multiplier)
    try:
        return _estimating[key]
    except KeyError:
        pass
    counter = EstimatingCounter(tokenizer, multiplier)
    with _registry_lock:
        return _estimating.setdefault(key, counter)


_V = TypeVar("_V")


class DigestMemo(Generic[_V]):
    """Values computed from texts, remembered by a digest of the text (and of a ``namespace``):
    no text is kept. For the texts a rolling summary brings back at every fit (itself, its
    earlier lines). Bounded: it starts afresh once it holds ``limit`` values.
    """

    def __init__(self, limit: int = 32_768) -> None:
        self._limit = limit
        self._values: dict[bytes, _V] = {}

    def __len__(self) -> int:
        return len(self._values)

    def get(self, text: str, compute: Callable[[str], _V], namespace: str = "") -> _V:
        digest = hashlib.blake2b(namespace.encode() + b"\x00", digest_size=16)
        digest.update(text.encode("utf-8", "surrogatepass"))
        key = digest.digest()
        value = self._values.get(key)
        if value is None:
            if len(self._values) >= self._limit:
                self._values.clear()
            value = self._values[key] = compute(text)
        return value

    def clear(self) -> None:
        self._values.clear()


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
