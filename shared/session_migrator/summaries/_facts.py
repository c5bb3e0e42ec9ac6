"""A user's facts and preferences, read offline from what they say, by rules.

:func:`extract_facts` reads plain first-person statements from a user message, clause by clause
("I'm vegetarian, and my daughter is allergic to peanuts" is two facts):

- ``I'm a teacher`` / ``I am an engineer`` (what the user is);
- ``I'm vegetarian`` (a diet or a condition: vegan, diabetic, lactose intolerant, ...);
- ``I'm allergic to X`` / ``my daughter is allergic to X`` (an allergy, by whom);
- ``my X is Y`` (``my name is Ann``, ``my daughter's school is Elm Park``);
- ``I prefer X``, ``I live in X``, ``I work at/as X``.

Each :class:`Fact` has a ``key``: a later statement with the same key replaces an earlier one
("my name is Ann", then "my name is Anna"). Questions and hedged or negated statements
("I'm not sure", "is my name Ann?") are not facts, nor is anything that looks like a secret or
an identifying number (a card, a code, a password, a run of digits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SECRET", "Fact", "extract_facts"]

#: Diets and lasting conditions an ``I'm X`` statement is a fact about.
_CONDITIONS = (
    r"vegetarian|vegan|pescatarian|pescetarian|kosher|halal|diabetic|celiac|coeliac|"
    r"lactose[- ]intolerant|gluten[- ]intolerant|gluten[- ]free|left[- ]handed|right[- ]handed|"
    r"colou?r[- ]?blind|deaf|blind|pregnant|retired|married|divorced|single|widowed|sober"
)
_CLAUSES = re.compile(r"(?<=[.!;])\s+|,\s*(?:and|but)\s+|\s+(?:and|but)\s+(?=(?:i|my)\b)|\n+", re.I)
_I_AM = r"(?:i'm|i’m|i am)"
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("allergy", re.compile(rf"^{_I_AM}\s+(?:also\s+)?allergic\s+to\s+(?P<what>.+)$", re.I)),
    (
        "their allergy",
        re.compile(
            r"^my\s+(?P<who>[\w' -]{1,40}?)\s+(?:is|are)\s+(?:also\s+)?allergic\s+to\s+"
            r"(?P<what>.+)$",
            re.I,
        ),
    ),
    ("condition", re.compile(rf"^{_I_AM}\s+(?:a\s+)?(?P<what>(?:{_CONDITIONS}))\b.*$", re.I)),
    ("role", re.compile(rf"^{_I_AM}\s+(?:a|an)\s+(?P<what>[\w' -]{{2,60}})$", re.I)),
    ("prefer", re.compile(r"^i\s+(?:really\s+)?prefer\s+(?P<what>.+)$", re.I)),
    ("home", re.compile(r"^i\s+live\s+in\s+(?P<what>.+)$", re.I)),
    ("work", re.compile(r"^i\s+work\s+(?:as|at|for)\s+(?P<what>.+)$", re.I)),
    (
        "my",
        re.compile(r"^my\s+(?P<who>[\w' -]{1,40}?)\s+(?:is|are)\s+(?P<what>(?!not\b).+)$", re.I),
    ),
)
#: What is never kept as a fact: secrets and numbers that identify (a card, a code, a password).
SECRET = re.compile(
    r"\d[\d -]{4,}\d|\b(?:password|passcode|pin|card|cvv|code|token|key|secret|ssn|"
    r"social security|account number|iban)\b",
    re.I,
)
_HEDGE = re.compile(r"\b(?:not|maybe|perhaps|sure|might|wonder|think|guess|if)\b", re.I)


@dataclass(frozen=True)
class Fact:
    """One fact a user stated: ``key`` (what it is about; a later fact with the same key
    replaces it), ``text`` (as the user put it, in the first person) and, when known, the id of
    the message that stated it (``source_id``)."""

    key: str
    text: str
    source_id: str | None = None


def _clean(clause: str) -> str:
    clause = clause.strip().strip("\"'“”").strip()
    clause = re.sub(
        r"^(?:oh|well|also|btw|by the way|so|and|but|just so you know)[,\s]+",
        "",
        clause,
        flags=re.I,
    )
    return clause.rstrip(".!; ").strip()


def extract_facts(text: str) -> list[Fact]:
    """The facts ``text`` (what a user said) states plainly (see the module docstring), in
    order; the last of the same key wins."""
    found: dict[str, Fact] = {}
    for raw in _CLAUSES.split(text):
        clause = _clean(raw)
        if not clause or "?" in raw or len(clause) > 160 or SECRET.search(clause):
            continue
        for kind, rule in _RULES:
            match = rule.match(clause)
            if match is None:
                continue
            what = " ".join(match.group("what").split()).lower()
            if kind != "my" and _HEDGE.search(clause):
                break
            if kind == "my" and _HEDGE.search(match.group("who")):
                break
            who = " ".join(match.groupdict().get("who", "").split()).lower()
            if kind in ("allergy", "their allergy"):
                key = f"{who or 'i'} allergic to {what}"
            elif kind == "condition":
                key = f"i am {what}"
            elif kind == "role":
                key = "i am a"
            elif kind == "my":
                key = f"my {who}"
            else:
                key = kind if kind in ("home", "work") else f"{kind} {what}"
            fact = Fact(key, clause[0].upper() + clause[1:] + ".")
            found.pop(key, None)
            found[key] = fact
            break
    return list(found.values())
