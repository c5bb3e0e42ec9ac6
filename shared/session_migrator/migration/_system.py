"""The system prompt's part of a fit: sent whole where it leaves the conversation room, else cut
down (max-min fair among its messages), or refused with a budget that would hold it; and the
cost of the newest units counted only as far as a decision needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from session_migrator._errors import BudgetError
from session_migrator.counting._counter import REPLY_PRIMING, TokenCounter
from session_migrator.fitting._truncate import truncate_message
from session_migrator.fitting._units import Layout
from session_migrator.messages._messages import Message

__all__ = ["ELLIPSIS", "MIN_CONVERSATION_TOKENS", "cost_up_to", "fit_system"]

#: The smallest room the conversation needs after the system prompt.
MIN_CONVERSATION_TOKENS = 24
#: What a message cut to nothing says.
ELLIPSIS = "[...]"


def fit_system(
    messages: Sequence[Message], layout: Layout, budget: int, counter: TokenCounter
) -> tuple[list[Message], list[str]]:
    """The system messages as a fit sends them, and the ids of those cut: whole where they
    leave the conversation :data:`MIN_CONVERSATION_TOKENS`, else cut to half the room (or to
    what a smaller conversation leaves), the small ones kept whole and the large ones sharing
    the rest; a :class:`~session_migrator.BudgetError` where even cut down they do not fit."""
    system = [messages[i] for i in layout.system]
    costs = [counter.count_message(m) for m in system]
    limit = budget - REPLY_PRIMING - MIN_CONVERSATION_TOKENS

    def smallest() -> int:
        """What the system prompt takes at the least: each message cut down to "[...]"."""
        return sum(
            min(cost, counter.count_message(m.replace(content=ELLIPSIS)))
            for m, cost in zip(system, costs, strict=True)
        )

    if limit < 0:
        raise BudgetError(
            f"a budget of {budget} tokens cannot hold any conversation; choose a larger "
            "model or reserve fewer output tokens",
            budget=budget,
            needed=REPLY_PRIMING + MIN_CONVERSATION_TOKENS + smallest(),
        )
    if sum(costs) <= limit or not system:
        return system, []
    # the system prompt alone is over the budget: cut it to half the room, or to what a
    # smaller conversation leaves; the small messages kept whole and the large ones sharing
    # the rest (max-min fair)
    newest = range(len(layout.units) - 1, -1, -1)
    rest = cost_up_to(layout, messages, counter, newest, limit - limit // 2)
    target_total = max(limit // 2, limit - rest, 0)
    shares = [0] * len(system)
    remaining = target_total
    by_size = sorted(range(len(system)), key=lambda k: costs[k])
    for position, k in enumerate(by_size):
        shares[k] = min(costs[k], remaining // (len(system) - position))
        remaining -= shares[k]
    truncated: list[str] = []
    out: list[Message] = []
    for m, share in zip(system, shares, strict=True):
        try:
            new = truncate_message(m, share, counter)
        except ValueError as exc:
            raise BudgetError(
                f"a budget of {budget} tokens cannot hold the system prompt even cut down; "
                "choose a larger model",
                budget=budget,
                needed=max(budget + 1, REPLY_PRIMING + MIN_CONVERSATION_TOKENS + 2 * smallest()),
            ) from exc
        if new is not m:
            truncated.append(m.id)
        out.append(new)
    return out, truncated


def cost_up_to(
    layout: Layout,
    messages: Sequence[Message],
    counter: TokenCounter,
    units: Iterable[int],
    enough: int,
) -> int:
    """What the ``units`` (indices, in the order given) cost, counted only until the sum reaches
    ``enough`` (the rest need not be counted, nor tokenized, to know it is at least that)."""
    total = 0
    for k in units:
        total += layout.unit_cost(layout.units[k], messages, counter)
        if total >= enough:
            break
    return total
