"""How much of a model's input budget a stored session takes.

Token counts are read from the store's cache first (per message id and counter) and only the
messages without a cached count are tokenized; their counts are written back. A session that
was counted once is never tokenized again, in this process or after reopening the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from session_migrator.counting._counter import BaseCounter
from session_migrator.counting._tokens import counter_for
from session_migrator.messages._messages import Message
from session_migrator.models._windows import Budget, ModelWindow
from session_migrator.store._protocol import SyncSessionStore

__all__ = ["Usage", "cached_counter", "usage"]


@dataclass(frozen=True, slots=True)
class Usage:
    """A session measured against one model.

    ``tokens`` are the active tokens: what would be sent, i.e. the whole session, or the
    session fitted with ``strategy`` when one was given. ``session_tokens`` is always the whole
    session. ``budget`` is the model's input budget (:class:`~session_migrator.Budget`),
    ``share`` = ``tokens / budget``; ``fits`` says whether the whole session fits as is.
    ``exact`` is ``False`` when counts are estimates for this model's tokenizer.
    ``from_store`` messages had a cached count; ``tokenized`` were counted by this call.

    >>> from session_migrator import Message, ModelWindow
    >>> from session_migrator.store import open_store, usage
    >>> w = ModelWindow("tiny", "custom", 1000, 1000, 100, "o200k_base", "explicit")
    >>> store = open_store("memory://")
    >>> _ = store.append("s", [Message("user", "hello there", id="m1")])
    >>> u = usage(store, "s", w)
    >>> (u.tokens, u.budget, u.exact)
    (8, 900, True)
    """

    session_id: str
    model: str
    messages: int
    tokens: int
    session_tokens: int
    context_window: int
    max_input_tokens: int
    budget: int
    reserved_output: int
    share: float
    fits: bool
    exact: bool
    counter: str
    strategy: str | None
    window_source: str
    from_store: int
    tokenized: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict of every field."""
        return asdict(self)


def _window(model: str | ModelWindow) -> ModelWindow:
    if isinstance(model, ModelWindow):
        return model
    from session_migrator.models._lookup import lookup_model

    return lookup_model(model)


def cached_counter(
    store: SyncSessionStore, session_id: str, messages: Sequence[Message], counter: BaseCounter
) -> tuple[int, int]:
    """Seed ``counter`` with the store's cached counts of ``messages``; store the missing ones.

    Returns (counts read from the store, messages tokenized now).
    """
    ids = [m.id for m in messages]
    cached = store.get_token_counts(session_id, counter.name, ids) if ids else {}
    counter.prime({m: cached[m.id] for m in messages if m.id in cached})
    fresh = {m.id: counter.count_message(m) for m in messages if m.id not in cached}
    if fresh:
        store.put_token_counts(session_id, counter.name, fresh)
    return len(cached), len(fresh)


def usage(
    store: SyncSessionStore,
    session_id: str,
    model: str | ModelWindow,
    *,
    strategy: str | None = None,
) -> Usage:
    """Measure session ``session_id`` against ``model`` (a name or a :class:`ModelWindow`).

    With ``strategy`` (``trim``, ``summarize``, ``recall``, ``auto``) the active tokens are those
    of the session fitted to the model with it; an unknown session counts as empty.
    """
    window = _window(model)
    counter = counter_for(window.tokenizer, model=window.name)
    messages = store.load(session_id)
    from_store, tokenized = cached_counter(store, session_id, messages, counter)
    budget = Budget.for_window(window, exact=counter.exact)
    session_tokens = counter.count_messages(messages)
    active = messages
    if strategy is not None:
        from session_migrator.migration._migrate import migrate

        active = migrate(messages, window, strategy=strategy, counter=counter).messages
    tokens = counter.count_messages(active)
    return Usage(
        session_id=session_id,
        model=window.name,
        messages=len(active),
        tokens=tokens,
        session_tokens=session_tokens,
        context_window=window.context_window,
        max_input_tokens=window.max_input_tokens,
        budget=budget.tokens,
        reserved_output=budget.reserved_output,
        share=tokens / budget.tokens if budget.tokens else float("inf"),
        fits=session_tokens <= budget.tokens,
        exact=counter.exact,
        counter=counter.name,
        strategy=strategy,
        window_source=window.source,
        from_store=from_store,
        tokenized=tokenized,
    )
