"""``usage()``: a stored session measured against a model, on the store's cached counts."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from session_migrator import Message, ModelWindow
from session_migrator.counting._tokens import counter_for
from session_migrator.models._windows import Budget
from session_migrator.store import BaseSessionStore, usage

StoreFactory = Callable[..., BaseSessionStore]

WINDOW = ModelWindow("test-model", "custom", 10_000, 8_000, 1_000, "o200k_base", "explicit")


def _session(n: int) -> list[Message]:
    tag = uuid.uuid4().hex  # content no other test has counted (the counters cache globally)
    out: list[Message] = []
    for i in range(n):
        out.append(Message("user", f"question {i} {tag} " + "words " * 20, id=f"u{i}"))
        out.append(Message("assistant", f"answer {i} {tag} " + "more words " * 30, id=f"a{i}"))
    return out


def test_usage_counts_the_session_against_the_budget(store: BaseSessionStore) -> None:
    messages = _session(5)
    store.append("s", messages)
    u = usage(store, "s", WINDOW)
    counter = counter_for("o200k_base")
    budget = Budget.for_window(WINDOW, exact=True)
    assert u.tokens == u.session_tokens == counter.count_messages(messages)
    assert (u.budget, u.context_window, u.max_input_tokens) == (budget.tokens, 10_000, 8_000)
    assert u.share == pytest.approx(u.tokens / budget.tokens)
    assert u.exact is True
    assert u.fits is True
    assert u.messages == 10
    assert u.counter == "o200k_base"
    assert u.strategy is None
    assert u.tokenized == 10
    assert u.from_store == 0
    assert store.get_token_counts("s", "o200k_base", [m.id for m in messages]) == {
        m.id: counter.count_message(m) for m in messages
    }
    again = usage(store, "s", WINDOW)
    assert (again.tokenized, again.from_store, again.tokens) == (0, 10, u.tokens)


def test_a_reopened_store_is_not_tokenized_again(backend: str, make_store: StoreFactory) -> None:
    first = make_store()
    first.append("s", _session(3))
    assert usage(first, "s", WINDOW).tokenized == 6
    if backend == "memory":
        reopened = first  # a memory store cannot be reopened: its own cache is the check
    else:
        first.close()
        reopened = make_store()
    u = usage(reopened, "s", WINDOW)
    assert (u.tokenized, u.from_store) == (0, 6)


def test_cached_counts_are_what_usage_uses(store: BaseSessionStore) -> None:
    messages = _session(1)
    store.append("s", messages)
    store.put_token_counts("s", "o200k_base", {"u0": 1000, "a0": 2000})
    u = usage(store, "s", WINDOW)
    assert u.tokens == 3 + 1000 + 2000  # reply priming + the stored counts, nothing re-counted
    assert u.tokenized == 0


def test_an_estimated_model_is_flagged_and_keeps_a_margin(store: BaseSessionStore) -> None:
    store.append("s", _session(2))
    claude = ModelWindow("claude-x", "anthropic", 200_000, 200_000, 8_000, "claude", "explicit")
    u = usage(store, "s", claude)
    assert u.exact is False
    assert u.counter.startswith("estimate:claude")
    assert u.budget == Budget.for_window(claude, exact=False).tokens < 192_000


def test_usage_by_model_name(store: BaseSessionStore) -> None:
    store.append("s", _session(1))
    u = usage(store, "s", "gpt-4o")
    assert u.model == "gpt-4o"
    assert u.context_window == 128_000
    assert u.exact is True


def test_usage_with_a_strategy_counts_the_fitted_session(store: BaseSessionStore) -> None:
    store.append("s", _session(30))
    tiny = ModelWindow("tiny", "custom", 1_500, 1_500, 200, "o200k_base", "explicit")
    u = usage(store, "s", tiny, strategy="trim")
    assert u.fits is False
    assert u.session_tokens > u.budget
    assert u.tokens <= u.budget
    assert u.messages < 60
    assert u.strategy == "trim"
