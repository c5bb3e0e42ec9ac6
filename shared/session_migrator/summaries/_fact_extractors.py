"""Fact extractors: what a user stated about themselves, read from their messages.

A :class:`FactExtractor` has one method, ``extract(messages)``, which answers the facts the
user's messages state, each a :class:`~session_migrator.summaries._facts.Fact` (or a plain
``(key, text)`` pair): ``key`` says what it is about, so that a later statement about the same
thing replaces the earlier one, and ``source_id`` (when known) the message that stated it.

- :class:`RulesFactExtractor`: offline, by rules (:func:`~.summaries._facts.extract_facts`):
  plain statements only ("I'm vegetarian", "my daughter is allergic to peanuts", "I prefer
  ...").
- :class:`ModelFactExtractor`: asks a chat model for the facts as JSON (:data:`FACTS_PROMPT`,
  :func:`facts_request`), told the facts known already so that it names a correction with the
  key of what it corrects ("I eat fish now" replaces "I'm vegetarian"). A model that fails
  (an error, a timeout, a reply that is not the JSON asked for) leaves the rules' facts: the
  ``fallback`` (``None``: the failure is raised as :class:`~session_migrator.SummarizerError`).
  :class:`OpenAIFactExtractor` asks any OpenAI-compatible endpoint (configured as
  :class:`~session_migrator.OpenAISummarizer` is, or sharing one's client); the adapters add
  ``LangChainFactExtractor`` and ``LlamaIndexFactExtractor``.

Nothing that looks like a secret or an identifying number is kept, whoever extracted it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from session_migrator._deadline import Deadline, DeadlinePassed, retry_wait
from session_migrator._errors import SummarizerError
from session_migrator._redact import redact_secrets
from session_migrator.messages._messages import Message
from session_migrator.summaries._facts import SECRET, Fact, extract_facts
from session_migrator.summaries._summarizers import OpenAISummarizer

__all__ = [
    "FACTS_PROMPT",
    "FactExtractor",
    "ModelFactExtractor",
    "OpenAIFactExtractor",
    "RulesFactExtractor",
    "as_fact",
    "facts_request",
    "parse_facts",
]

#: What a model extractor is asked (the transcript and the known facts follow, as the user part).
FACTS_PROMPT = (
    "You keep a personal assistant's memory of its user. Read the conversation below and list "
    "the lasting facts and preferences the USER states about themselves or their family, home, "
    "work, diet, health, likes and dislikes (not what the assistant says, not questions, not "
    "passing plans, not hypotheticals, never passwords, card or account numbers or codes). "
    "Write each fact as one short first-person sentence in the user's language. Give each a "
    "short lowercase key naming what it is about; when a fact corrects or updates a known fact, "
    "reuse that fact's key. Answer with JSON only, no prose: "
    '{"facts": [{"key": "...", "text": "...", "message": <the number of the message>}]} '
    '(an empty list when the user states nothing lasting: {"facts": []}).'
)
#: The most characters of one message a model extractor is sent.
MESSAGE_CHARS = 2_000
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.I)


@runtime_checkable
class FactExtractor(Protocol):
    """Reads the facts a user's ``messages`` state (see the module docstring)."""

    def extract(self, messages: Sequence[Message]) -> Sequence[Fact | tuple[str, str]]: ...


def as_fact(value: Fact | tuple[str, str] | Sequence[str]) -> Fact:
    """An extractor's answer as a :class:`Fact` (a pair is ``(key, text)``)."""
    if isinstance(value, Fact):
        return value
    key, text, *rest = value
    return Fact(str(key), str(text), str(rest[0]) if rest and rest[0] else None)


class RulesFactExtractor:
    """The plain statements of the user's messages, read by rules, offline (see
    :mod:`session_migrator.summaries._facts`); each with the id of its message.

    >>> from session_migrator import Message
    >>> RulesFactExtractor().extract([Message("user", "I'm vegan.", id="m1")])
    [Fact(key='i am vegan', text="I'm vegan.", source_id='m1')]
    """

    name = "rules"

    def extract(self, messages: Sequence[Message]) -> list[Fact]:
        found: list[Fact] = []
        for m in messages:
            if m.role == "user" and m.marker is None:
                found += [Fact(f.key, f.text, m.id) for f in extract_facts(m.text)]
        return found


def facts_request(
    messages: Sequence[Message], known: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """The (system, user) texts that ask a chat model for the facts of ``messages`` (numbered
    from 1; ``known``: the facts kept already, key to text). Every model extractor sends them."""
    lines = []
    for n, m in enumerate(messages, start=1):
        text = " ".join(m.text.split())
        if len(text) > MESSAGE_CHARS:
            text = text[: MESSAGE_CHARS // 2] + " ... " + text[-MESSAGE_CHARS // 2 :]
        lines.append(f"[{n}] {m.role}: {text}")
    user = "Conversation:\n" + "\n".join(lines)
    if known:
        kept = "\n".join(f"- {key}: {text}" for key, text in known.items())
        user = f"Facts known already (key: text):\n{kept}\n\n{user}"
    return FACTS_PROMPT, user


def parse_facts(reply: str, messages: Sequence[Message], name: str = "the model") -> list[Fact]:
    """The facts in a model's ``reply`` to :func:`facts_request` (each with the id of the message
    its number names, else of the newest user message); :class:`SummarizerError` when the reply
    is not the JSON asked for. A fact that looks like a secret is dropped."""
    text = _FENCE.sub("", reply.strip())
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    try:
        data = json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        try:  # (prose after the JSON)
            data, _ = json.JSONDecoder().raw_decode(text[start:])
        except ValueError:
            data = None
    items = data.get("facts") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise SummarizerError(f"{name} did not answer the JSON facts asked for: {reply[:200]!r}")
    users = [m for m in messages if m.role == "user"]
    newest = users[-1].id if users else None
    facts: list[Fact] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        key, said, n = item.get("key"), item.get("text"), item.get("message")
        if not isinstance(key, str) or not isinstance(said, str):
            continue
        key, said = " ".join(key.lower().split())[:80], " ".join(said.split())[:300]
        if not key or not said or SECRET.search(said):
            continue
        source = newest
        if isinstance(n, int) and 1 <= n <= len(messages) and messages[n - 1].role == "user":
            source = messages[n - 1].id
        facts.append(Fact(key, said, source))
    return facts


class ModelFactExtractor:
    """The facts a chat model reads from the messages (see the module docstring); a subclass
    says how the model is asked (:meth:`ask`). ``failures`` counts the calls that fell back,
    ``last_error`` says why the last one did."""

    name = "model"

    def __init__(self, *, fallback: FactExtractor | None = None) -> None:
        self.fallback: FactExtractor | None = fallback
        self.failures = 0
        self.last_error: str | None = None

    def ask(self, system: str, user: str) -> str:
        """The model's reply to the request (raise on failure)."""
        raise NotImplementedError

    def extract(
        self, messages: Sequence[Message], known: Mapping[str, str] | None = None
    ) -> list[Fact]:
        """The facts ``messages`` state; ``known`` (key to text) lets a correction reuse the key
        of what it corrects."""
        if not any(m.role == "user" for m in messages):
            return []
        system, user = facts_request(messages, known)
        try:
            return parse_facts(self.ask(system, user), messages, self.name)
        except Exception as exc:
            error = exc if isinstance(exc, SummarizerError) else None
            self.failures += 1
            self.last_error = str(error or f"{self.name} failed: {type(exc).__name__}: {exc}")
            if self.fallback is None:
                raise error or SummarizerError(self.last_error) from exc
            return [as_fact(f) for f in self.fallback.extract(messages)]


class OpenAIFactExtractor(ModelFactExtractor):
    """Facts read by any OpenAI-compatible ``/chat/completions`` endpoint, configured as
    :class:`~session_migrator.OpenAISummarizer` is (``model``, ``base_url``, ``api_key``,
    ``timeout``, ``client``; or ``summarizer=``: one's client and model). ``timeout`` is one
    deadline for the call and its retries; a failure leaves the rules' facts (``fallback``).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        client: Any = None,
        summarizer: OpenAISummarizer | None = None,
        max_tokens: int = 800,
        fallback: FactExtractor | None = None,
    ) -> None:
        super().__init__(fallback=RulesFactExtractor() if fallback is None else fallback)
        self.summarizer = summarizer or OpenAISummarizer(
            model, base_url=base_url, api_key=api_key, timeout=timeout, client=client
        )
        self.max_tokens = max_tokens

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"openai:{self.summarizer.model}"

    def ask(self, system: str, user: str) -> str:
        s = self.summarizer
        request = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        deadline = Deadline(s.timeout)
        for attempt in range(s.max_retries + 1):
            try:
                response = deadline.call(s._create, request, self.max_tokens)
                break
            except DeadlinePassed as exc:
                raise SummarizerError(redact_secrets(f"{self.name}: {exc}", s._client)) from None
            except s._errors as exc:
                wait = retry_wait(exc, attempt)
                if wait is None or attempt >= s.max_retries or not deadline.allows(wait):
                    message = f"{self.name} failed: {type(exc).__name__}: {exc}"
                    raise SummarizerError(redact_secrets(message, s._client)) from exc
                time.sleep(wait)
        content = response.choices[0].message.content
        if not isinstance(content, str) or not content.strip():
            raise SummarizerError(f"{self.name} returned no text")
        return content
