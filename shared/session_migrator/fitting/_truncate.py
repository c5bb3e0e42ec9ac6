"""Cutting inside a message: head and tail kept, a marker between (for what alone is over a budget).

A message cut here keeps its id and is marked in ``extra`` (``{"kind": "truncated",
"original_tokens": n}``); a user or system message keeps some content, since the chat APIs
reject empty turns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._sections import cut_around, kept_spans, lines_of
from session_migrator.messages._messages import MARKER_KEY, Message

if TYPE_CHECKING:
    from session_migrator.fitting._units import Unit

__all__ = [
    "ARGUMENT_CHARS",
    "MIN_TRUNCATED_TOKENS",
    "RANGE_SEPARATOR",
    "marker_tokens",
    "range_id",
    "read_back_id",
    "short_arguments",
    "shorten_call",
    "smallest_cost",
    "truncate_message",
    "truncate_text",
    "truncate_unit",
]

MIN_TRUNCATED_TOKENS = 16
_NEEDS_CONTENT = ("user", "system")
_ELLIPSIS = "[...]"


def _marker(cut_tokens: int, read_back: str | None = None) -> str:
    if read_back is None:
        return f"\n[... {cut_tokens:,} tokens cut by session-migrator ...]\n"
    return (
        f"\n[... {cut_tokens:,} tokens of this tool output cut by session-migrator; read it "
        f'back with read_context(id="{read_back}") ...]\n'
    )


def marker_tokens(counter: TokenCounter, read_back: str | None = None) -> int:
    """What one marker costs, at most (for a cut of up to a million tokens)."""
    return counter.count_text(_marker(999_999, read_back))


def truncate_text(
    text: str, target: int, counter: TokenCounter, *, read_back: str | None = None
) -> str:
    """``text`` cut to at most ``target`` tokens: head and tail kept, a marker between (and
    the lines that mark its sections, see :mod:`session_migrator.fitting._sections`).

    ``read_back``, the id of the message the text is from, makes the marker say how to read
    the whole text back (``read_context(id=...)``). Returns ``text`` itself when it fits, and
    ``""`` when not even the marker fits.
    """
    total = counter.count_text(text)
    if total <= target:
        return text
    marker = _marker(total, read_back)
    marker_cost = counter.count_text(marker)
    if read_back is not None and target - marker_cost < marker_cost:
        # a room where the line naming the id would take more than the text it keeps: the
        # bare line (the text comes first)
        read_back = None
        marker = _marker(total)
        marker_cost = counter.count_text(marker)
    keep = target - marker_cost
    if keep <= 0:
        short = "[...]"
        return short if counter.count_text(short) <= target else ""
    chars_per_token = len(text) / max(total, 1)
    budget_chars = keep * chars_per_token
    lines = lines_of(text)  # (read once, however many sizes are tried)
    for _ in range(12):
        spans = kept_spans(text, int(budget_chars), lines)
        candidate = cut_around(text, spans, lambda gap: _marker(counter.count_text(gap), read_back))
        used = counter.count_text(candidate)
        if used <= target:
            return candidate
        budget_chars *= max(0.5, min(0.95, (target - marker_cost) / max(used - marker_cost, 1)))
        if budget_chars < 1:
            break
    return marker.strip() if marker_cost <= target else ""


def _with_marker(message: Message, original_tokens: int, **changes: object) -> Message:
    extra = dict(message.extra)
    previous = extra.get(MARKER_KEY)
    marker = dict(previous) if isinstance(previous, dict) else {}
    marker.update({"kind": marker.get("kind", "truncated"), "original_tokens": original_tokens})
    extra[MARKER_KEY] = marker
    return message.replace(extra=extra, **changes)


def truncate_message(message: Message, target: int, counter: TokenCounter) -> Message:
    """``message`` cut inside to at most ``target`` tokens (content first, then call arguments).

    The id is kept and ``extra`` is marked ``{"kind": "truncated", "original_tokens": n}``; a
    tool output's marker names that id to read it back by (``read_context(id="...")``).
    A user or system message keeps some content (at least ``[...]``): the chat APIs reject empty
    turns. Raises ``ValueError`` when even the smallest message of this shape is larger than
    ``target``.
    """
    original = counter.count_message(message)
    if original <= target:
        return message
    shell = message.replace(
        content="", tool_calls=tuple(c.__class__(c.id, c.name, "{}") for c in message.tool_calls)
    )
    needs_content = message.role in _NEEDS_CONTENT
    fixed = counter.count_message(shell)
    smallest = counter.count_message(shell.replace(content=_ELLIPSIS)) if needs_content else fixed
    if smallest > target:
        raise ValueError(
            f"message {message.id!r} needs {smallest} tokens even with its content removed, "
            f"over the target of {target}"
        )
    texts: list[str] = [message.text]
    texts.extend(c.arguments for c in message.tool_calls)
    sizes = [counter.count_text(t) for t in texts]
    room = target - fixed
    for _ in range(6):
        total = sum(sizes) or 1
        allowances = [max(0, int(room * s / total)) for s in sizes]
        new_texts = [
            truncate_text(t, a, counter, read_back=None if k else read_back_id(message))
            if s > a
            else t
            for k, (t, s, a) in enumerate(zip(texts, sizes, allowances, strict=True))
        ]
        calls = tuple(
            c.__class__(c.id, c.name, a if a == c.arguments else _args_json(a))
            for c, a in zip(message.tool_calls, new_texts[1:], strict=True)
        )
        images = (
            0
            if isinstance(message.content, str)
            else sum(1 for p in message.content if p.type != "text")
        )
        content = new_texts[0] + (f"\n[{images} non-text part(s) omitted]" if images else "")
        candidate = _with_marker(message, original, content=content, tool_calls=calls)
        used = counter.count_message(candidate)
        if used <= target and (content.strip() or not needs_content):
            return candidate
        room -= max(used - target, 0) + 2
        if room <= 0:
            break
    bare = _with_marker(message, original, content=_ELLIPSIS, tool_calls=shell.tool_calls)
    if counter.count_message(bare) <= target:
        return bare
    # only a tool or assistant message gets here (``smallest`` above): its shell fits
    return _with_marker(message, original, content="", tool_calls=shell.tool_calls)


#: How a run of messages is named to ``read_context``: ``"<first id>..<last id>"``.
RANGE_SEPARATOR = ".."


def range_id(first: str, last: str) -> str:
    """The id ``read_context`` reads the messages ``first`` to ``last`` back by (a note or a
    summary of a cut part names it)."""
    return first if first == last else f"{first}{RANGE_SEPARATOR}{last}"


def read_back_id(message: Message) -> str | None:
    """The id a cut tool output's marker names to read it back by (other messages' markers
    name none: their text is the conversation's own, which the summary and recall carry)."""
    return message.id if message.role == "tool" else None


def _args_json(text: str) -> str:
    return json.dumps({"session_migrator_truncated_arguments": text}, ensure_ascii=False)


def truncate_unit(
    messages: Sequence[Message], unit: Unit, target: int, counter: TokenCounter
) -> list[Message]:
    """The unit's messages cut inside so that together they cost at most ``target`` tokens.

    The room is shared in proportion to the messages' sizes: a message whose share is at least
    what it costs stays whole, and the others (parallel tool results, say) are each cut to their
    share, head and tail kept around the same marker. Raises ``ValueError`` when not even every
    message at its smallest fits.
    """
    members = [messages[i] for i in unit.indices]
    costs = [counter.count_message(m) for m in members]
    if sum(costs) <= target:
        return members
    least = [smallest_cost(m, counter) for m in members]
    if sum(least) > target:
        raise ValueError(f"cannot cut the unit starting at message {unit.indices[0]} to {target}")
    out = list(members)
    room = target
    for _ in range(4):
        shares = _proportional(costs, least, room)
        out = [
            m if share >= cost else truncate_message(m, share, counter)
            for m, cost, share in zip(members, costs, shares, strict=True)
        ]
        used = sum(counter.count_message(m) for m in out)
        if used <= target:
            return out
        room -= used - target  # (a cut message never costs more than its share: a safeguard)
    raise ValueError(f"cannot cut the unit starting at message {unit.indices[0]} to {target}")


def smallest_cost(message: Message, counter: TokenCounter) -> int:
    """What ``message`` costs at the least when cut inside (its shell, ``[...]`` as content)."""
    shell = message.replace(
        content=_ELLIPSIS if message.role in _NEEDS_CONTENT else "",
        tool_calls=tuple(c.__class__(c.id, c.name, "{}") for c in message.tool_calls),
    )
    return min(counter.count_message(message), counter.count_message(shell))


def _proportional(costs: Sequence[int], least: Sequence[int], room: int) -> list[int]:
    """Each message's share of ``room``: a message within an equal share of what is left, or
    within its share in proportion to its cost, whole; the others in proportion to their
    costs, never below ``least`` (the shares add up to ``room`` where the messages take that
    much)."""
    shares = list(costs)
    cut = set(range(len(costs)))
    while cut:
        left = room - sum(costs[k] for k in range(len(costs)) if k not in cut)
        weight = sum(costs[k] for k in cut) or 1
        # whole: what is within its proportional share, or within an equal share of the room
        # (a call's small message is not cut beside its large results)
        whole = set(cut) if weight <= left else {k for k in cut if costs[k] * len(cut) <= left}
        if not whole:
            for k in cut:
                shares[k] = max(least[k], left * costs[k] // weight)
            # the floors may take more than the proportion gave: the largest give it back
            excess = sum(shares[k] for k in cut) - left
            for k in sorted(cut, key=lambda k: -shares[k]):
                if excess <= 0:
                    break
                give = min(excess, shares[k] - least[k])
                shares[k] -= give
                excess -= give
            break
        cut -= whole
    return shares


#: What a long string argument of a current turn's call keeps when even the shrunk results do
#: not fit (head and tail, in characters).
ARGUMENT_CHARS = 200


def short_arguments(arguments: str) -> str:
    """``arguments`` (a JSON object) with each string value longer than
    :data:`ARGUMENT_CHARS` cut to its head and tail; as given when it is not JSON."""
    if len(arguments) <= ARGUMENT_CHARS:
        return arguments
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments

    def cut(item: object) -> object:
        if isinstance(item, str) and len(item) > 2 * ARGUMENT_CHARS:
            head = ARGUMENT_CHARS * 3 // 5
            tail = ARGUMENT_CHARS - head
            cut_chars = len(item) - ARGUMENT_CHARS
            return f"{item[:head]}[... {cut_chars:,} characters cut ...]{item[-tail:]}"
        if isinstance(item, dict):
            return {k: cut(v) for k, v in item.items()}
        if isinstance(item, list):
            return [cut(v) for v in item]
        return item

    return json.dumps(cut(value), ensure_ascii=False)


def shorten_call(message: Message, counter: TokenCounter) -> Message:
    """``message`` (an assistant's tool calls) with the long string arguments of its calls cut
    to head and tail (:func:`short_arguments`), marked ``{"kind": "truncated", "tier":
    "arguments"}``; ``message`` itself when that saves nothing."""
    if not message.tool_calls:
        return message
    calls = tuple(
        c.__class__(c.id, c.name, short_arguments(c.arguments)) for c in message.tool_calls
    )
    if all(new.arguments == c.arguments for new, c in zip(calls, message.tool_calls, strict=True)):
        return message
    extra = dict(message.extra)
    extra[MARKER_KEY] = {"kind": "truncated", "tier": "arguments", "full_in_store": True}
    short = message.replace(tool_calls=calls, extra=extra)
    return short if counter.count_message(short) < counter.count_message(message) else message
