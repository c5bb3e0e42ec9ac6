"""The note of the gap before the newest user message (issue 43): graded in minutes, hours or
days, sent whenever the gap passes a threshold (30 minutes by default) whether the session is
cut or fits whole, always within the budget, one per fit, and it can be turned off."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from session_migrator import (
    BudgetError,
    Message,
    ModelWindow,
    SessionFitter,
    chat_rule_violations,
    counter_for,
    migrate,
)
from session_migrator.store import open_store

T0 = datetime(2026, 11, 26, 14, 5, tzinfo=UTC)


def _window(budget: int) -> ModelWindow:
    return ModelWindow("t", "test", budget, budget, 0, "o200k_base", "explicit")


def _session(gap: timedelta, turns: int = 1) -> list[Message]:
    out = [Message("system", "You are a helpful assistant.", id="s", timestamp=T0)]
    for k in range(turns):
        when = T0 + timedelta(minutes=k)
        out += [
            Message("user", f"Tell me about topic number {k} in some detail.", id=f"u{k}",
                    timestamp=when),
            Message("assistant", f"Topic {k} is a long story; " + "it goes on. " * 30,
                    id=f"a{k}", timestamp=when),
        ]  # fmt: skip
    last = out[-1].timestamp
    assert last is not None
    out.append(Message("user", "I'm back. Where were we?", id="q", timestamp=last + gap))
    return out


def _gap_notes(messages: list[Message]) -> list[Message]:
    return [m for m in messages if (m.marker or {}).get("kind") == "gap_note"]


@pytest.mark.parametrize(
    ("gap", "words"),
    [
        (timedelta(days=9, hours=3), "The user returns after 9 days (last message 2026-11-26)."),
        (timedelta(days=1), "The user returns after 1 day (last message 2026-11-26)."),
        (
            timedelta(hours=3, minutes=20),
            "The user returns after 3 hours (last message 2026-11-26 14:05 UTC).",
        ),
        (
            timedelta(minutes=45),
            "The user returns after 45 minutes (last message 2026-11-26 14:05 UTC).",
        ),
    ],
)
def test_a_session_that_fits_whole_gets_a_graded_note_before_the_newest_user_message(
    gap: timedelta, words: str
) -> None:
    messages = _session(gap)
    result = migrate(messages, "gpt-4o")
    assert result.report.decision == "fits"
    sent = result.messages
    assert [m.id for m in sent[-2:]][1] == "q"
    note = sent[-2]
    assert note.role == "user"
    assert note.text == f"[session-migrator: {words}]"
    assert note.marker == {"kind": "gap_note", "of": "q", "seconds": int(gap.total_seconds())}
    assert _gap_notes(sent) == [note]
    assert chat_rule_violations(sent) == []
    counter = counter_for("o200k_base")
    assert result.report.tokens_after == counter.count_messages(sent)
    assert result.report.messages_after == len(sent)


def test_under_the_threshold_or_without_times_there_is_no_note() -> None:
    assert _gap_notes(migrate(_session(timedelta(minutes=20)), "gpt-4o").messages) == []
    untimed = [m.replace(timestamp=None) for m in _session(timedelta(days=3))]
    assert _gap_notes(migrate(untimed, "gpt-4o").messages) == []


def test_it_can_be_turned_off_or_given_a_threshold() -> None:
    three_hours = _session(timedelta(hours=3))
    assert _gap_notes(migrate(three_hours, "gpt-4o", gap_note=False).messages) == []
    assert migrate(three_hours, "gpt-4o", gap_note=False).messages == three_hours
    assert _gap_notes(migrate(three_hours, "gpt-4o", gap_note=timedelta(hours=4)).messages) == []
    assert len(_gap_notes(migrate(three_hours, "gpt-4o", gap_note=timedelta(hours=2)).messages))
    # (the default threshold is 30 minutes: 20 minutes gives none, an hour gives one)
    hour = _session(timedelta(hours=1))
    assert len(_gap_notes(migrate(hour, "gpt-4o").messages)) == 1
    assert _gap_notes(migrate(hour, "gpt-4o", gap_note=timedelta(hours=2)).messages) == []
    with pytest.raises(TypeError, match="gap_note"):
        migrate(hour, "gpt-4o", gap_note=30)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="gap_note"):
        migrate(hour, "gpt-4o", gap_note=timedelta(0))


@pytest.mark.parametrize("strategy", ["trim", "summarize", "recall", "auto"])
def test_a_cut_session_gets_exactly_one_note_within_the_budget(strategy: str) -> None:
    messages = _session(timedelta(days=9), turns=30)
    counter = counter_for("o200k_base")
    budget = counter.count_messages(messages) // 4
    result = migrate(messages, _window(budget), strategy=strategy, reserve_output=0)
    assert result.report.decision == "compressed"
    sent = result.messages
    notes = _gap_notes(sent)
    assert len(notes) == 1
    assert notes[0].text == (
        "[session-migrator: The user returns after 9 days (last message 2026-11-26).]"
    )
    assert sent[sent.index(notes[0]) + 1].id == "q"
    # the lead says nothing of the gap (one note per fit)
    assert sum("returns after" in m.text or "last active" in m.text for m in sent) == 1
    assert counter.count_messages(sent) <= budget
    assert result.report.tokens_after == counter.count_messages(sent)
    assert chat_rule_violations(sent) == []


def test_without_room_the_note_is_left_out_and_the_fit_stays_within_the_budget() -> None:
    messages = _session(timedelta(days=9))
    counter = counter_for("o200k_base")
    whole = counter.count_messages(messages)
    # the session fits whole with a token to spare: the note does not fit, nothing is cut for it
    result = migrate(messages, _window(whole + 1), reserve_output=0)
    assert result.report.decision == "fits"
    assert result.messages == messages
    assert result.report.tokens_after <= whole + 1
    assert any("gap" in n and "left out" in n for n in result.report.notes)
    # whatever the budget, the fit is within it with at most one note, or it fails as before
    cut = _session(timedelta(days=9), turns=4)
    sent_at = []
    for budget in range(20, counter.count_messages(cut) + 40, 7):
        try:
            fitted = migrate(cut, _window(budget), strategy="trim", reserve_output=0)
        except BudgetError:
            with pytest.raises(BudgetError):
                migrate(cut, _window(budget), strategy="trim", reserve_output=0, gap_note=False)
            continue
        assert counter.count_messages(fitted.messages) <= budget
        assert len(_gap_notes(fitted.messages)) <= 1
        assert chat_rule_violations(fitted.messages) == []
        sent_at.append(bool(_gap_notes(fitted.messages)))
    assert False in sent_at
    assert True in sent_at


def test_a_step_result_sent_as_a_user_message_is_not_the_newest_user_message() -> None:
    messages = _session(timedelta(days=2))
    later = T0 + timedelta(days=2, minutes=1)
    step = Message("user", "Observation: 42", id="r", timestamp=later + timedelta(hours=5))
    result = migrate(
        [*messages, Message("assistant", "ok", id="x", timestamp=later), step], "gpt-4o"
    )
    (note,) = _gap_notes(result.messages)
    assert note.marker is not None
    assert note.marker["of"] == "q"


def test_a_session_fitter_sends_it_and_can_turn_it_off() -> None:
    now = [T0.timestamp()]
    with open_store("memory://", clock=lambda: now[0]) as store:
        store.append("s", [Message("user", "Plan my week, please.", id="u1")])
        store.append("s", [Message("assistant", "Sure: Monday is for email.", id="a1")])
        now[0] += 3 * 3600 + 5
        store.append("s", [Message("user", "And Tuesday?", id="u2")])
        fitted = SessionFitter("s", store=store).fit("gpt-4o")
        (note,) = _gap_notes(fitted.messages)
        assert note.text.startswith("[session-migrator: The user returns after 3 hours")
        assert [m.id for m in fitted.messages][-2:] == [note.id, "u2"]
        off = SessionFitter("s", store=store, gap_note=False).fit("gpt-4o")
        assert _gap_notes(off.messages) == []
        higher = SessionFitter("s", store=store, gap_note=timedelta(hours=4)).fit("gpt-4o")
        assert _gap_notes(higher.messages) == []
        with pytest.raises(TypeError, match="gap_note"):
            SessionFitter("s", store=store, gap_note="yes")  # type: ignore[arg-type]


def test_the_langchain_history_and_the_llamaindex_memory_send_it_and_can_turn_it_off() -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from llama_index.core.llms import ChatMessage

    from langchain_session_migrator import FittedChatMessageHistory
    from llamaindex_session_migrator import SessionMigratorMemory

    now = [T0.timestamp()]
    store = open_store("memory://", clock=lambda: now[0])
    for gap_note, sent in ((True, 1), (False, 0)):
        history = FittedChatMessageHistory(
            f"lc-{gap_note}", store=store, model="gpt-4o", gap_note=gap_note
        )
        history.add_user_message("Plan my week")
        history.add_ai_message("Monday: email.")
        now[0] += 3 * 86_400
        history.add_user_message("And Tuesday?")  # (appended in this process: its time kept)
        texts = [str(m.content) for m in history.messages]
        notes = [t for t in texts if t.startswith("[session-migrator: The user returns")]
        assert len(notes) == sent
        assert texts[-1] == "And Tuesday?"
        assert len(history.full_messages) == 3  # (the note is never stored)

        memory = SessionMigratorMemory(store=store, model="gpt-4o", gap_note=gap_note)
        memory.put(ChatMessage(role="user", content="Plan my week"))
        memory.put(ChatMessage(role="assistant", content="Monday: email."))
        now[0] += 3 * 3600
        memory.put(ChatMessage(role="user", content="And Tuesday?"))
        got = memory.get()
        notes = [m for m in got if str(m.content).startswith("[session-migrator: The user")]
        assert len(notes) == sent
        # handed back with the next answer (as a ChatMemoryBuffer's caller does), the note is
        # not stored
        memory.set([*got, ChatMessage(role="assistant", content="Tuesday: gym.")])
        assert len(memory.get_all()) == 4


def test_the_note_comes_and_goes_without_moving_a_kept_cut() -> None:
    """A fitter keeps its cut between calls (the prompt cache reuses its head): a user who
    returns after days gets the note, and the messages before it are those the last fit sent
    (its room is held back at every call of a dated conversation, note or not)."""
    window = _window(1_500)
    fitter = SessionFitter("kept", store="memory://", reserve_output=0)
    fitter.append(_session(timedelta(minutes=1), turns=12)[:-1])
    before = fitter.fit(window)
    assert before.report.decision == "compressed"
    later = T0 + timedelta(days=9)
    fitter.append([Message("user", "I'm back. Where were we?", id="back", timestamp=later)])
    after = fitter.fit(window)
    sent = after.messages
    at = next(k for k, m in enumerate(sent) if (m.marker or {}).get("kind") == "gap_note")
    assert "returns after 8 days" in sent[at].text  # (the last message was at 14:16)
    through = before.report.stable_through  # (the last message of the head it keeps)
    ids = [m.id for m in before.messages]
    assert through in ids
    head = ids[: ids.index(through) + 1]
    assert len(head) >= 4
    assert [m.id for m in sent[: len(head)]] == head
    assert after.report.tokens_after <= 1_500
