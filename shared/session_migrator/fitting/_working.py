"""The current turn's working set: what an agent needs in view to finish its turn.

An agent's turn starts at the user's message and goes on through every tool call the model makes
and every result that answers it, until the model answers. A model that cannot see a result of
its current turn calls the tool again: a fit that folds the turn's earlier rounds into a summary
keeps the request within budget but the agent loops. So the current turn is the last thing to
give way, after older turns and their tool outputs:

1. older turns' tool outputs shrink to head and tail, then older turns go (the first tier and the
   engine's cut: see :mod:`session_migrator.fitting._tiers`);
2. when the current turn alone is over the room, the outputs of its older rounds shrink to head
   and tail, the largest size that fits first (:func:`shrink_current_turn`); then the long string
   arguments of their calls; then the newest round is cut inside, its results in proportion to
   their sizes, and the older rounds at their smallest after it (``_fit``). Every call stays in
   place, with its id, name, arguments and a shrunk result;
3. when even that does not fit, the fit raises a :class:`~session_migrator.BudgetError` that says
   so (:func:`check_turn_kept`): a call of the current turn never disappears silently.

The current turn starts at the newest user message that is not a step result: LlamaIndex's
ReAct and CodeAct agents send their tools' results as user messages (``Observation: ...``,
``Result of executing the code given: ...``), which are part of the turn, not new turns.
"""

from __future__ import annotations

from collections.abc import Sequence

from session_migrator._errors import BudgetError
from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._fit import Fitted, least_room
from session_migrator.fitting._tiers import TOOL_OUTPUT_CHARS, counted_newest, shrunk_output
from session_migrator.fitting._truncate import shorten_call
from session_migrator.fitting._units import Layout, is_step_result, work_units
from session_migrator.messages._messages import Message

__all__ = [
    "check_turn_kept",
    "current_turn",
    "shrink_current_turn",
    "turn_finished",
    "turn_kept",
    "turn_squeezed",
]


def current_turn(messages: Sequence[Message], layout: Layout) -> int:
    """The index into ``layout.units`` of the unit that opens the current turn: the newest that
    starts a turn with the user's own words (``len(layout.units)`` when there is none)."""
    units = layout.units
    for k in range(len(units) - 1, -1, -1):
        unit = units[k]
        if unit.starts_turn and not is_step_result(messages[unit.indices[0]]):
            return k
    return len(units)


def turn_finished(messages: Sequence[Message], layout: Layout, turn: int) -> bool:
    """Whether the current turn (from unit ``turn``) has steps and ended with the assistant's
    answer: its last message is the assistant's, with no call."""
    if turn >= len(layout.units) - 1 or not messages:
        return False
    last = messages[layout.units[-1].indices[-1]]
    return (
        last.role == "assistant"
        and not last.tool_calls
        and any(messages[u.indices[0]].tool_calls for u in layout.units[turn + 1 :])
    )


def _older_outputs(messages: Sequence[Message], layout: Layout, turn: int) -> list[int]:
    """The positions of the outputs (tool results and step results) of the current turn's
    rounds but its newest."""
    rounds: list[list[int]] = []
    for unit in layout.units[turn + 1 :]:
        first = messages[unit.indices[0]]
        if first.tool_calls:
            rounds.append([i for i in unit.indices[1:] if messages[i].role == "tool"])
        elif is_step_result(first):
            rounds.append([unit.indices[0]])
    return [i for r in rounds[:-1] for i in r]


def _turn_cost(
    messages: Sequence[Message], layout: Layout, turn: int, counter: TokenCounter
) -> int:
    return sum(layout.unit_cost(u, messages, counter) for u in layout.units[turn:])


def shrink_current_turn(
    messages: Sequence[Message],
    layout: Layout,
    turn: int,
    available: int,
    counter: TokenCounter,
    in_progress: bool = True,
) -> tuple[list[Message], Layout, dict[int, Message]] | None:
    """The conversation with the current turn (from unit ``turn``) shrunk as little as makes it
    fit in ``available`` tokens, its layout, and the originals of the shrunk messages by
    position; ``None`` when the turn fits as it is or has nothing to shrink. A turn
    ``in_progress`` (not ended by the assistant's answer) goes down to markers without the id
    to read an output back by, for its steps to fit a small window.

    Where nothing makes it fit, the smallest form is returned (the caller's check then says so).
    """
    if turn >= len(layout.units) or _turn_cost(messages, layout, turn, counter) <= available:
        return None
    older = _older_outputs(messages, layout, turn)
    smallest: tuple[list[Message], Layout, dict[int, Message]] | None = None
    # the largest size that fits; at the smallest, the markers leave out the id to read the
    # output back by where even that is too much (the turn's steps come first)
    sizes = [(keep, True) for keep in TOOL_OUTPUT_CHARS]
    sizes += [(TOOL_OUTPUT_CHARS[-1], False)] if in_progress else []
    for keep, read_back in sizes:
        out = list(messages)
        originals: dict[int, Message] = {}
        for i in older:
            cut = shrunk_output(messages[i], keep, read_back)
            if cut is not None:
                out[i], originals[i] = cut, messages[i]
        if not originals:
            continue
        laid = counted_newest(out, originals, layout, available, counter)
        smallest = (out, laid, originals)
        if _turn_cost(out, laid, turn, counter) <= available:
            return smallest
    # the older rounds' results at their smallest are not enough: the long arguments of their
    # calls shrink too (the newest round is cut inside, in proportion, if need be: see _fit)
    base, base_layout, originals = smallest or (list(messages), layout, {})
    out = list(base)
    rounds = [u for u in base_layout.units[turn + 1 :] if out[u.indices[0]].tool_calls]
    for unit in rounds[:-1]:
        i = unit.indices[0]
        short = shorten_call(out[i], counter)
        if short is not out[i]:
            originals.setdefault(i, messages[i])
            out[i] = short
    if not originals:
        return None
    return out, counted_newest(out, originals, base_layout, available, counter), originals


def turn_kept(recent: Fitted, layout: Layout, turn: int, messages: Sequence[Message]) -> bool:
    """Whether ``recent`` keeps every step of the current turn (its calls and results)."""
    units = layout.units
    work = work_units(messages, units[turn + 1 :]) if turn < len(units) else []
    for cut in recent.cut:
        for k in cut:
            if k > turn and work[k - turn - 1]:
                return False
    return True


def turn_squeezed(recent: Fitted, layout: Layout, turn: int, messages: Sequence[Message]) -> bool:
    """Whether ``recent`` leaves out a step of the current turn or cuts one inside (beyond
    the shrinking planned for it): the turn needs the room a summary or recall would take."""
    if not turn_kept(recent, layout, turn, messages):
        return True
    if not recent.truncated_ids:
        return False
    return any(work_units(messages, layout.units[turn + 1 :]))


def check_turn_kept(
    recent: Fitted,
    layout: Layout,
    turn: int,
    messages: Sequence[Message],
    budget: int,
    fixed: int,
    counter: TokenCounter,
    whole: dict[int, Message] | None = None,
) -> None:
    """Raise a :class:`~session_migrator.BudgetError` when ``recent`` leaves out a step of the
    current turn (the turn, shrunk at its smallest, is over the room); ``fixed`` is what the
    request takes besides the conversation (the priming and the whole system prompt)."""
    if turn_kept(recent, layout, turn, messages):
        return
    steps = sum(work_units(messages, layout.units[turn + 1 :]))
    needed = fixed + least_room(messages, layout, turn, counter, whole)
    raise BudgetError(
        f"a budget of {budget} tokens cannot hold the current turn's {steps} tool step(s) even "
        f"with their results shrunk (about {needed} tokens are needed); without them the model "
        "would repeat its calls. Choose a larger model, reserve fewer output tokens, or start a "
        "new turn",
        budget=budget,
        needed=max(needed, budget + 1),
    )
