"""Summarizers: turn the cut part of a conversation into a short text.

- :class:`ExtractiveSummarizer` needs no model: it says what happened, grouped and dated
  (decisions and the proposals agreed to, facts: names, numbers, dates, identifiers, paths;
  open tasks; files touched), in the words that were said, within the token limit. It reads at
  most a budget proportional to the summary's size (long messages by their head and tail), so
  its cost grows little with the conversation.
- :class:`OpenAISummarizer` asks any OpenAI-compatible ``/chat/completions`` endpoint through the
  official ``openai`` SDK (extra ``[openai]``).

Summaries are rolling: a :class:`Summary` records the messages it covers, and the next call
passes its text as ``previous`` with only the newly cut messages.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from session_migrator._deadline import Deadline, DeadlinePassed, retry_wait
from session_migrator._errors import MissingDependencyError, SummarizerError
from session_migrator._redact import redact_secrets
from session_migrator.counting._counter import TokenCounter
from session_migrator.messages._messages import Message
from session_migrator.summaries._extractive import ExtractiveSummarizer

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


#: The key sent to a server of your own when none is configured (the SDK needs a string).
_NO_KEY = "no-key"
_DEEPSEEK_BASE_URL = "https://api.deepseek.com"


class OpenAISummarizer:
    """Summaries from any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, DeepSeek,
    vLLM, Ollama, OpenRouter, ...), through the official ``openai`` SDK.

    Configuration, argument first: ``api_key`` or ``OPENAI_API_KEY``, else ``DEEPSEEK_API_KEY``
    (which also defaults ``base_url`` to DeepSeek's and ``model`` to ``deepseek-chat``);
    ``base_url`` or ``OPENAI_BASE_URL`` (a server of your own, such as Ollama or vLLM, needs no
    key: one that wants a key answers 401, a :class:`~session_migrator.SummarizerError`).
    ``timeout`` (seconds, default 30) is one deadline for each :meth:`summarize` call, covering
    its ``max_retries`` retries and their waits: a server that never answers, trickles its reply
    a byte at a time or asks to retry later than the deadline costs at most ``timeout``, then
    the caller falls back offline and reports it. A retry (connection error, timeout, 408, 409,
    429, 5xx) waits what ``Retry-After`` asks, or 0.5 s doubling, when that fits the deadline.
    Every failure (HTTP error, rate limit, timeout, malformed reply, empty text) is raised as
    :class:`~session_migrator.SummarizerError`.

    A transcript longer than ``max_input_tokens`` keeps its newest part verbatim and the older
    part as an extractive summary, so the request itself fits the summarizing model.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
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
            if base_url is None:
                raise SummarizerError(
                    "No API key for the OpenAI summarizer: pass api_key=... (the CLI: "
                    "--summarizer-api-key-env VAR), or set OPENAI_API_KEY (or DEEPSEEK_API_KEY "
                    "for DeepSeek); a server of your own (base_url=...) needs none."
                )
            key = _NO_KEY  # a server of one's own (Ollama, vLLM, llama.cpp) takes any key
        if not timeout > 0 or max_retries < 0:
            raise SummarizerError(
                f"timeout must be seconds > 0 and max_retries >= 0, got {timeout!r} and "
                f"{max_retries!r}"
            )
        self.model = model or default_model
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.max_input_tokens = max_input_tokens
        self.temperature = temperature
        self._client: Any = client or openai.OpenAI(
            api_key=key, base_url=base_url, timeout=timeout, max_retries=0
        )  # (retries are made here, within the deadline)
        # ValueError: a body that is not JSON, or JSON that is not a completion
        self._errors: tuple[type[BaseException], ...] = (openai.OpenAIError, ValueError)

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    def _create(self, request: list[dict[str, str]], max_tokens: int, seconds: float) -> Any:
        client = self._client
        if hasattr(client, "with_options"):  # (a client given by the caller may not have it)
            client = client.with_options(timeout=seconds, max_retries=0)
        return client.chat.completions.create(
            model=self.model,
            messages=request,
            max_tokens=max(16, max_tokens),
            temperature=self.temperature,
        )

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
        deadline = Deadline(self.timeout)
        attempt = 0
        while True:
            try:
                response = deadline.call(self._create, request, max_tokens)
                break
            except DeadlinePassed as exc:
                raise SummarizerError(
                    redact_secrets(f"{self.name} failed: {exc}", self._client)
                ) from None
            except self._errors as exc:
                wait = retry_wait(exc, attempt)
                if wait is None or attempt >= self.max_retries or not deadline.allows(wait):
                    note = deadline.why_not(wait) if attempt < self.max_retries else ""
                    raise SummarizerError(
                        redact_secrets(
                            f"{self.name} failed: {type(exc).__name__}: {exc}{note}", self._client
                        )
                    ) from exc
                time.sleep(wait)
                attempt += 1
        try:
            content = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise SummarizerError(
                redact_secrets(f"{self.name} returned a malformed reply: {exc}", self._client)
            ) from exc
        if not isinstance(content, str) or not content.strip():
            raise SummarizerError(f"{self.name} returned no summary text")
        return content.strip()
