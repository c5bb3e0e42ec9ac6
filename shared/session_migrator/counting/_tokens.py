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
from collections.abc import Iterable

from session_migrator._digest_memo import DigestMemo
from session_migrator.counting._calibration import calibrate, calibration_factor
from session_migrator.counting._calibration import reset_calibration as reset_calibration
from session_migrator.counting._counter import (
    BaseCounter,
    EstimateWarning,
    TokenCount,
    TokenCounter,
    counted_exactly,
    memo_get,
)
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
        hit = memo_get(message, self._name)
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
