"""SessionFitter: the store-backed, cached fitted view of one session."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from session_migrator import Message, ModelWindow, TiktokenCounter
from session_migrator.counting._counter import BaseCounter, TokenCounter
from session_migrator.counting._tokens import counter_for
from session_migrator.messages._rules import chat_rule_violations
from session_migrator.sessions._fitter import SessionFitter

store_module = pytest.importorskip("session_migrator.store")
open_store = store_module.open_store


def window(tokens: int, name: str = "target") -> ModelWindow:
    return ModelWindow(name, "test", tokens, tokens, 0, "o200k_base", "explicit")


def turns(first: int, last: int) -> list[Message]:
    out: list[Message] = []
    for i in range(first, last):
        out.append(Message("user", f"Question {i}: tell me about item {i}. " * 3, id=f"u{i}"))
        out.append(Message("assistant", f"Answer {i}: item {i} is fine. " * 4, id=f"a{i}"))
    return out


SYSTEM = Message("system", "You are a careful assistant.", id="sys")


class RecordingSummarizer:
    name = "recording"

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], str | None]] = []

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str:
        self.calls.append(([m.id for m in messages], previous))
        ids = ",".join(m.id for m in messages)
        return f"{previous} + [{ids}]" if previous else f"[{ids}]"


class CountingCounter(BaseCounter):
    def __init__(self, name: str | None = None) -> None:
        super().__init__()
        self._inner = TiktokenCounter("o200k_base")
        self._name = name or f"counting-{uuid.uuid4().hex}"
        self._exact = True
        self.texts: list[str] = []

    def count_text(self, text: str) -> int:
        self.texts.append(text)
        return self._inner.count_text(text)


@pytest.fixture
def store() -> Iterator[object]:
    s = open_store("memory://")
    try:
        yield s
    finally:
        s.close()


def test_a_warm_fit_returns_the_cached_result(store: object) -> None:
    fitter = SessionFitter("s1", store=store, strategy="trim")  # type: ignore[arg-type]
    fitter.append([SYSTEM, *turns(0, 40)])
    counter = CountingCounter()
    first = fitter.fit(window(1_000), counter=counter)
    assert first.report.decision == "compressed"
    counter.texts.clear()
    assert fitter.fit(window(1_000), counter=counter) is first
    assert counter.texts == []
    assert fitter.fit(window(2_000)) is not first


def test_the_cache_is_per_counter(store: object) -> None:
    fitter = SessionFitter("s1", store=store, strategy="trim")  # type: ignore[arg-type]
    fitter.append([SYSTEM, *turns(0, 40)])
    exact = fitter.fit(window(1_000))
    estimated = fitter.fit(window(1_000), counter=counter_for("claude"))
    assert estimated is not exact
    assert estimated.report.counter.startswith("estimate:claude")
    assert fitter.fit(window(1_000)) is not estimated


def test_a_small_session_fits_untouched(store: object) -> None:
    fitter = SessionFitter("s1", store=store)  # type: ignore[arg-type]
    messages = [SYSTEM, *turns(0, 2)]
    fitter.append(messages)
    result = fitter.fit(window(100_000))
    assert result.report.decision == "fits"
    assert result.messages == messages


def test_an_append_by_another_fitter_is_picked_up(store: object) -> None:
    mine = SessionFitter("shared", store=store, strategy="trim")  # type: ignore[arg-type]
    theirs = SessionFitter("shared", store=store, strategy="trim")  # type: ignore[arg-type]
    mine.append([SYSTEM, *turns(0, 30)])
    before = mine.fit(window(1_000))
    newest = Message("user", "A question from the other process", id="other")
    theirs.append([newest])
    after = mine.fit(window(1_000))
    assert after is not before
    assert after.messages[-1].id == "other"
    assert [m.id for m in mine.messages][-1] == "other"
    assert len(mine.messages) == 62
    # appending is idempotent by id
    theirs.append([newest])
    assert len(mine.messages) == 62
    assert chat_rule_violations(after.messages) == []


def test_the_rolling_summary_is_stored_and_extended(store: object) -> None:
    recorder = RecordingSummarizer()
    fitter = SessionFitter(
        "s1",
        store=store,  # type: ignore[arg-type]
        strategy="summarize",
        summarizer=recorder,
    )
    fitter.append([SYSTEM, *turns(0, 40)])
    first = fitter.fit(window(1_000))
    assert first.summary is not None
    stored = store.get_summary("s1")  # type: ignore[attr-defined]
    assert stored is not None
    assert (stored.text, stored.first_id, stored.last_id) == (
        first.summary.text,
        first.summary.first_id,
        first.summary.last_id,
    )
    assert stored.covered_count == len(first.report.summarized_ids)

    fitter.append(turns(40, 45))
    second = fitter.fit(window(1_000))
    ids, previous = recorder.calls[-1]
    assert previous == stored.text
    assert ids, "the second fit cut more"
    assert ids[0] == f"u{int(first.summary.last_id[1:]) + 1}", "only newly cut messages"
    assert ids == second.report.summarized_ids[len(first.report.summarized_ids) :]
    restored = store.get_summary("s1")  # type: ignore[attr-defined]
    assert restored is not None
    assert restored.revision > stored.revision
    assert restored.last_id == ids[-1]
    assert restored.first_id == stored.first_id

    # another fitter on the same store reuses the stored summary: nothing new to summarize
    other_recorder = RecordingSummarizer()
    other = SessionFitter(
        "s1",
        store=store,  # type: ignore[arg-type]
        strategy="summarize",
        summarizer=other_recorder,
    )
    again = other.fit(window(1_000))
    assert other_recorder.calls == []
    assert again.messages == second.messages


def test_a_change_of_target_is_logged(store: object) -> None:
    fitter = SessionFitter("s1", store=store, strategy="trim")  # type: ignore[arg-type]
    fitter.append([SYSTEM, *turns(0, 40)])
    big, small = window(50_000, "big-model"), window(1_000, "small-model")
    first = fitter.fit(big)
    assert first.report.source_model is None
    fitter.append(turns(40, 41))
    fitter.fit(big)
    records = store.migrations("s1")  # type: ignore[attr-defined]
    assert [(r.from_model, r.to_model) for r in records] == [(None, "big-model")]
    moved = fitter.fit(small)
    assert moved.report.source_model == "big-model"
    records = store.migrations("s1")  # type: ignore[attr-defined]
    assert [(r.from_model, r.to_model) for r in records] == [
        (None, "big-model"),
        ("big-model", "small-model"),
    ]
    last = records[-1]
    assert last.decision == "compressed"
    assert last.strategy == "trim"
    assert last.tokens_before > last.budget >= last.tokens_after
    # a new fitter knows where the session was last fitted
    assert SessionFitter("s1", store=store).fit(small).report.source_model == "small-model"  # type: ignore[arg-type]


def test_token_counts_are_persisted_so_a_reopened_session_is_not_retokenized(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    messages = [SYSTEM, *turns(0, 40)]
    name = f"counting-{uuid.uuid4().hex}"
    with open_store(url) as first_store:
        fitter = SessionFitter("s1", store=first_store, strategy="trim")
        fitter.append(messages)
        counter = CountingCounter(name)
        fitter.fit(window(1_000), counter=counter)
        assert {m.text for m in messages} <= set(counter.texts)
    with open_store(url) as second_store:
        fresh = CountingCounter(name)  # same counting rule, empty cache
        reopened = SessionFitter("s1", store=second_store, strategy="trim")
        result = reopened.fit(window(1_000), counter=fresh)
        texts = {m.text for m in messages}
        assert [t for t in fresh.texts if t in texts] == []
        assert fresh.count_messages(result.messages) <= result.report.budget


def test_clear_forgets_the_session(store: object) -> None:
    fitter = SessionFitter("s1", store=store)  # type: ignore[arg-type]
    fitter.append(turns(0, 2))
    fitter.clear()
    assert fitter.messages == []
    assert store.load("s1") == []  # type: ignore[attr-defined]


async def test_afit_matches_fit(store: object) -> None:
    fitter = SessionFitter("s1", store=store, strategy="trim")  # type: ignore[arg-type]
    fitter.append([SYSTEM, *turns(0, 40)])
    result = await fitter.afit(window(1_000))
    assert result is fitter.fit(window(1_000))
    assert counter_for("o200k_base").count_messages(result.messages) <= result.report.budget
    capped = await fitter.afit(window(1_000), budget_cap=400)
    assert capped is fitter.fit(window(1_000), budget_cap=400)
    assert capped.report.budget == 400
    assert counter_for("o200k_base").count_messages(capped.messages) <= 400


def test_a_session_deleted_while_it_is_fitted_is_no_error(tmp_path: Path) -> None:
    """Another process deletes the session between the read and the migration log's write: the
    fit is of what was read, and the next read sees the deletion."""
    from session_migrator.store import MigrationRecord
    from session_migrator.store._sqlite import SQLiteStore

    url = tmp_path / "race.db"

    class DeletedMeanwhile(SQLiteStore):
        def log_migration(self, record: MigrationRecord) -> MigrationRecord:
            with SQLiteStore(url) as other:  # the other process, just before this write
                other.delete_session(record.session_id)
            return super().log_migration(record)

    store = DeletedMeanwhile(url)
    fitter = SessionFitter("s1", store=store, strategy="trim")
    fitter.append([SYSTEM, *turns(0, 3)])
    result = fitter.fit(window(10_000))
    assert result.report.decision == "fits"
    assert len(result.messages) == 7
    assert fitter.messages == []  # the next read: the session is gone
    store.close()


@pytest.mark.parametrize("strategy", ["auto", "recall", "trim"])
def test_the_fitted_view_shrinks_old_tool_outputs_before_it_drops_a_turn(strategy: str) -> None:
    # the adapters' path (a ledger with slack, the cut kept between fits) runs the first tier
    # too: an agent session whose tokens are in tool outputs keeps every user turn
    from session_migrator import ToolCall

    fitter = SessionFitter(f"tools-{strategy}", store="memory://", strategy=strategy)
    log = "\n".join(f"line {k}: build step {k} finished without warnings" for k in range(400))
    messages: list[Message] = []
    for i in range(12):
        call = ToolCall(f"c{i}", "run", '{"cmd": "make"}')
        messages += [
            Message("user", f"Step {i}: run the build and tell me what broke.", id=f"u{i}"),
            Message("assistant", "", tool_calls=(call,), id=f"a{i}"),
            Message("tool", log, tool_call_id=f"c{i}", id=f"t{i}"),
            Message("assistant", f"Step {i} built cleanly.", id=f"r{i}"),
        ]
    fitter.append(messages)
    counter = counter_for("o200k_base")
    budget = counter.count_messages(messages) // 3
    for round_ in range(2):  # a fit, then a re-fit after a new message
        result = fitter.fit(window(budget))
        sent = {m.id: m for m in result.messages}
        assert counter.count_messages(result.messages) <= budget
        assert chat_rule_violations(result.messages) == []
        users = [m for m in fitter.messages if m.role == "user"]
        assert all(sent.get(u.id) == u for u in users), f"round {round_}: a user turn went"
        shrunk = [m for m in result.messages if m.role == "tool" and m.text != log]
        assert shrunk
        assert f'read it back with read_context(id="{shrunk[0].id}")' in shrunk[0].text
        assert set(result.report.truncated_ids) >= {m.id for m in shrunk}
        fitter.append([Message("user", "And the next step?", id=f"n{round_}")])
    assert [m.text for m in fitter.messages if m.role == "tool"] == [log] * 12  # stored whole
