"""The offline extractive summarizer: the sentences a later turn is most likely to need.

See :class:`ExtractiveSummarizer` for what it keeps and how much of a long input it reads.
"""

from __future__ import annotations

import math
import re
from array import array
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from itertools import accumulate, compress

from session_migrator._messages import Message
from session_migrator._tokens import DigestMemo, TokenCounter, remembered_count

__all__ = ["ExtractiveSummarizer"]


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
#: :data:`_SENTENCE`, found faster: a scan for whitespace, then the look-behind (same splits).
_SENTENCE_SCAN = re.compile(r"\s(?:(?<=[.!?]\s)\s*|(?<=\n)\n*)")
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
#: Sentences scored per joined block (bounds the block's size, not the result).
_BLOCK_SENTENCES = 4096


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
        ("decid", ""), ("agree", ""), ("chose", ""), ("choos", ""), ("go", " with"),
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


#: Sentence scores of a rolling summary's earlier lines, which come back at every update.
_memo: DigestMemo[float] = DigestMemo()

#: Reading shares by role, against 1 for the others: user text carries names, preferences and
#: decisions; tool outputs repeat.
_READ_SHARES: Mapping[str, float] = {"user": 2.0, "tool": 0.5}


def _reading_cap(lengths: Sequence[int], shares: Sequence[float], budget: int) -> float:
    """The cap ``c`` with ``sum(min(length, share * c)) == budget`` (water filling: messages
    shorter than their cap are read whole, the longer ones split what is left by their shares),
    or ``inf`` when everything fits. One sort of the messages by length per share."""
    if sum(lengths) <= budget:
        return math.inf
    left = float(budget)
    weight = 0.0
    order: list[tuple[float, int, float]] = []
    for length, share in zip(lengths, shares, strict=True):
        if length and share > 0:
            order.append((length / share, length, share))
            weight += share
    if not order:
        return 0.0
    order.sort()
    for ratio, length, share in order:
        if ratio * weight > left:
            return left / weight
        left -= length
        weight -= share
    return math.inf  # the messages with a share fit (the rest are not read)


def _read(text: str, allowance: float, *, tool: bool) -> tuple[list[str], bool]:
    """The raw sentences read from a message's ``text`` and whether they are clean (see
    :func:`_split`): all of them when it is within ``allowance`` characters, else those of its
    first and last ``allowance / 2`` characters, sliced before splitting (a sentence the slice
    cuts is marked ``...`` at the cut). A ``tool`` output keeps at most its first and last
    :data:`_TOOL_SENTENCES` sentences.
    """
    if len(text) <= allowance:
        if tool:
            parts, clean = _split(text, exact=True)
            if len(parts) > 2 * _TOOL_SENTENCES:
                parts = parts[:_TOOL_SENTENCES] + parts[-_TOOL_SENTENCES:]
            return parts, clean
        return _split(text)
    tail = int(allowance) // 2
    head = int(allowance) - tail
    first, clean = _split(text[:head]) if head else ([], True)
    last, clean_last = _split(text[len(text) - tail :]) if tail else ([], True)
    if tool:
        first, last = first[: _TOOL_SENTENCES + 1], last[-_TOOL_SENTENCES - 1 :]
    if first:
        first[-1] += "..."
    if last:
        last[0] = "..." + last[0]
    return first + last, clean and clean_last


class ExtractiveSummarizer:
    """An offline summarizer that keeps the sentences a later turn is most likely to need.

    Each sentence is scored by what it holds (numbers and dates, names, decisions, preferences,
    open tasks, paths and identifiers, addresses), weighted by role (the user's own words count
    most); the best ones are kept in their original order within ``max_tokens``. Tool calls are
    kept as ``called name(args)``. Deterministic.

    Reading is bounded, so that a summary costs about what it can hold, not what it covers: at
    most ``max(min_read_chars, read_per_token * max_tokens)`` characters of message text are
    read (by default 8 per summary token, two to three times what the summary holds, and at
    least 256 Ki). An input within that is read whole, sentence by sentence. Otherwise every
    message is still read, but a long one only by its head and its tail (sliced before it is
    split; a sentence the cut goes through is marked ``...``): the budget is spread over the
    messages so that the short ones are read whole and the long ones get equal windows, scaled
    by their role's share (``shares``; by default a user message's window is twice an
    assistant's and a tool output's half; a role with share 0 is not read). A tool output is
    read by at most its first and last 12 sentences either way. Candidates that score nothing
    are dropped as they are scored and lines are built only for the candidates the pick visits,
    so memory follows the reading budget, not the input.

    >>> from session_migrator import Message, TiktokenCounter
    >>> s = ExtractiveSummarizer()
    >>> text = s.summarize([Message("user", "My budget is $4,200. Hello.")], max_tokens=50,
    ...                    counter=TiktokenCounter())
    >>> "$4,200" in text
    True
    """

    name = "extractive"

    def __init__(
        self,
        *,
        read_per_token: float = 8.0,
        min_read_chars: int = 262_144,
        shares: Mapping[str, float] | None = None,
    ) -> None:
        if read_per_token < 0 or min_read_chars < 0:
            raise ValueError("read_per_token and min_read_chars must not be negative")
        self.read_per_token = read_per_token
        self.min_read_chars = min_read_chars
        self.shares: Mapping[str, float] = dict(_READ_SHARES if shares is None else shares)
        if any(share < 0 for share in self.shares.values()):
            raise ValueError("reading shares must not be negative")

    def read_budget(self, max_tokens: int) -> int:
        """How many characters of message text a summary of ``max_tokens`` reads at most."""
        return max(self.min_read_chars, int(self.read_per_token * max_tokens))

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str:
        # candidates in their original order, as parallel arrays: the text (a previous line
        # whole, else without its "- [label] " prefix), the message it comes from (-1 for a
        # previous line) and the score; lines are built only for the candidates the pick visits
        texts: list[str] = []
        owners = array("q")
        scores = array("d")
        if previous:
            for kept in previous.splitlines():
                kept = kept.strip()
                if kept.startswith("- "):
                    # earlier picks keep a bonus: they were already judged worth keeping
                    texts.append(kept)
                    owners.append(-1)
                    scores.append(_memo.get(kept, _score) + 1.0)
        shares = [self.shares.get(m.role, 1.0) for m in messages]
        bodies = [m.text for m in messages]  # a message of parts joins them: once
        cap = _reading_cap([len(b) for b in bodies], shares, self.read_budget(max_tokens))
        weights = [_ROLE_WEIGHT.get(m.role, 1.0) for m in messages]
        # the sentences read wait to be scored a block at a time (the tool calls met meanwhile
        # wait beside them, each with how many sentences came before it); only what scores is kept
        waiting: list[str] = []
        waiting_owners: list[int] = []
        calls: list[tuple[int, str, int]] = []

        def keep(start: int, stop: int, computed: list[float]) -> None:
            scored = [
                score * weights[owner]
                for score, owner in zip(
                    computed[start:stop], waiting_owners[start:stop], strict=True
                )
            ]
            mask = [score > 0 for score in scored]
            texts.extend(compress(waiting[start:stop], mask))
            owners.extend(compress(waiting_owners[start:stop], mask))
            scores.extend(compress(scored, mask))

        def flush() -> None:
            computed = _score_lines(waiting)
            done = 0
            for before, text, owner in calls:
                keep(done, before, computed)
                texts.append(text)
                owners.append(owner)
                scores.append(2.5)
                done = before
            keep(done, len(waiting), computed)
            waiting.clear()
            waiting_owners.clear()
            calls.clear()

        for index, message in enumerate(messages):
            for call in message.tool_calls:
                args = (
                    call.arguments if len(call.arguments) <= 160 else call.arguments[:160] + "..."
                )
                calls.append((len(waiting), f"called {call.name}({args})", index))
            text = bodies[index]
            if not text:
                continue
            share = shares[index]
            parts, clean = _read(
                text, cap * share if share > 0 else 0.0, tool=message.role == "tool"
            )
            for raw in parts:
                if len(raw) < 8:
                    continue  # collapsing whitespace only shortens
                if not clean or raw[0] == " " or raw[-1] == " " or "  " in raw:
                    raw = " ".join(raw.split())
                    if len(raw) < 8:
                        continue
                if len(raw) > _MAX_SENTENCE_CHARS:
                    raw = raw[: _MAX_SENTENCE_CHARS - 3] + "..."
                waiting.append(raw)
                waiting_owners.append(index)
            if len(waiting) >= _BLOCK_SENTENCES:
                flush()
        flush()

        def line(position: int) -> str:
            owner = owners[position]
            if owner < 0:
                return texts[position]
            m = messages[owner]
            label = m.role if not m.name else f"{m.role}:{m.name}"
            return f"- [{label}] {texts[position]}"

        # best first, ties in their original order (a reversed sort keeps equal keys in order)
        ranking = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)
        chosen: dict[int, str] = {}
        seen: set[str] = set()
        used = 0
        misses = 0
        for position in ranking:
            text = line(position)
            if text in seen:
                continue
            # a lower bound (one token per 8 characters) skips lines that cannot fit, untokenized
            if used + len(text) // 8 + 1 > max_tokens:
                misses += 1
            else:
                cost = remembered_count(counter, text) + 1
                if used + cost <= max_tokens:
                    chosen[position] = text
                    seen.add(text)
                    used += cost
                    misses = 0
                    continue
                misses += 1
            if misses >= _MAX_MISSES or used >= max_tokens - 4:
                break
        return "\n".join(chosen[position] for position in sorted(chosen))
