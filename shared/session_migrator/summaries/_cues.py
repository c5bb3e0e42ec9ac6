"""Cues in what was said, for the offline summary: a request, a proposal and the yes to it,
whether the work was done or failed, a goodbye, and the sittings a conversation falls into.

A user message that asks for something is a request; it is settled when, later in the same
sitting, the assistant says something was done or says goodbye, or the user closes ("No, that's
all"). An assistant message that asks to confirm something, answered by a plain yes, is an
agreement; what the assistant says next tells whether it was carried out.

The cues are searched in the first 300 characters of every message at once (:func:`cue_bits`):
an alternation of words, tried message by message, costs tens of microseconds each; one scan of
all of them, factored by letters and started at a character the engine skips to, a few.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from datetime import timedelta
from itertools import accumulate

from session_migrator.messages._messages import Message
from session_migrator.summaries._sentences import _trie

__all__: list[str] = []

#: What a fact holds: a number, a name (not a sentence's first word), a path, an identifier, an
#: address (the fact signals of the extractive scores, searched in the original text).
FACTLIKE = re.compile(
    r"\d|(?<!^)(?<![.!?]\s)\b[A-Z][a-z]{2,}|[\w.-]+/[\w./-]+|`[^`]+`|\b[a-z]+_[a-z0-9_]+\b|"
    r"\b[a-z]+[A-Z]\w*\b|\b[A-Z]{2,}|@[\w-]+\.|https?://|"
    r"\.(?:py|js|ts|tsx|json|md|ya?ml|toml|sql|csv|txt|rs|go)\b"
)
#: A pause this long between two messages starts a new sitting.
SITTING_GAP = timedelta(hours=1)


#: What :func:`cue_bits` finds in a message (bits).
ASKS, CLOSES, AGREES, FAREWELL, FAILED, DONE = (1 << k for k in range(6))
#: word or phrase -> the cues it gives
_CUES: dict[str, int] = {}


def _cue(bit: int, *phrases: str) -> None:
    for phrase in phrases:
        _CUES[phrase] = _CUES.get(phrase, 0) | bit


_cue(
    ASKS,
    "i need", "i want", "i'd like", "id like", "i would like", "i wanna", "i'm looking for",
    "im looking for", "can you", "could you", "would you", "will you", "help me", "find me",
    "get me", "let's", "please", "book", "reserve", "schedule",
)  # fmt: skip
#: Words a request may begin with before its verb ("Also bump ...", "Now fix ...").
_LEADS = ("also", "and", "then", "now", "next", "so", "ok", "okay", "alright", "great", "please")
#: A request's first word (after a label such as "Next:"): add, fix, port, ...
_IMPERATIVE = frozenset(
    "add fix port rename update change remove delete create write run check make move implement "
    "refactor test bump find get show send set put play buy order cancel look search read open "
    "review prepare draft deploy release merge migrate tell give call".split()
)
_cue(
    CLOSES,
    "that's all", "thats all", "that is all", "that was all", "that will be all",
    "that will be it", "that will be everything", "that would be all", "that would be it",
    "that'll be all", "that'll be it", "that's everything", "that is everything", "all i need",
    "all i want", "no thanks", "no thank", "nothing else", "nothing more", "nothing for now",
    "nothing at the moment", "never mind", "nevermind", "forget it", "forget about it",
    "not at this time", "not right now", "not now", "cancel it", "cancel that", "i'm good",
    "all good", "that's it", "that's helpful",
)  # fmt: skip
#: "No, thanks", "Nope, that's it": a no, then one of these, begins a closing.
_NO = frozenset(("no", "nope", "nah", "nothing"))
_AFTER_NO = frozenset(
    ("thanks", "thank", "need", "that's", "thats", "i'm", "im", "for", "else", "more", "i")
)
_cue(
    FAREWELL,
    "have a nice", "have a good", "have a great", "have a wonderful", "have a lovely",
    "have a pleasant", "have a fantastic", "take care", "goodbye", "bye", "enjoy your",
    "you're welcome", "youre welcome", "see you",
)  # fmt: skip
_cue(
    FAILED,
    "unsuccessful", "couldn't", "couldnt", "can't", "cant", "cannot", "unable", "failed",
    "fails", "sorry", "apologize", "apologise", "apologies", "unavailable", "error",
    "could not", "not able", "not possible", "not posible", "not available", "no luck",
)  # fmt: skip
_cue(
    DONE,
    "done", "finished", "complete", "completed", "booked", "reserved", "scheduled",
    "confirmed", "successful", "successfully", "i've", "ive", "fixed", "added", "updated",
    "created", "renamed", "ported", "moved", "removed", "deleted", "wrote", "written", "merged",
    "sent", "placed", "bought", "purchased", "enjoy", "headed", "made", "has been", "have been",
    "i have", "all set", "is set", "here is", "here are", "on the way", "on its way",
    "on their way", "on your way", "will be here",
)  # fmt: skip
_PROPOSAL = (
    "please confirm", "confirming", "to confirm", "can you confirm", "could you confirm",
    "to be clear", "to make sure", "let me confirm", "is that correct", "is that right",
    "is that ok", "is that okay", "is this correct", "is this right", "is this ok",
    "is it correct", "is it ok", "is everything correct", "does that sound", "does that look",
    "does that work", "does this sound", "does this look", "does this work", "sound good",
    "shall i", "should i", "do you want me to", "would you like me to", "want me to",
    "you would like", "you'd like", "you want",
)  # fmt: skip
_AGREED = (
    "yes", "yeah", "yep", "yup", "sure", "correct", "right", "ok", "okay", "perfect", "great",
    "fine", "absolutely", "exactly", "definitely", "proceed", "confirm", "confirmed",
    "sounds good", "sounds great", "sounds perfect", "please do", "go ahead", "do it",
    "that works", "that would be fine", "that would be great", "that would be good",
    "that would be perfect", "that's correct", "that's right", "that's fine", "that's good",
    "that's great", "that's perfect", "that's it", "thats correct", "thats right",
    "that is correct", "that is right", "that is fine", "that is good", "that is confirmed",
    "everything is correct", "everything's correct", "everything is right",
    "everything is fine", "all correct", "all good", "of course", "works for me",
)  # fmt: skip
#: A yes with one of these in its first sentence asks for a change ("Yes, but make it 8").
_CHANGED = frozenset(("but", "instead", "change", "make", "actually", "rather", "not", "no"))


def sittings(messages: Sequence[Message]) -> list[int]:
    """The sitting of each message: one per stretch without a pause of :data:`SITTING_GAP`
    (a message without a time continues the sitting it is in)."""
    out: list[int] = []
    sitting = 0
    last = None
    for m in messages:
        when = m.timestamp
        if when is not None:
            if last is not None and when - last >= SITTING_GAP:
                sitting += 1
            last = when
        out.append(sitting)
    return out


# a phrase gives the cues of the words and phrases within it too (the scan finds the longest)
for _phrase in _CUES:
    for _other, _bits in _CUES.items():
        if f" {_other} " in f" {_phrase} ":
            _CUES[_phrase] |= _bits

#: Where a word starts: after one of these (a charset the engine skips to).
_BEFORE = "[ \n\x00\t(\"'.,!?;:-]"
_AFTER = "(?![a-z0-9'])"
#: Every cue word and phrase, factored by its letters (the first letters rule out most).
_SCAN = re.compile(_BEFORE + "(" + _trie([(p, "") for p in _CUES]) + ")" + _AFTER)
#: What a message begins with: a request's verb ("Fix ...", "Next: port ..."), a no and a
#: thanks ("No, thanks"), a yes (a plain one, unless its first sentence asks for a change).
_VERB = (
    "(?:[a-z]+: |(?:"
    + "|".join(_LEADS)
    + ")[,.!]? +)?("
    + _trie([(w, "") for w in sorted(_IMPERATIVE)])
    + ")"
)
_THANKS = "((?:" + "|".join(sorted(_NO)) + ")[.,!]* +(?:" + "|".join(sorted(_AFTER_NO)) + "))"
_START = re.compile(
    "\x00\\s*(?:" + _VERB + _AFTER + "|" + _THANKS + _AFTER + "|("
    + _trie([(p, "") for p in _AGREED]) + ")" + _AFTER + ")"
)  # fmt: skip
#: A change in a yes's first sentence.
_CHANGED_FIRST = re.compile("[^.!?\x00]*?\\b(?:" + "|".join(sorted(_CHANGED)) + ")\\b")
_PROPOSAL_SCAN = re.compile(_BEFORE + "(?:" + _trie([(p, "") for p in _PROPOSAL]) + ")" + _AFTER)


def cue_bits(texts: Sequence[str]) -> list[int]:
    """The cues of each text (bits: :data:`ASKS`, :data:`CLOSES`, :data:`AGREES`,
    :data:`FAREWELL`, :data:`FAILED`, :data:`DONE`), from its first 300 characters.

    The heads are joined, each after a NUL, lower-cased and searched at once: a few
    scans of the block, then a lookup for each cue found (as
    :mod:`session_migrator.summaries._sentences`
    scores sentences)."""
    heads = [t[:300] for t in texts]
    block = "\x00" + "\x00".join(heads)  # (a NUL, which no cue holds, ends each head)
    low = block.lower()
    if len(low) == len(block):
        block = low
    else:  # a letter whose lower case is longer ("İ"): each head on its own, to keep offsets
        heads = [h.lower() for h in heads]
        block = "\x00" + "\x00".join(heads)
    if "\u2019" in block:
        block = block.replace("\u2019", "'")
    ends = list(accumulate(len(h) + 1 for h in heads))  # each head's NUL is 1 before
    bits = [0] * len(heads)
    for found in _SCAN.finditer(block):
        bits[bisect_left(ends, found.start(1))] |= _CUES[found[1]]
    for found in _START.finditer(block):
        row = bisect_left(ends, found.end())
        if found[1]:
            bits[row] |= ASKS
        elif found[2]:
            bits[row] |= CLOSES
        else:
            if _CHANGED_FIRST.match(block, found.end()) is None:
                bits[row] |= AGREES
    return bits


def proposes(text: str) -> bool:
    """Whether an assistant's ``text`` asks the user to confirm something named: in so many
    words, or a question about it ("... at Sino at 7 pm?", not "Anything else?")."""
    tail = text[-400:]
    if not tail.rstrip().endswith("?") and _PROPOSAL_SCAN.search(" " + tail.lower()) is None:
        return False
    return FACTLIKE.search(tail) is not None
