"""Sentences and their scores for the offline extractive summarizer: where text splits into
sentences, and what a sentence holds that a later turn may need (numbers and dates, names,
decisions, preferences, open tasks, paths and identifiers, addresses).

:func:`_score_all` is the score by definition; :func:`_score` and :func:`_score_lines` give the
same scores faster (one sentence, many sentences at once).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import accumulate

__all__: list[str] = []

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
#: :data:`_SENTENCE`, found faster: a scan for whitespace, then the look-behind (same splits).
_SENTENCE_SCAN = re.compile(r"\s(?:(?<=[.!?]\s)\s*|(?<=\n)\n*)")
_SIGNALS: tuple[tuple[re.Pattern[str], float], ...] = (
    (re.compile(r"\d"), 1.5),  # numbers, dates, versions, amounts
    (re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]{2,}"), 1.0),  # names (not sentence-initial)
    (
        re.compile(
            r"\b(decid|decision|agree|chose|choos|go(ing)? with|settled|final|confirm|approv|"
            r"let'?s|we'?ll|will use|switch(ed)? to|instead)",
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

# Literal pre-checks: a pattern cannot match a sentence that holds none of its literal parts, so
# it is not run (the score is the same, and most sentences skip most patterns). The patterns
# with re.I are pre-checked on the lower-cased sentence only when it is ASCII, where lower()
# folds case as re.I does.
_DECIDE = (
    "decid", "decision", "agree", "chose", "choos", "go with", "going with", "settled", "final",
    "confirm", "approv", "let", "we'll", "well", "will use", "switch", "instead",
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


# -- the same scores for many sentences at once --
#
# Sentences (whitespace collapsed to single spaces, so none holds a "\n") are joined, each after
# a "\n", into one block, and each signal is found by a few scans of the whole block that need
# no Python work per character: literal finds, and regular expressions that start with a literal
# (the engine skips to it). A scan maps a hit to its sentence and resumes at the next sentence.
# The scans run on the block itself or on two translations of it (same length, same positions):
# character classes, and lower case. That needs an ASCII block: a sentence's other characters
# that are neither letters, digits nor spaces (quotes, dashes, symbols, emoji) are read as "#",
# which every signal treats as it treats them (a non-word character in none of the patterns);
# a sentence still not ASCII (letters beyond ASCII, which case folding or \w could see) is
# scored alone. Each equivalence is checked against _score_all by tests/core/test_extractive.py.


def _ascii_table(mapping: Callable[[str], str]) -> dict[int, str]:
    return str.maketrans({chr(i): mapping(chr(i)) for i in range(128)})


def _class_of(c: str) -> str:
    if c.isdigit():
        return "0"
    if c.isupper():
        return "A"
    if c.islower():
        return "a"
    if c in "!?":
        return "!"
    return c if c in "_\n ./-`@" else "#"


#: digit 0, upper A, lower a, . and ! (for ? too), and _ \n space / - ` @; anything else #
_CLASSES = _ascii_table(_class_of)
#: lower case, keeping the word characters and the keywords' space, ' and -; anything else #
_LOWER = _ascii_table(lambda c: c.lower() if c.isalnum() or c in "_\n '-" else "#")


class _Neutral(dict[int, int]):
    """A translation table reading non-ASCII characters that are neither letters, digits nor
    spaces as "#" (bounded: the distinct characters met)."""

    def __missing__(self, code: int) -> int:
        c = chr(code)
        value = code if code < 128 or c.isalnum() or c.isspace() else 35  # "#"
        if len(self) < 65_536:
            self[code] = value
        return value


_neutral = _Neutral()

# The keyword signals (re.I, each alternative after \b), as one expression per kind of
# preceding non-word character in the lower-cased block (space, newline, ', -, #); each
# alternative consumes only its first word (the rest is a look-ahead), so that a keyword that
# begins inside another one's later words is still found, and the consumed word tells the
# signal (no two signals share one).
_KEYWORDS: tuple[tuple[int, tuple[tuple[str, str], ...]], ...] = (
    (2, (
        ("decid", ""), ("decision", ""), ("agree", ""), ("chose", ""), ("choos", ""),
        ("go", " with"),
        ("going", " with"), ("settled", ""), ("final", ""), ("confirm", ""), ("approv", ""),
        ("let", "'?s"), ("we", "'?ll"), ("will", " use"), ("switch", " to"),
        ("switched", " to"), ("instead", ""),
    )),
    (3, (
        ("prefer", ""), ("favorite", ""), ("favourite", ""), ("like", ""), ("dislike", ""),
        ("hate", ""), ("always", ""), ("never", ""), ("don", "'?t want"), ("want", ""),
    )),
    (4, (
        ("todo", ""), ("to", "-do"), ("need", " to"), ("must", ""), ("should", ""),
        ("remember", ""), ("deadline", ""), ("due", ""), ("next", " step"), ("follow", ".?up"),
        ("action", " item"), ("remind", ""), ("pending", ""), ("open", " question"),
        ("blocker", ""),
    )),
    # "my name" needs no alternative of its own: "my" followed by \b matches wherever it does
    (8, (("i", r" am\b"), ("i", r"'m\b"), ("call", r" me\b"), ("our", r"\b"), ("my", r"\b"))),
)  # fmt: skip
_KEYWORD_SIGNAL = {word: signal for signal, words in _KEYWORDS for word, _ in words}


def _trie(entries: Sequence[tuple[str, str]]) -> str:
    """An alternation of ``word(?=rest)`` entries, factored by leading letters (the engine
    tries an alternation's branches one by one; a first letter rules out most of them)."""
    ends = [f"(?={rest})" if rest else "" for word, rest in entries if not word]
    firsts = sorted({word[0] for word, _ in entries if word})
    branches = [
        re.escape(c) + _trie([(w[1:], r) for w, r in entries if w[:1] == c]) for c in firsts
    ]
    branches += ends
    return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"


_KEYWORD_TRIE = _trie([entry for _, words in _KEYWORDS for entry in words])
_KEYWORD_SCANS = tuple(re.compile(re.escape(c) + f"({_KEYWORD_TRIE})") for c in " \n'-#")
# names: a capital and two small letters after a non-word character that is not a sentence's
# start (a "\n") nor a space after [.!?]
_NAME_SCAN = re.compile(r"Aaa(?<=[ #./!`@-]Aaa)(?<![.!] Aaa)")
_SLASH_SCAN = re.compile(r"/(?<=[0Aa_.-]/)[0Aa_./-]")  # on classes: [\w.-]+/[\w./-]+
_EXTENSION_SCAN = re.compile(r"\.(?<=\w\.)(?:py|js|ts|tsx|json|md|ya?ml|toml|sql|csv|txt|rs|go)\b")
_BACKTICK_SCAN = re.compile(r"`[^`\n]+`")
_CAPS_SCAN = re.compile(r"AA[-_]?0")  # on classes: where \b[A-Z]{2,}[-_]?\d+\b can start
_IDENT_REST = re.compile(r"\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z]{2,}[-_]?\d+\b")


def _rows(scan: re.Pattern[str] | str, text: str, ends: Sequence[int]) -> list[int]:
    """The sentences where ``scan`` (a pattern, or a literal) is found in ``text``, each once.
    ``ends[i]`` is where sentence ``i`` ends (the next one's "\\n")."""
    found: list[int] = []
    if isinstance(scan, str):
        find = text.find
        at = find(scan)
        while at >= 0:
            row = bisect_left(ends, at)
            found.append(row)
            at = find(scan, ends[row])
        return found
    search = scan.search
    hit = search(text)
    while hit is not None:
        row = bisect_left(ends, hit.start())
        found.append(row)
        hit = search(text, ends[row])
    return found


def _score_plain(plain: Sequence[str], originals: Sequence[str]) -> list[float]:
    """``[_score_all(s) for s in originals]``, where ``plain[i]`` is ``originals[i]`` with its
    characters that are neither letters, digits nor spaces read as "#", and ASCII."""
    weights = [weight for _, weight in _SIGNALS]
    block = "\n" + "\n".join(plain)
    ends = list(accumulate(len(s) + 1 for s in plain))  # each sentence's "\n" is 1 before
    classes = block.translate(_CLASSES)
    low = block.translate(_LOWER)
    hits: list[set[int]] = [set() for _ in _SIGNALS]
    hits[0].update(_rows("0", classes, ends))
    hits[1].update(_rows(_NAME_SCAN, classes, ends))
    for scan in _KEYWORD_SCANS:
        for hit in scan.finditer(low):
            hits[_KEYWORD_SIGNAL[hit[1]]].add(bisect_left(ends, hit.end()))
    hits[5].update(_rows(_SLASH_SCAN, classes, ends))
    hits[5].update(_rows(_EXTENSION_SCAN, block, ends))
    hits[6].update(_rows(_BACKTICK_SCAN, block, ends))
    maybe = {*_rows("a_", classes, ends), *_rows("aA", classes, ends)}
    maybe.update(_rows(_CAPS_SCAN, classes, ends))
    hits[6].update(row for row in maybe - hits[6] if _IDENT_REST.search(originals[row]))
    maybe = {*_rows("@", block, ends), *_rows("://", block, ends)}
    contact = _SIGNALS[7][0]
    hits[7].update(row for row in maybe if contact.search(originals[row]))
    totals = [0.0] * len(plain)
    for rows, weight in zip(hits, weights, strict=True):
        for row in rows:
            totals[row] += weight  # halves and wholes: exact sums in any order
    return totals


def _score_lines(sentences: Sequence[str]) -> list[float]:
    """``[_score_all(s) for s in sentences]`` for sentences whose whitespace is single spaces,
    a few scans of them all instead of nine searches each."""
    if "".join(sentences).isascii():
        return _score_plain(sentences, sentences)
    totals = [0.0] * len(sentences)
    rows: list[int] = []
    plain: list[str] = []
    for row, sentence in enumerate(sentences):
        if not sentence.isascii():
            neutral = sentence.translate(_neutral)
            if not neutral.isascii():
                totals[row] = _score(sentence)
                continue
            sentence = neutral
        rows.append(row)
        plain.append(sentence)
    for row, score in zip(rows, _score_plain(plain, [sentences[row] for row in rows]), strict=True):
        totals[row] = score
    return totals


def _split(text: str, *, exact: bool = False) -> tuple[list[str], bool]:
    """The sentences of ``text``: the parts of ``_SENTENCE.split(text)`` (``exact``), or those
    but for the blank ones and the whitespace around them; and whether they are clean (no
    whitespace but single spaces within, once stripped; else they need collapsing)."""
    if exact or not text.replace("\n", " ").isprintable():
        return _SENTENCE_SCAN.split(text), False
    # only spaces and newlines: a sentence ends at a newline and at [.!?] before a space
    if ". " in text:
        text = text.replace(". ", ".\n")
    if "! " in text:
        text = text.replace("! ", "!\n")
    if "? " in text:
        text = text.replace("? ", "?\n")
    return text.split("\n"), True
