"""The first tier of compression: old tool outputs shrink before any turn is dropped.

When a conversation does not fit, every tool output of the turns before the current one (the
agent's working set, see :mod:`session_migrator.fitting._working`) is cut to its head and tail
(about
:data:`TOOL_OUTPUT_CHARS` characters; the newest :data:`KEEP_NEWEST_TOOL_OUTPUTS` tool outputs
are kept whole) around a marker that says how many lines and characters were cut and the
message id to read the full output back by. Only then are turns summarized or dropped
(the engine's later tiers), over the shrunk conversation. Whatever room is left at the end goes
back to the shrunk outputs, newest first (:func:`give_back`), so that a conversation a few
percent over its budget loses a few percent of one old tool output, not whole turns; a ledger's
kept cut (its slack) leaves its free room free instead.

A shrunk output keeps its id and role and its call's pairing; its ``extra`` is marked
``{"kind": "truncated", "tier": "tool_output", ...}`` and it is reported as cut inside. Nothing is
tokenized to decide what to shrink (characters decide); a shrunk output is counted only when the
newest-first walk reaches it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._result import CompressionResult
from session_migrator.fitting._sections import cut_around, kept_spans, text_of
from session_migrator.fitting._truncate import truncate_message
from session_migrator.fitting._units import Layout, build_units, is_step_result
from session_migrator.messages._messages import MARKER_KEY, Message

__all__ = [
    "KEEP_NEWEST_TOOL_OUTPUTS",
    "TOOL_OUTPUT_CHARS",
    "counted_newest",
    "give_back",
    "given_back",
    "not_larger",
    "shrink_tool_outputs",
    "shrunk_output",
    "with_shrunk",
]

#: The newest tool outputs are kept whole by this tier (they go with their turns).
KEEP_NEWEST_TOOL_OUTPUTS = 3
#: What an old tool output keeps: its first 60% and last 40% of this many characters, and
#: where the conversation still does not fit, of the next smaller size.
TOOL_OUTPUT_CHARS = (1_600, 400, 100)
#: Only an output at least this many times longer than what it keeps is shrunk (a cut must
#: save more than its marker costs).
_WORTH = 2


def tool_marker(lines: int, chars: int, message_id: str | None) -> str:
    """The line that stands where part of a tool output was cut; it names the message id to
    read the full output back by (``read_context(id=...)``; ``None``: the bare line, where the
    room is too small for it)."""
    if message_id is None:
        return f"\n[... {lines:,} lines ({chars:,} characters) cut by session-migrator ...]\n"
    return (
        f"\n[... {lines:,} lines ({chars:,} characters) of this tool output cut by "
        f'session-migrator; read it back with read_context(id="{message_id}") ...]\n'
    )


def shrunk_output(message: Message, keep: int, read_back: bool = True) -> Message | None:
    """``message`` (a tool output, or a step's result) cut to its head and tail of about
    ``keep`` characters, and the lines that mark its sections between (see
    :mod:`session_migrator.fitting._sections`), or ``None`` when it is short. ``read_back``:
    the markers name the id to read it back by."""
    content = text_of(message)
    if content is None or len(content) < _WORTH * keep:
        return None
    cut: list[str] = []

    def marker(gap: str) -> str:
        cut.append(gap)
        return tool_marker(_lines(gap), len(gap), message.id if read_back else None)

    spans = kept_spans(content, keep)
    text = cut_around(content, spans, marker)
    extra = dict(message.extra)
    extra[MARKER_KEY] = {
        "kind": "truncated",
        "tier": "tool_output",
        "cut_chars": sum(len(gap) for gap in cut),
        "cut_lines": sum(_lines(gap) for gap in cut),
        "full_in_store": True,
    }
    return message.replace(content=text, extra=extra)


def _lines(gap: str) -> int:
    """How many lines ``gap`` (a cut part, from line break to line break) holds."""
    return gap.strip("\n").count("\n") + 1


def shrink_tool_outputs(
    messages: Sequence[Message],
    layout: Layout,
    available: int,
    counter: TokenCounter,
    before: int,
) -> tuple[list[Message], Layout, dict[int, Message]] | None:
    """The conversation with its old tool outputs (those before position ``before``, where the
    current turn starts) shrunk, its layout (counted from the newest message until over
    ``available``, as a cold fit counts), and the originals of the shrunk messages by position;
    ``None`` when there is no old tool output worth shrinking.

    A layout that keeps a cache (a ledger's) keeps the shrunk messages there, so that their
    counts are remembered from one fit to the next.
    """
    tools = [i for u in layout.units for i in u.indices[1:] if messages[i].role == "tool"]
    old = [i for i in tools if i < before]
    memo: dict[tuple[str, int], Message] | None = None
    if layout.cache is not None:
        held: Any = layout.cache.get("shrunk")
        if not isinstance(held, dict):
            held = layout.cache["shrunk"] = {}
        memo = held
    # the newest outputs are kept whole (the current turn often reads them): they go with
    # their turns, after every other one has shrunk
    newest = set(tools[-KEEP_NEWEST_TOOL_OUTPUTS:])
    old = [i for i in old if i not in newest]
    if not old:
        return None
    return _shrink_group(messages, layout, available, counter, old, memo)[0]


def _shrink_group(
    messages: Sequence[Message],
    layout: Layout,
    available: int,
    counter: TokenCounter,
    old: list[int],
    memo: dict[tuple[str, int], Message] | None,
) -> tuple[tuple[list[Message], Layout, dict[int, Message]] | None, bool]:
    """The conversation with the tool outputs at ``old`` shrunk (the largest size that fits,
    else the smallest), and whether it fits."""
    found: tuple[list[Message], Layout, dict[int, Message]] | None = None
    # the smallest size first: when even it does not fit (a cut is made: a ledger's usual
    # case), no larger size is laid out; when it does, the largest size that fits is used
    for keep in (TOOL_OUTPUT_CHARS[-1], *TOOL_OUTPUT_CHARS[:-1]):
        out = list(messages)
        originals: dict[int, Message] = {}
        for i in old:
            m = messages[i]
            cut = memo.get((m.id, keep)) if memo is not None else None
            if cut is None or cut.tool_call_id != m.tool_call_id:
                cut = shrunk_output(m, keep)
                if cut is None:
                    continue
                if memo is not None:
                    if len(memo) > 8 * len(old) + 64:
                        memo.clear()  # (outputs no longer in the conversation)
                    memo[(m.id, keep)] = cut
            out[i] = cut
            originals[i] = m
        if not originals:
            continue  # none this long: a smaller size may shrink some
        laid = (out, counted_newest(out, originals, layout, available, counter), originals)
        fits = not laid[1].counted_from and laid[1].units_cost <= available
        if keep == TOOL_OUTPUT_CHARS[-1]:
            found = laid
            if not fits:
                return found, False  # not even the smallest size fits: turns are cut over it
        elif fits:
            return laid, True  # the largest size that fits
    return found, found is not None


#: A shrunk output this many times shorter than its original saves tokens whatever the text;
#: a closer one is counted against its original (the marker has a cost of its own).
_SURELY_SMALLER = 4


def counted_newest(
    out: list[Message],
    originals: dict[int, Message],
    layout: Layout,
    available: int,
    counter: TokenCounter,
) -> Layout:
    """The layout of ``out``, counted as a cold fit counts: the system messages, and the
    newest others until they are over ``available`` (at a turn's start). A shrunk output
    counted that costs no less than its original is given back (in ``out`` and
    ``originals``)."""
    costs = [0] * len(out)
    for i in layout.system:
        costs[i] = counter.count_message(out[i])
    total = 0
    counted_from = 0
    for i in range(len(out) - 1, -1, -1):
        m = out[i]
        if m.role == "system":
            continue
        costs[i] = counter.count_message(m)
        original = originals.get(i)
        if original is not None and _SURELY_SMALLER * len(m.text) > len(original.text):
            whole = counter.count_message(original)
            if whole <= costs[i]:  # (short text with many tokens a character: nothing saved)
                out[i], costs[i] = original, whole
                del originals[i]
        total += costs[i]
        if total > available and m.role == "user" and not is_step_result(m):
            counted_from = i
            break
    shrunk = build_units(out, costs, counted_from=counted_from, keep_pending=layout.keep_pending)
    if layout.cache is not None and layout.slack:
        # a ledger's: the shrunk view keeps a cut between fits too, in a cache of its own (its
        # costs are the shrunk messages'); old outputs are at their smallest whenever a cut is
        # made, so the kept cut's costs hold from one fit to the next
        view: Any = layout.cache.get("tiered")
        if not isinstance(view, dict):
            view = layout.cache["tiered"] = {}
        shrunk.cache, shrunk.slack = view, layout.slack
    return shrunk


def not_larger(
    sent: Sequence[Message], originals: dict[str, Message], counter: TokenCounter
) -> tuple[list[Message], int]:
    """``sent`` with every shrunk output that costs no less than its original (a short text of
    many tokens a character, where the marker costs more than the cut saves) put back whole,
    and the tokens that saves."""
    out = list(sent)
    saved = 0
    for k, m in enumerate(out):
        original = originals.get(m.id)
        if original is None or m is original or _SURELY_SMALLER * len(m.text) <= len(original.text):
            continue
        cost, whole = counter.count_message(m), counter.count_message(original)
        if whole <= cost:
            out[k] = original
            saved += cost - whole
    return out, saved


def give_back(
    sent: list[Message],
    originals: dict[str, Message],
    room: int,
    counter: TokenCounter,
) -> tuple[list[Message], int, set[str]]:
    """``sent`` with the shrunk tool outputs in it given back whole, newest first, while they
    fit in ``room`` more tokens; the first that does not fit whole is cut to what is left (head
    and tail kept). Returns the messages, what they take of ``room``, and the ids given back
    whole.
    """
    out = list(sent)
    used = 0
    whole: set[str] = set()
    for k in range(len(out) - 1, -1, -1):
        original = originals.get(out[k].id)
        if original is None or out[k] is original:
            continue
        left = room - used
        if left <= 0:
            break
        now = counter.count_message(out[k])
        full = counter.count_message(original)
        if full - now <= left:
            out[k] = original
            used += full - now
            whole.add(original.id)
            continue
        cut = truncate_message(original, now + left, counter)
        grown = counter.count_message(cut) - now
        if 0 < grown <= left:
            out[k] = cut
            used += grown
        break
    return out, used, whole


def given_back(
    result: CompressionResult,
    originals: dict[str, Message],
    budget: int,
    counter: TokenCounter,
) -> CompressionResult:
    """``result`` with the room it leaves given back to its shrunk tool outputs (see
    :mod:`session_migrator.fitting._tiers`), and every output still cut reported as cut inside."""
    total = counter.count_messages(result.messages)
    sent, _, whole = give_back(result.messages, originals, budget - total, counter)
    tokens = counter.count_messages(sent)
    if tokens > budget:  # pragma: no cover - counts add up per message; a safeguard
        sent, whole, tokens = result.messages, set(), total
    shrunk = {k: v for k, v in originals.items() if k not in whole}
    truncated = [i for i in result.truncated_ids if i not in whole]  # (sent whole again)
    given = replace(result, messages=sent, tokens=tokens, truncated_ids=truncated)
    return with_shrunk(given, shrunk, counter)


def with_shrunk(
    result: CompressionResult, originals: dict[str, Message], counter: TokenCounter
) -> CompressionResult:
    """``result`` with its shrunk tool outputs reported as cut inside, and any that saves no
    token (a recalled one the layout did not count) sent whole instead."""
    sent, tokens = not_larger(result.messages, originals, counter)
    truncated = list(result.truncated_ids)
    seen = set(truncated)
    truncated += [
        m.id for m in sent if m.id in originals and m is not originals[m.id] and m.id not in seen
    ]
    counted = None if result.tokens is None else result.tokens - tokens
    return replace(result, messages=sent, truncated_ids=truncated, tokens=counted)
