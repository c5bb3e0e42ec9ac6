"""The fake model of :mod:`benchmarks.agent_progress`: it re-issues any lookup whose result it
cannot see, as a real model does.

Each user turn asks ``QUESTION <n>:`` and needs :data:`ROUNDS` rounds of :data:`PER_ROUND`
lookups; every lookup returns about :data:`RESULT_TOKENS` tokens that open with
``RESULT <key>:``. The model reads everything it is sent (any role, a summary or a note too),
finds the current question (the newest user message that asks one), and calls the next lookups
of that question whose ``RESULT <key>:`` it cannot see; once it sees all of them, it answers.
A shrunk result keeps its head, so it stays visible; a summary that only names the call does
not make its result visible.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

ROUNDS = 3
PER_ROUND = 2
TURNS = 8
RESULT_TOKENS = 700
USER_TOKENS = 300
SYSTEM_PROMPT = "You are a research agent. Look up what each question needs, then answer."
_QUESTION = re.compile(r"QUESTION (\d+):")


def question_of(text: str) -> int | None:
    """The number of the question ``text`` asks (``None``: none)."""
    found = _QUESTION.findall(text)
    return int(found[-1]) if found else None


def keys(turn: int, rounds: int = ROUNDS) -> list[str]:
    """The lookups the question of ``turn`` needs (``rounds`` rounds), in the order the model
    calls them."""
    return [f"t{turn}-r{r}-{j}" for r in range(rounds) for j in range(PER_ROUND)]


def question(turn: int) -> str:
    """The user's message of ``turn`` (about :data:`USER_TOKENS` tokens)."""
    words = " ".join(f"the ledger of region {turn} account {k} for the audit" for k in range(24))
    return f"QUESTION {turn}: gather the figures on {words}."


def lookup_result(key: str) -> str:
    """What the lookup of ``key`` returns (about :data:`RESULT_TOKENS` tokens)."""
    rows = "\n".join(
        f"{key} row {i:03d}: amount {((i * 7919) % 9973) / 100:.2f} EUR, status settled"
        for i in range(RESULT_TOKENS // 20)
    )
    return f"RESULT {key}:\n{rows}\nEND {key}"


@dataclass
class Decision:
    """What the model does next: call ``calls`` (lookup keys), or answer ``answer``."""

    turn: int | None
    calls: list[str] = field(default_factory=list)
    answer: str = ""


def decide(messages: Iterable[tuple[str, str]], rounds: int = ROUNDS) -> Decision:
    """The next step for ``messages`` given as ``(role, text)`` (text with tool calls' names and
    arguments, if the caller wants them read); a question needs ``rounds`` rounds."""
    texts = list(messages)
    turn: int | None = None
    for role, text in texts:
        if role == "user":
            found = _QUESTION.findall(text)
            if found:
                turn = int(found[-1])
    if turn is None:
        return Decision(None, answer="I see no question.")
    seen = "\n".join(text for _, text in texts)
    missing = [k for k in keys(turn, rounds) if f"RESULT {k}:" not in seen]
    if not missing:
        return Decision(turn, answer=f"The figures of question {turn} are gathered: all settled.")
    return Decision(turn, calls=missing[:PER_ROUND])


@dataclass
class Tally:
    """What one agent run records: each request's tokens (o200k), the model calls of each
    turn, the turns that never finished (or answered another question) and those refused."""

    sent: list[int] = field(default_factory=list)
    calls_per_turn: list[int] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: requests sent without the ``read_context`` tool, and those of them that name it anyway
    #: (a marker saying ``read_context(id=...)``: a tool the model was not given)
    without_reader: int = 0
    naming_missing_reader: int = 0

    def request(self, tokens: int) -> None:
        self.sent.append(tokens)
