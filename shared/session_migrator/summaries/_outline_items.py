"""An item of the offline summary's outline as it is written (its date and its speaker's
label) and as a rolling summary reads it back (its label and text, what it scored, what it says
without its values). See :mod:`session_migrator.summaries._outline`.
"""

from __future__ import annotations

import re

from session_migrator.messages._messages import Message
from session_migrator.summaries._sentences import _score

__all__: list[str] = []

#: Scores of the items found from the conversation's shape (a sentence scores by what it holds,
#: about 2 to 10): an agreed proposal and an open request come before most sentences.
AGREED, REQUEST, TODO = 4.0, 6.0, 7.0
#: A user's request in a hand-off's summary: before any other item.
REQUESTED = 100.0
FILE_SCORES = {"created": 4.0, "edited": 4.0, "written": 4.0, "deleted": 4.0, "read": 2.0}
#: A sentence's score is weighted by who said it: the user's own words count most.
ROLE_WEIGHT = {"user": 1.5, "assistant": 1.0, "tool": 0.6, "system": 1.0}
#: A fact's values: numbers and identifiers, and names ("The staging port is 6432.")
_VALUES = re.compile(r"\b[^\W\d_]*[\d_]\w*|\b[A-Z]\w*")
_WORDS = re.compile(r"[a-z]{3,}.*[a-z]{3,}")
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def dated(message: Message) -> str:
    """``[Mon 2026-01-12] `` when the message has a time (the weekday, for "next Tuesday")."""
    when = message.timestamp
    return "" if when is None else f"[{_WEEKDAYS[when.weekday()]} {when:%Y-%m-%d}] "


def label_of(message: Message) -> str:
    return message.role if not message.name else f"{message.role}:{message.name}"


def frame_of(text: str) -> str:
    """What an item says without its values (numbers, identifiers, names), to tell the same
    fact said again with another value: "" when it holds no value or little else."""
    if text.startswith("agreed: "):
        text = text[8:]
    frame = _VALUES.sub("#", text)
    return frame if frame != text and _WORDS.search(frame) else ""


def body_of(line: str) -> tuple[str, str]:
    """A written item's label (``user``, ``agreed``, ...; "" for none) and text, without its
    ``- `` and its date (an item of an older summary, ``- [user, 3 Mar 2026] ...``, has its
    label in the brackets)."""
    body = line[2:]
    label = ""
    if body.startswith("[") and "] " in body:
        inside, body = body[1 : body.index("] ")], body[body.index("] ") + 2 :]
        if "," in inside:
            label = inside.split(",")[0].strip()
    head, colon, rest = body.partition(": ")
    if colon and not label and head.replace(":", "").replace("-", "").isalnum():
        label, body = head, rest
    return label.split(":")[0], body


def _kept_sentence(line: str) -> float:
    """What a previous sentence item scores as it did when it was read."""
    label, body = body_of(line)
    if label == "agreed":
        return AGREED + _score(body)
    if label == "to-do":
        return TODO
    return _score(body) * ROLE_WEIGHT.get(label, 1.0)


def _kept_request(line: str) -> float:
    label, body = body_of(line)
    return TODO if label == "to-do" else REQUEST + _score(body) / 2


def _kept_file(line: str) -> float:
    actions = line[line.find("`: ") + 3 :].split(", ")
    return max(FILE_SCORES.get(a.strip(), 1.5) for a in actions)


def _kept_requested(line: str) -> float:
    return REQUESTED


SCORERS = (_kept_sentence, _kept_sentence, _kept_request, _kept_file, _kept_requested)
