"""Where a long text is cut: its head and tail, and between them the lines that mark its sections.

A tool's output is often made of sections: a code step that printed several results, a log of
several jobs, a listing of several files. Cut to its head and tail alone, such an output shows
the first section's header and the last one's end, and a model that looks for the others calls
the tool again. So a cut keeps, besides its head and tail, the lines of the part it cuts that
stand alone between runs of alike lines (``RESULT b:`` after the rows of ``a``, ``END a``
before it), as many as half of what the cut keeps holds; the head and tail take the rest.

Where the cut part has no runs (prose, or lines all unlike), every line would stand alone: there
the head and tail are what a cut keeps, as before.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from session_migrator.messages._messages import Message

__all__ = ["Lines", "cut_around", "kept_spans", "lines_of", "text_of"]

_DIGITS = re.compile(r"\d+")
#: A cut part has sections where at least one of its lines in this many is in a run of alike
#: lines (rows, log lines of one kind); where they mostly stand alone (prose), it has none.
_RUN_SHARE = 2


def _shape(line: str) -> str:
    """A line's kind: its first word, numbers made alike (``row 017`` and ``row 018`` are one
    run; ``RESULT a:`` after them starts another)."""
    words = line.split(None, 1)
    return _DIGITS.sub("0", words[0]) if words else ""


def _head_and_tail(text: str, keep: int) -> tuple[int, int]:
    """Where the head of ``text`` kept for about ``keep`` characters ends and its tail starts:
    60% and 40%, at a line break when one is near (logs read by lines, and a header the head
    would cut through goes whole to the part cut, where it may stand as a landmark)."""
    head_end = max(int(keep * 0.6), keep - keep // 2)  # (the head the longer, however short)
    tail_start = len(text) - (keep - head_end)
    newline = text.rfind("\n", head_end * 4 // 5, head_end)  # (the head stays the longer)
    if newline > 0:
        head_end = newline
    newline = text.find("\n", tail_start, tail_start + (len(text) - tail_start) // 2)
    if newline > 0:
        tail_start = newline + 1
    return head_end, tail_start


Lines = tuple[list[tuple[int, int]], list[str]]


def lines_of(text: str) -> Lines:
    """Each line's span in ``text`` and its kind (:func:`_shape`): what :func:`kept_spans`
    reads, made once for a text cut at several sizes."""
    spans: list[tuple[int, int]] = []
    position = 0
    for line in text.split("\n"):
        spans.append((position, position + len(line)))
        position += len(line) + 1
    return spans, [_shape(text[a:b]) for a, b in spans]


def _landmarks(lines: Lines, start: int, end: int, room: int) -> list[tuple[int, int]]:
    """The spans of the lines between ``start`` and ``end`` that stand alone between runs of
    alike lines, in order, as many as ``room`` characters hold (the headers first); none where
    that part has no runs."""
    spans, shapes = lines
    inside = [k for k, (a, b) in enumerate(spans) if a > start and b < end]
    alone = [k for k in inside if shapes[k] and shapes[k - 1] != shapes[k] != shapes[k + 1]]
    if not alone or not _has_runs(shapes):
        return []
    # a header (a line that opens a run) before a footer, in order, as many as the room holds
    opens = [k for k in alone if k + 2 < len(spans) and shapes[k + 1] == shapes[k + 2]]
    headers = set(opens)
    chosen: list[int] = []
    for k in opens + [k for k in alone if k not in headers]:
        a, b = spans[k]
        room -= b - a + 1
        if room < 0:
            break
        chosen.append(k)
    return [spans[k] for k in sorted(chosen)]


def _has_runs(shapes: list[str]) -> bool:
    """Whether a text of lines of these kinds has sections: at least one of its lines in
    :data:`_RUN_SHARE` is in a run of alike lines (the whole text's, not only the part a cut
    leaves out: a small cut part between two runs is mostly the lines that part them)."""
    alone = sum(
        1
        for k in range(1, len(shapes) - 1)
        if shapes[k] and shapes[k - 1] != shapes[k] != shapes[k + 1]
    )
    return _RUN_SHARE * alone <= max(len(shapes) - 2, 0)


def kept_spans(text: str, keep: int, lines: Lines | None = None) -> list[tuple[int, int]]:
    """The spans of ``text`` a cut to about ``keep`` characters keeps, in order: its head, the
    lines that mark its sections (see the module's docstring), its tail. ``lines``: the text's
    :func:`lines_of`, where the caller cuts it at several sizes."""
    head_end, tail_start = _head_and_tail(text, keep)
    if head_end >= tail_start:
        return [(0, len(text))]
    if lines is None:
        lines = lines_of(text)
    first_line = text.find("\n")
    kept: list[tuple[int, int]] = []
    for _ in range(2):  # the head and tail give room to the landmarks, which may show more
        found = _landmarks(lines, head_end, tail_start, keep // 2)
        if not found:
            break
        kept = found
        head_end, tail_start = _head_and_tail(text, keep - sum(b - a for a, b in kept))
        # the head ends at a line's end (a header it cuts through shows among the landmarks),
        # and holds the first line where that is short (a step's first line says what it is)
        head_end = max(text.rfind("\n", head_end // 2, head_end + 1), 0) or head_end
        if head_end < first_line <= keep * 0.6:
            head_end = first_line
    kept = [(a, b) for a, b in kept if head_end < a and b < tail_start]
    if not kept:  # (no landmark left: the head and tail as a plain cut keeps them)
        head_end, tail_start = _head_and_tail(text, keep)
    return [(0, head_end), *kept, (tail_start, len(text))]


def cut_around(text: str, spans: list[tuple[int, int]], marker: Callable[[str], str]) -> str:
    """``text`` with what lies between the ``spans`` it keeps replaced by ``marker(cut)``
    (a line break alone between two kept lines stays as it is)."""
    pieces = [text[spans[0][0] : spans[0][1]]]
    for (_, end), (start, stop) in itertools.pairwise(spans):
        gap = text[end:start]
        pieces.append(marker(gap) if gap.strip("\n") else gap)
        pieces.append(text[start:stop])
    return "".join(pieces)


def text_of(message: Message) -> str | None:
    """A message's content as one text, where it is text: a string, or parts all text (a tool
    result in content blocks, as MCP tools return them, joined by line breaks); ``None`` where
    it holds an image or a file, which a cut of its text would lose."""
    content = message.content
    if isinstance(content, str):
        return content
    if content and all(part.type == "text" for part in content):
        return message.text
    return None
