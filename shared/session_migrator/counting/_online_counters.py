"""Exact token counts from the providers' count endpoints (optional extras, opt-in).

:class:`AnthropicCounter` calls ``POST /v1/messages/count_tokens`` through the official
``anthropic`` SDK (extra ``[anthropic]``); :class:`GeminiCounter` calls
``models/{model}:countTokens`` through ``google-genai`` (extra ``[gemini]``). They are used only
when the caller constructs one and passes it as the counter; nothing here runs by default.

How a message is counted. The endpoints count whole requests, so each counter first measures,
once per model, the request's fixed overhead ``F`` and the per-turn overhead ``W`` with two
probe requests (``[user "a"]`` and ``[user "a", assistant "a", user "a"]``, assuming ``"a"`` is
one token). A message is then sent alone, as a user turn holding its text (tool calls as
``name(arguments)``, a tool result's call id and content), and counts ``total - F`` (its turn
and content); a text counts ``total - F - W``; a list counts ``F + sum(messages)``, which matches
a request of those turns. The role a message really has changes its framing by a token or two;
each tool call adds an allowance of ``TOKENS_PER_TOOL_CALL``; images are estimated (and the
count flagged). ``name`` is not sent by these APIs and is not counted.

Caching: every endpoint answer is kept in memory and in a SQLite file,
``data_home()/token_counts.sqlite3`` by default, keyed by counter name and a digest of the sent
text, so the same message is never counted twice, even across processes. Exact message counts
are also memoised like every :class:`~session_migrator.counting._tokens.BaseCounter` count.

Failures never reach the caller: on an HTTP error, a 429, a timeout, a missing key or a
malformed answer the message is counted by the ``fallback`` (default: the calibrated estimating
counter for the model's family), nothing is cached, and :attr:`exact` is ``False`` until a later
call is counted entirely by the endpoint. After a failure the endpoint is left alone for
``cooldown`` seconds (or the server's ``Retry-After``), so a rate limit costs one request.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Self

from session_migrator._config import data_home
from session_migrator._errors import MissingDependencyError
from session_migrator._redact import redact_secrets
from session_migrator.counting._counter import (
    REPLY_PRIMING,
    TOKENS_PER_TOOL_CALL,
    BaseCounter,
    TokenCounter,
)
from session_migrator.counting._image_tokens import ImageRule, image_rule_for
from session_migrator.counting._tokens import counter_for
from session_migrator.messages._messages import Message
from session_migrator.models._tokenizers import infer_tokenizer

__all__ = ["COUNTS_FILE", "AnthropicCounter", "GeminiCounter", "online_counter_for"]

#: File name of the persistent count cache, under :func:`session_migrator._config.data_home`.
COUNTS_FILE = "token_counts.sqlite3"
_MAX_RETRY_AFTER = 300.0

_log = logging.getLogger("session_migrator.online_counters")


class _CountStore:
    """Endpoint answers by (counter, key): in memory, and in SQLite unless ``path`` is None."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = None
        self._memory: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._broken = False

    def _db(self) -> sqlite3.Connection | None:
        if self._conn is None and self._path is not None and not self._broken:
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(
                    self._path, timeout=10, check_same_thread=False, isolation_level=None
                )
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS counts (counter TEXT NOT NULL, key TEXT NOT NULL,"
                    " tokens INTEGER NOT NULL, created REAL NOT NULL,"
                    " PRIMARY KEY (counter, key)) WITHOUT ROWID"
                )
                self._conn = conn
            except (OSError, sqlite3.Error) as exc:
                self._broken = True
                _log.warning("token count cache %s unavailable (memory only): %s", self._path, exc)
        return self._conn

    def get(self, counter: str, key: str) -> int | None:
        with self._lock:
            hit = self._memory.get((counter, key))
            if hit is not None:
                return hit
            db = self._db()
            if db is None:
                return None
            try:
                row = db.execute(
                    "SELECT tokens FROM counts WHERE counter = ? AND key = ?", (counter, key)
                ).fetchone()
            except sqlite3.Error as exc:
                _log.warning("token count cache read failed: %s", exc)
                return None
            if row is None:
                return None
            self._memory[(counter, key)] = int(row[0])
            return int(row[0])

    def put(self, counter: str, key: str, tokens: int) -> None:
        with self._lock:
            self._memory[(counter, key)] = tokens
            db = self._db()
            if db is None:
                return
            try:
                db.execute(
                    "INSERT OR REPLACE INTO counts VALUES (?, ?, ?, ?)",
                    (counter, key, tokens, time.time()),
                )
            except sqlite3.Error as exc:
                _log.warning("token count cache write failed: %s", exc)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _render(message: Message, images: ImageRule) -> tuple[str, int, bool]:
    """(text to send, tokens added without sending, whether that addition is an estimate)."""
    pieces: list[str] = []
    extra = 0
    estimated = False
    if isinstance(message.content, str):
        pieces.append(message.content)
    else:
        for part in message.content:
            if part.type == "image":
                extra += images.part_tokens(part.data)
                estimated = True
            elif part.text:
                pieces.append(part.text)
            elif part.data:
                pieces.append(str(dict(part.data)))
    for call in message.tool_calls:
        pieces.append(f"{call.id} {call.name}({call.arguments})".lstrip())
        extra += TOKENS_PER_TOOL_CALL
    if message.tool_call_id:
        pieces.insert(0, message.tool_call_id)
    return "\n".join(p for p in pieces if p), extra, estimated


def _describe(exc: BaseException) -> tuple[str, float | None]:
    """A short reason for a failed request and the server's Retry-After in seconds, if any."""
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = getattr(exc, "code", None)
    reason = type(exc).__name__
    if isinstance(status, int):
        reason = f"HTTP {status} ({reason})"
    retry_after: float | None = None
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is not None:
        try:
            value = headers.get("retry-after")
            retry_after = min(float(value), _MAX_RETRY_AFTER) if value is not None else None
        except (TypeError, ValueError, AttributeError):
            retry_after = None
    return reason, retry_after


class _OnlineCounter(BaseCounter):
    """Shared logic: probes, caches, fallback and the exactness flag. Subclasses send requests."""

    provider: ClassVar[str]
    #: The SDK module imported to talk to the endpoint, and the extra that installs it.
    _sdk: ClassVar[tuple[str, str, str]]  # (module, feature, extra)

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        api_key: str | None = None,
        base_url: str | None = None,
        fallback: TokenCounter | None = None,
        timeout: float = 10.0,
        cooldown: float = 30.0,
        cache_path: str | Path | None = None,
        persist: bool = True,
    ) -> None:
        if client is None:
            module, feature, extra = self._sdk
            try:
                importlib.import_module(module)
            except ImportError:
                raise MissingDependencyError(feature, extra) from None
        self._api_key = api_key
        self._base_url = base_url
        super().__init__()
        if not model:
            raise ValueError("model must be a non-empty model name")
        self.model = model
        self._name = f"{self.provider}:{model}"
        self._exact = True
        self._client = client
        self._owns_client = client is None
        self._fallback = fallback
        self._family = infer_tokenizer(model)
        self._image_rule = image_rule_for(model, self._family)
        path = Path(cache_path) if cache_path is not None else data_home() / COUNTS_FILE
        self._store = _CountStore(path if persist else None)
        self._cooldown = cooldown
        self._timeout = timeout
        self._paused_until = 0.0
        self._overhead: tuple[int, int] | None = None
        self._logged: set[str] = set()
        #: Endpoint requests sent, and texts or messages counted by the fallback, since creation.
        self.requests = 0
        self.fallbacks = 0
        #: Why the last failed request failed (``None`` if none has).
        self.last_error: str | None = None

    # -- subclasses -------------------------------------------------------------------------

    def _make_client(self) -> Any:
        raise NotImplementedError

    def _send(self, client: Any, turns: Sequence[tuple[str, str]]) -> Any:
        """One count request for ``turns`` of (``user`` | ``assistant``, text); the raw total."""
        raise NotImplementedError

    # -- public -----------------------------------------------------------------------------

    @property
    def exact(self) -> bool:
        """Whether every count in the last call came from the endpoint (not the fallback)."""
        return self._exact

    @property
    def fallback(self) -> TokenCounter:
        """The counter used when the endpoint fails (the calibrated estimate by default)."""
        return self._fallback or counter_for(self._family, model=self.model)

    def count_text(self, text: str) -> int:
        """Tokens of ``text`` alone, without turn framing."""
        tokens, exact = self._text(text)
        self._note(exact)
        return tokens

    def count_message(self, message: Message) -> int:
        """Tokens of one message with its turn framing; exact ones are cached."""
        tokens, exact = self._message(message)
        self._note(exact)
        return tokens

    def count_messages(self, messages: Sequence[Message]) -> int:
        """Tokens of a request holding ``messages``: the fixed overhead plus each message."""
        counted = [self._message(m) for m in messages]
        overhead = self._overheads()
        self.fallbacks += sum(1 for _, e in counted if not e)
        self._exact = overhead is not None and all(e for _, e in counted)
        fixed = overhead[0] if overhead is not None else REPLY_PRIMING
        return fixed + sum(t for t, _ in counted)

    def close(self) -> None:
        """Close the SDK client this counter created and the cache file."""
        client, self._client = (self._client, None) if self._owns_client else (None, None)
        close = getattr(client, "close", None)
        if callable(close):
            close()
        self._store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------

    def _note(self, exact: bool) -> None:
        self._exact = exact
        if not exact:
            self.fallbacks += 1

    def _raw(self, key: str, turns: Sequence[tuple[str, str]]) -> int | None:
        """The endpoint's total for ``turns``, from the caches or one request; None on failure."""
        hit = self._store.get(self._name, key)
        if hit is not None:
            return hit
        if time.monotonic() < self._paused_until:
            return None
        try:
            if self._client is None:
                self._client = self._make_client()
            self.requests += 1
            total = self._send(self._client, turns)
            if isinstance(total, bool) or not isinstance(total, int) or total < 0:
                raise ValueError(f"the endpoint answered {total!r}, not a token count")
        except Exception as exc:  # every failure falls back; see the module docstring
            self._failed(exc)
            return None
        self._store.put(self._name, key, total)
        return total

    def _failed(self, exc: Exception) -> None:
        reason, retry_after = _describe(exc)
        self.last_error = redact_secrets(f"{reason}: {exc}", self._api_key, self._client)
        self._paused_until = time.monotonic() + (
            retry_after if retry_after is not None else self._cooldown
        )
        level = logging.WARNING if reason not in self._logged else logging.DEBUG
        self._logged.add(reason)
        _log.log(
            level,
            "%s token counting for %s failed (%s); using the estimate, flagged exact=False",
            self.provider,
            self.model,
            self.last_error,
        )

    def _overheads(self) -> tuple[int, int] | None:
        """(fixed request overhead, per-turn overhead), measured once per model."""
        if self._overhead is None:
            one = self._raw("probe:1", [("user", "a")])
            if one is None:
                return None
            three = self._raw("probe:3", [("user", "a"), ("assistant", "a"), ("user", "a")])
            if three is None:
                return None
            turn = max(0, (three - one) // 2 - 1)
            self._overhead = (max(0, one - turn - 1), turn)
        return self._overhead

    def _single(self, text: str) -> int | None:
        """The endpoint's total for a request of one user turn holding ``text``."""
        return self._raw(f"t:{_digest(text)}", [("user", text)])

    def _text(self, text: str) -> tuple[int, bool]:
        if not text:
            return 0, True
        overhead = self._overheads()
        total = self._single(text) if overhead is not None and text.strip() else None
        if overhead is None or total is None:
            return self.fallback.count_text(text), False
        return max(1, total - overhead[0] - overhead[1]), True

    def _message(self, message: Message) -> tuple[int, bool]:
        hit = self.cached(message)
        if hit is not None:
            return hit, True
        text, extra, estimated = _render(message, self._image_rule)
        overhead = self._overheads()
        if overhead is None:
            return self.fallback.count_message(message), False
        fixed, turn = overhead
        if not text:
            return turn + extra, not estimated
        if not text.strip():  # the endpoints reject whitespace-only text
            return turn + extra + self.fallback.count_text(text), False
        total = self._single(text)
        if total is None:
            return self.fallback.count_message(message), False
        tokens = max(1, total - fixed) + extra
        if not estimated:
            self.prime({message: tokens})
        return tokens, not estimated


class AnthropicCounter(_OnlineCounter):
    """Exact Claude counts from ``/v1/messages/count_tokens`` (official ``anthropic`` SDK).

    ``client`` is an ``anthropic.Anthropic`` to use as is; otherwise one is made with
    ``api_key`` (default: the SDK's own resolution, ``ANTHROPIC_API_KEY``), ``base_url``,
    ``timeout`` and no retries. See the module docstring for what is counted and cached.

    >>> counter = AnthropicCounter("claude-opus-4-7")  # doctest: +SKIP
    >>> counter.count_messages(messages), counter.exact  # doctest: +SKIP
    (1234, True)
    """

    provider = "anthropic"

    _sdk = ("anthropic", "Anthropic token counting", "anthropic")

    def _make_client(self) -> Any:
        import anthropic

        return anthropic.Anthropic(
            api_key=self._api_key, base_url=self._base_url, timeout=self._timeout, max_retries=0
        )

    def _send(self, client: Any, turns: Sequence[tuple[str, str]]) -> Any:
        answer = client.messages.count_tokens(
            model=self.model,
            messages=[{"role": role, "content": text} for role, text in turns],
        )
        return getattr(answer, "input_tokens", None)


class GeminiCounter(_OnlineCounter):
    """Exact Gemini counts from ``models/{model}:countTokens`` (official ``google-genai`` SDK).

    ``client`` is a ``google.genai.Client`` to use as is; otherwise one is made with ``api_key``
    (default: the SDK's own resolution, ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``), ``base_url``
    (``HttpOptions(base_url=...)``), ``timeout`` and no retries. See the module docstring.

    >>> counter = GeminiCounter("gemini-2.5-flash")  # doctest: +SKIP
    >>> counter.count_text("hello world"), counter.exact  # doctest: +SKIP
    (2, True)
    """

    provider = "gemini"

    _sdk = ("google.genai", "Gemini token counting", "gemini")

    def _make_client(self) -> Any:
        from google import genai
        from google.genai import types

        options = types.HttpOptions(
            base_url=self._base_url,
            timeout=max(1, int(self._timeout * 1000)),
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        return genai.Client(api_key=self._api_key, http_options=options)

    def _send(self, client: Any, turns: Sequence[tuple[str, str]]) -> Any:
        contents = [
            {"role": "user" if role == "user" else "model", "parts": [{"text": text}]}
            for role, text in turns
        ]
        answer = client.models.count_tokens(model=self.model, contents=contents)
        return getattr(answer, "total_tokens", None)


def online_counter_for(model: str, **options: Any) -> AnthropicCounter | GeminiCounter:
    """The online counter for ``model``'s provider (Claude or Gemini/Gemma); ``options`` go to it.

    Raises ``ValueError`` for a model no supported count endpoint serves.
    """
    family = infer_tokenizer(model)
    if family.startswith("claude"):
        return AnthropicCounter(model, **options)
    if family == "gemini":
        return GeminiCounter(model, **options)
    raise ValueError(
        f"no online token counter for {model!r}: only Anthropic (Claude) and Gemini models have "
        "count endpoints; OpenAI models are counted exactly offline"
    )
