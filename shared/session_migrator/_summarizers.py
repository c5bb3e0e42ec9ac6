"""Summarizers: turn the cut part of a conversation into a short text.

- :class:`ExtractiveSummarizer` needs no model: it keeps the sentences most likely to matter
  later (names, numbers, dates, decisions, preferences, open tasks, file paths, identifiers),
  in their original order, within the token limit.
- :class:`OpenAISummarizer` asks any OpenAI-compatible ``/chat/completions`` endpoint through the
  official ``openai`` SDK (extra ``[openai]``).

Summaries are rolling: a :class:`Summary` records the messages it covers, and the next call
passes its text as ``previous`` with only the newly cut messages.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from session_migrator._errors import MissingDependencyError, SummarizerError
from session_migrator._messages import Message
from session_migrator._tokens import TokenCounter

__all__ = [
    "SUMMARY_PROMPT",
    "ExtractiveSummarizer",
    "OpenAISummarizer",
    "Summarizer",
    "Summary",
    "summary_request",
    "transcript",
]


@dataclass(frozen=True, slots=True)
class Summary:
    """A summary and the stretch of the conversation it covers (``first_id`` to ``last_id``)."""

    text: str
    first_id: str
    last_id: str
    covered_count: int
    summarizer: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "first_id": self.first_id,
            "last_id": self.last_id,
            "covered_count": self.covered_count,
            "summarizer": self.summarizer,
        }


@runtime_checkable
class Summarizer(Protocol):
    """Summarizes messages into at most ``max_tokens`` tokens (counted by ``counter``).

    ``previous`` is the text of the summary of the messages before these, to fold in. Raise
    :class:`~session_migrator.SummarizerError` on failure; callers fall back to an offline path.
    """

    @property
    def name(self) -> str: ...

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str: ...


def _describe(message: Message, limit: int = 400) -> str:
    parts: list[str] = []
    text = message.text.strip()
    if text:
        parts.append(
            text if len(text) <= limit else text[: limit // 2] + " ... " + text[-limit // 2 :]
        )
    for call in message.tool_calls:
        args = call.arguments if len(call.arguments) <= 200 else call.arguments[:200] + "..."
        parts.append(f"called {call.name}({args})")
    who = message.role if not message.name else f"{message.role} {message.name}"
    return f"{who}: " + " | ".join(parts)


def transcript(messages: Sequence[Message], limit_per_message: int = 2000) -> str:
    """A plain-text transcript, one line per message, long messages shortened in the middle."""
    return "\n".join(_describe(m, limit_per_message) for m in messages)


# -- extractive --------------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_SIGNALS: tuple[tuple[re.Pattern[str], float], ...] = (
    (re.compile(r"\d"), 1.5),  # numbers, dates, versions, amounts
    (re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]{2,}"), 1.0),  # names (not sentence-initial)
    (
        re.compile(
            r"\b(decid|agree|chose|choos|go(ing)? with|settled|final|confirm|approv|let'?s|"
            r"we'?ll|will use|switch(ed)? to|instead)",
            re.I,
        ),
        2.0,
    ),
    (
        re.compile(r"\b(prefer|favou?rite|like|dislike|hate|always|never|don'?t want|want)", re.I),
        2.0,
    ),
    (
        re.compile(
            r"\b(todo|to-do|need to|must|should|remember|deadline|due|next step|follow.?up|"
            r"action item|remind|pending|open question|blocker)",
            re.I,
        ),
        2.0,
    ),
    (
        re.compile(
            r"[\w.-]+/[\w./-]+|\b\w+\.(?:py|js|ts|tsx|json|md|ya?ml|toml|sql|csv|txt|rs|go)\b"
        ),
        2.0,
    ),
    (re.compile(r"`[^`]+`|\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z]{2,}[-_]?\d+\b"), 1.5),
    (re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+|https?://\S+"), 1.5),
    (re.compile(r"\b(my name|i am|i'm|call me|our|my)\b", re.I), 1.0),
)
_ROLE_WEIGHT = {"user": 1.5, "assistant": 1.0, "tool": 0.6, "system": 1.0}
_MAX_SENTENCE_CHARS = 320


_MAX_MISSES = 48
#: Sentences read from the head and from the tail of a tool output (logs and files repeat).
_TOOL_SENTENCES = 12


def _sentences(message: Message) -> list[str]:
    parts = _SENTENCE.split(message.text)
    if message.role == "tool" and len(parts) > 2 * _TOOL_SENTENCES:
        return parts[:_TOOL_SENTENCES] + parts[-_TOOL_SENTENCES:]
    return parts


# Literal pre-checks: a pattern cannot match a sentence that holds none of its literal parts, so
# it is not run (the score is the same, and most sentences skip most patterns). The patterns
# with re.I are pre-checked on the lower-cased sentence only when it is ASCII, where lower()
# folds case as re.I does.
_DECIDE = (
    "decid", "agree", "chose", "choos", "go with", "going with", "settled", "final", "confirm",
    "approv", "let", "we'll", "well", "will use", "switch", "instead",
)  # fmt: skip
_PREFER = ("prefer", "favo", "like", "hate", "always", "never", "want")
_TASK = (
    "todo", "to-do", "need to", "must", "should", "remember", "deadline", "due", "next step",
    "follow", "action item", "remind", "pending", "open question", "blocker",
)  # fmt: skip
_SELF = ("my", "our", "i am", "i'm", "call me")
_PATH = (
    "/", ".py", ".js", ".ts", ".json", ".md", ".yml", ".yaml", ".toml", ".sql", ".csv", ".txt",
    ".rs", ".go",
)  # fmt: skip


def _any_of(words: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(w) for w in words))


_GATES = (
    _any_of(_DECIDE), _any_of(_PREFER), _any_of(_TASK), _any_of(_PATH), _any_of(_SELF),
)  # fmt: skip


def _score_all(sentence: str) -> float:
    """The score by definition: the weights of the patterns that match."""
    return sum(weight for pattern, weight in _SIGNALS if pattern.search(sentence))


def _score(sentence: str) -> float:
    """:func:`_score_all`, running only the patterns whose literal parts are present."""
    (digit, w_digit), (name, w_name), (decide, w_decide), (prefer, w_prefer) = _SIGNALS[:4]
    (task, w_task), (path, w_path), (ident, w_ident), (contact, w_contact) = _SIGNALS[4:8]
    me, w_me = _SIGNALS[8]
    g_decide, g_prefer, g_task, g_path, g_self = _GATES
    plain = sentence.isascii()
    low = sentence.lower() if plain else sentence
    tail = sentence[1:]
    upper = tail != tail.lower()  # an upper-case letter after the first character
    total = 0.0
    if digit.search(sentence):
        total += w_digit
    if upper and name.search(sentence):
        total += w_name
    if (not plain or g_decide.search(low)) and decide.search(sentence):
        total += w_decide
    if (not plain or g_prefer.search(low)) and prefer.search(sentence):
        total += w_prefer
    if (not plain or g_task.search(low)) and task.search(sentence):
        total += w_task
    if g_path.search(sentence) and path.search(sentence):
        total += w_path
    if ("`" in sentence or "_" in sentence or upper) and ident.search(sentence):
        total += w_ident
    if ("@" in sentence or "://" in sentence) and contact.search(sentence):
        total += w_contact
    if (not plain or g_self.search(low)) and me.search(sentence):
        total += w_me
    return total


class _DigestMemo:
    """Values computed from a text, remembered by the text's digest (no text is kept) for the
    texts a rolling summary brings back at every update: its own earlier lines. Bounded.
    """

    def __init__(self, limit: int = 32_768) -> None:
        self._limit = limit
        self._values: dict[tuple[str, bytes], float] = {}

    def get(self, kind: str, text: str, compute: Callable[[str], float]) -> float:
        key = (
            kind,
            hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(),
        )
        value = self._values.get(key)
        if value is None:
            if len(self._values) >= self._limit:
                self._values.clear()
            value = self._values[key] = compute(text)
        return value


_memo = _DigestMemo()


class ExtractiveSummarizer:
    """An offline summarizer that keeps the sentences a later turn is most likely to need.

    Each sentence is scored by what it holds (numbers and dates, names, decisions, preferences,
    open tasks, paths and identifiers, addresses), weighted by role (the user's own words count
    most); the best ones are kept in their original order within ``max_tokens``. Tool calls are
    kept as ``called name(args)``. Deterministic.

    >>> from session_migrator import Message, TiktokenCounter
    >>> s = ExtractiveSummarizer()
    >>> text = s.summarize([Message("user", "My budget is $4,200. Hello.")], max_tokens=50,
    ...                    counter=TiktokenCounter())
    >>> "$4,200" in text
    True
    """

    name = "extractive"

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str:
        # candidates as two parallel lists (a candidate's position is its order): a long cut
        # part yields a great many, and a tuple each would double what they take
        scores: list[float] = []
        lines: list[str] = []
        if previous:
            for line in previous.splitlines():
                line = line.strip()
                if line.startswith("- "):
                    # earlier picks keep a bonus: they were already judged worth keeping
                    scores.append(_memo.get("score", line, _score) + 1.0)
                    lines.append(line)
        for message in messages:
            weight = _ROLE_WEIGHT.get(message.role, 1.0)
            label = message.role if not message.name else f"{message.role}:{message.name}"
            for call in message.tool_calls:
                args = (
                    call.arguments if len(call.arguments) <= 160 else call.arguments[:160] + "..."
                )
                scores.append(2.5)
                lines.append(f"- [{label}] called {call.name}({args})")
            for raw in _sentences(message):
                sentence = " ".join(raw.split())
                if len(sentence) < 8:
                    continue
                if len(sentence) > _MAX_SENTENCE_CHARS:
                    sentence = sentence[: _MAX_SENTENCE_CHARS - 3] + "..."
                score = _score(sentence) * weight
                if score <= 0:
                    continue
                scores.append(score)
                lines.append(f"- [{label}] {sentence}")
        # best first, ties in their original order (a reversed sort keeps equal keys in order)
        ranking = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)
        del scores
        chosen: list[int] = []
        seen: set[str] = set()
        used = 0
        misses = 0
        for position in ranking:
            line = lines[position]
            if line in seen:
                continue
            # a lower bound (one token per 8 characters) skips lines that cannot fit, untokenized
            if used + len(line) // 8 + 1 > max_tokens:
                misses += 1
            else:
                cost = int(_memo.get("tokens:" + counter.name, line, counter.count_text)) + 1
                if used + cost <= max_tokens:
                    chosen.append(position)
                    seen.add(line)
                    used += cost
                    misses = 0
                    continue
                misses += 1
            if misses >= _MAX_MISSES or used >= max_tokens - 4:
                break
        chosen.sort()
        return "\n".join(lines[position] for position in chosen)


# -- OpenAI-compatible LLM ---------------------------------------------------------------------

#: What LLM summarizers are asked (``{max_tokens}`` is filled in).
SUMMARY_PROMPT = (
    "You compress the earlier part of a conversation so that another model can continue it "
    "without it. Write a dense summary in the conversation's language. Keep every name, number, "
    "date, amount, decision, stated preference, open task or question, file path, identifier and "
    "error message that a later turn could need. Do not add anything that is not in the text. "
    "Stay under {max_tokens} tokens."
)


def summary_request(
    messages: Sequence[Message],
    *,
    max_tokens: int,
    counter: TokenCounter,
    previous: str | None = None,
    max_input_tokens: int = 60_000,
    prompt: str = SUMMARY_PROMPT,
) -> tuple[str, str]:
    """The (system, user) texts that ask a chat model for a summary of ``messages``.

    Every LLM summarizer (OpenAI-compatible, LangChain, LlamaIndex) sends these. A transcript
    longer than ``max_input_tokens`` keeps its newest half verbatim and the older part as an
    extractive summary, so the request fits the summarizing model; ``previous`` (the summary so
    far) is folded in. ``prompt`` may use ``{max_tokens}``.
    """
    text = transcript(messages)
    if counter.count_text(text) > max_input_tokens:
        keep: list[Message] = []
        used = 0
        for m in reversed(messages):
            cost = counter.count_message(m)
            if used + cost > max_input_tokens // 2:
                break
            keep.append(m)
            used += cost
        keep.reverse()
        older = messages[: len(messages) - len(keep)]
        digest = ExtractiveSummarizer().summarize(
            older, max_tokens=max_input_tokens // 4, counter=counter
        )
        text = f"(older part, extracted)\n{digest}\n(newer part)\n{transcript(keep)}"
    user = f"Conversation to summarize:\n{text}"
    if previous:
        user = f"Summary so far (fold it in):\n{previous}\n\n{user}"
    return prompt.format(max_tokens=max_tokens), user


_DEEPSEEK_BASE_URL = "https://api.deepseek.com"


class OpenAISummarizer:
    """Summaries from any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, DeepSeek,
    vLLM, Ollama, OpenRouter, ...), through the official ``openai`` SDK.

    Configuration, argument first: ``api_key`` or ``OPENAI_API_KEY``, else ``DEEPSEEK_API_KEY``
    (which also defaults ``base_url`` to DeepSeek's and ``model`` to ``deepseek-chat``);
    ``base_url`` or ``OPENAI_BASE_URL``. ``timeout`` (seconds) and ``max_retries`` are passed to
    the client. Every failure (HTTP error, rate limit, timeout, malformed reply, empty text) is
    raised as :class:`~session_migrator.SummarizerError`.

    A transcript longer than ``max_input_tokens`` keeps its newest part verbatim and the older
    part as an extractive summary, so the request itself fits the summarizing model.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_input_tokens: int = 60_000,
        temperature: float = 0.0,
        client: Any = None,
    ) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - exercised without the extra
            raise MissingDependencyError("The OpenAI summarizer", "openai") from exc
        key = api_key or os.environ.get("OPENAI_API_KEY") or None  # an empty variable is unset
        default_model = "gpt-4o-mini"
        if key is None and os.environ.get("DEEPSEEK_API_KEY"):
            key = os.environ["DEEPSEEK_API_KEY"]
            base_url = base_url or _DEEPSEEK_BASE_URL
            default_model = "deepseek-chat"
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        if client is None and key is None:
            raise SummarizerError(
                "No API key for the OpenAI summarizer: pass api_key=..., or set OPENAI_API_KEY "
                "(or DEEPSEEK_API_KEY for DeepSeek)."
            )
        self.model = model or default_model
        self.max_input_tokens = max_input_tokens
        self.temperature = temperature
        self._client: Any = client or openai.OpenAI(
            api_key=key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )
        # ValueError: a body that is not JSON, or JSON that is not a completion
        self._errors: tuple[type[BaseException], ...] = (openai.OpenAIError, ValueError)

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    def _request(
        self,
        messages: Sequence[Message],
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None,
    ) -> list[dict[str, str]]:
        system, user = summary_request(
            messages,
            max_tokens=max_tokens,
            counter=counter,
            previous=previous,
            max_input_tokens=self.max_input_tokens,
        )
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str:
        request = self._request(messages, max_tokens, counter, previous)
        try:
            response = self._client.chat.completions.create(
                model=self.model,
                messages=request,
                max_tokens=max(16, max_tokens),
                temperature=self.temperature,
            )
        except self._errors as exc:
            raise SummarizerError(f"{self.name} failed: {type(exc).__name__}: {exc}") from exc
        try:
            content = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise SummarizerError(f"{self.name} returned a malformed reply: {exc}") from exc
        if not isinstance(content, str) or not content.strip():
            raise SummarizerError(f"{self.name} returned no summary text")
        return content.strip()
