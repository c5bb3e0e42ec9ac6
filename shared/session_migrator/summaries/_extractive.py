"""The offline extractive summarizer: what the cut part decided, the facts it holds, the work
it left open and the files it touched, in the words that were said.

See :class:`ExtractiveSummarizer` for what it keeps and how much of a long input it reads, and
:mod:`session_migrator.summaries._outline` for how the summary is grouped and written.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import compress

from session_migrator.counting._counter import TokenCounter
from session_migrator.messages._messages import Message
from session_migrator.summaries._outline import Outline
from session_migrator.summaries._outline_items import ROLE_WEIGHT
from session_migrator.summaries._sentences import _score_lines, _split

__all__ = ["ExtractiveSummarizer"]


_MAX_SENTENCE_CHARS = 320

#: Sentences read from the head and from the tail of a tool output (logs and files repeat).
_TOOL_SENTENCES = 12
#: Sentences scored per joined block (bounds the block's size, not the result).
_BLOCK_SENTENCES = 4096

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
    """An offline summarizer that says what happened: the decisions, facts, open tasks and files
    a later turn is most likely to need, one line each, grouped under ``Decisions:``,
    ``Facts:``, ``Open tasks:`` and ``Files:``, within ``max_tokens``. Deterministic.

    Each line is dated by the day it was said, where the message carries a time, and labelled
    with who said it (``- [Mon 2026-03-02] user: ...``). What the conversation's shape tells
    comes first: a proposal the user said yes to, with what became of it (``agreed: ... (done)``;
    the last one agreed to, so a changed booking shows its final value), the requests nothing
    settled later in the same sitting (an hour's pause starts another), the newest to-do list's
    unfinished items, the files the tool calls read, edited or wrote. Then the sentences, each
    scored by what it holds (numbers and dates, names, decisions, preferences, open tasks,
    paths and identifiers, addresses) and weighted by role (the user's own words count most); a
    sentence goes under Decisions, Facts or Open tasks by its words, and one with no fact in it
    ("I like the sound of that") is left out. A tool call that names no file is kept as
    ``called name(args)``. Within a section the items keep the conversation's order; when two
    score the same and only one fits, the newer one is kept (a changed fact keeps its newest
    value, and both show, in order, when there is room). A rolling summary (``previous``) keeps
    its items under their headings, with a bonus: the new ones join them. With
    ``requests=True`` (as a hand-off summarizes what it cut), every request of the user comes
    first, shortened, under ``Requests:``, before any other item.

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
    so memory follows the reading budget, not the input. The shape is read from every message's
    first 300 characters, in one scan of them all.

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
        requests: bool = False,
    ) -> None:
        if read_per_token < 0 or min_read_chars < 0:
            raise ValueError("read_per_token and min_read_chars must not be negative")
        self.requests = requests
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
        bodies = [m.text for m in messages]  # a message of parts joins them: once
        outline = Outline(messages, bodies, previous, requests=self.requests)
        consumed = outline.consumed
        shares = [self.shares.get(m.role, 1.0) for m in messages]
        cap = _reading_cap([len(b) for b in bodies], shares, self.read_budget(max_tokens))
        weights = [ROLE_WEIGHT.get(m.role, 1.0) for m in messages]
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
            outline.add(
                list(compress(waiting[start:stop], mask)),
                list(compress(waiting_owners[start:stop], mask)),
                list(compress(scored, mask)),
            )

        def flush() -> None:
            computed = _score_lines(waiting)
            done = 0
            for before, text, owner in calls:
                keep(done, before, computed)
                outline.call(text, owner, 2.5)
                done = before
            keep(done, len(waiting), computed)
            waiting.clear()
            waiting_owners.clear()
            calls.clear()

        for index, message in enumerate(messages):
            for k, call in enumerate(message.tool_calls):
                if not outline.keeps_call(index, k):
                    continue
                args = (
                    call.arguments if len(call.arguments) <= 160 else call.arguments[:160] + "..."
                )
                calls.append((len(waiting), f"called {call.name}({args})", index))
            text = bodies[index]
            if not text or index in consumed:
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
        return outline.write(max_tokens, counter)
