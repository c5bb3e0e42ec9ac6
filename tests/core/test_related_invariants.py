"""Property-based: recall across sessions keeps every invariant of a migration.

Over random sessions and targets (the generators of ``test_invariants``) and random other
sessions: the result never exceeds the budget, keeps the chat rules, mutates nothing and is the
same for the same input; the excerpts are one library message after the system messages; a
session that fits, or a question not about the past, is fitted exactly as without them.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from session_migrator import BudgetError, Message, ModelWindow, RelatedSession, RelatedSessions
from session_migrator.counting._tokens import counter_for
from session_migrator.fitting._result import latest_user_text
from session_migrator.messages._rules import chat_rule_violations
from session_migrator.migration._migrate import migrate
from session_migrator.recall._related import PAST_SHARE, RELATED_SHARE, RelatedExcerpts
from session_migrator.recall._when import asks
from tests.core.test_invariants import STRATEGIES, _snapshot, sessions, targets

START = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def _stamped(messages: list[Message], start: datetime | None, step: timedelta) -> list[Message]:
    if start is None:
        return messages
    return [m.replace(timestamp=start + k * step) for k, m in enumerate(messages)]


@st.composite
def others(draw: st.DrawFn) -> list[RelatedSession]:
    out: list[RelatedSession] = []
    for k in range(draw(st.integers(0, 3))):
        start = draw(st.one_of(st.none(), st.integers(0, 60).map(lambda d: START + timedelta(d))))
        step = timedelta(minutes=draw(st.sampled_from([1, 90, 60 * 24])))
        messages = _stamped(draw(sessions(max_turns=5)), start, step)
        title = draw(st.one_of(st.none(), st.sampled_from(["trip", "notes", "数据"])))
        out.append(RelatedSession(f"other-{k}", messages, title=title))
    return out


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    session=sessions(),
    related=others(),
    target=targets(),
    strategy=st.sampled_from(STRATEGIES),
    stamped=st.booleans(),
    scope=st.sampled_from([None, "user", "workspace"]),
    echo=st.booleans(),
)
def test_related_sessions_keep_the_invariants(
    session: list[Message],
    related: list[RelatedSession],
    target: tuple[ModelWindow, int | None],
    strategy: str,
    stamped: bool,
    scope: str | None,
    echo: bool,
) -> None:
    window, reserve = target
    messages = _stamped(session, START + timedelta(days=90) if stamped else None, timedelta(1))
    asked = [m.text for s in related for m in s.messages if m.role == "user" and m.text.strip()]
    if echo and asked:  # a question another session holds the words of
        messages = [*messages, Message("user", f"did we {asked[-1]}", id="echo")]
    given_related = related if scope is None else RelatedSessions(scope, tuple(related))  # type: ignore[arg-type]
    counter = counter_for(window.tokenizer, model=window.name)
    before = _snapshot(messages), [_snapshot(s.messages) for s in related]
    frozen = copy.deepcopy(related)
    try:
        plain = migrate(messages, window, strategy=strategy, reserve_output=reserve)
    except BudgetError:
        event("budget error")
        try:
            migrate(messages, window, strategy=strategy, reserve_output=reserve, related=related)
        except BudgetError:
            return
        raise AssertionError("the excerpts made a budget error go away") from None
    result = migrate(
        messages, window, strategy=strategy, reserve_output=reserve, related=given_related
    )
    report = result.report

    # nothing mutated; the same input gives the same output
    assert (_snapshot(messages), [_snapshot(s.messages) for s in related]) == before
    assert related == frozen
    again = migrate(
        messages, window, strategy=strategy, reserve_output=reserve, related=given_related
    )
    assert again.messages == result.messages
    assert again.report.related_ids == report.related_ids

    # within the budget, valid for the chat APIs
    total = counter.count_messages(result.messages)
    assert total == report.tokens_after <= report.budget == plain.report.budget
    assert report.messages_after == len(result.messages)
    assert chat_rule_violations(result.messages) == []
    assert report.decision == plain.report.decision

    # at most one library message of excerpts, right after the system messages
    library = [m for m in result.messages if (m.marker or {}).get("kind") == "related"]
    rest = [m for m in result.messages if (m.marker or {}).get("kind") != "related"]
    assert len(library) <= 1
    if library:
        event(f"excerpts ({report.decision})")
        excerpt = library[0]
        at = result.messages.index(excerpt)
        assert excerpt.role == "system"
        assert all(m.role == "system" for m in result.messages[:at])
        assert result.messages[at + 1].role != "system"
        question = latest_user_text(messages)
        share = (
            (PAST_SHARE if report.decision != "fits" else 1.0) if asks(question) else RELATED_SHARE
        )
        assert counter.count_message(excerpt) <= share * report.budget
        assert report.related_ids
        by_session = {s.id: {m.id for m in s.messages} for s in related}
        for sid, ids in report.related_ids.items():
            assert set(ids) <= by_session[sid]
    else:
        assert report.related_ids == {}

    # the session is fitted first: whole when it fits; otherwise exactly as without the
    # excerpts unless the question is about the past (its excerpts' room is held back)
    past = RelatedExcerpts(related, messages, latest_user_text(messages)).asks_about_the_past
    if report.decision == "fits" or not past:
        assert rest == plain.messages
        if report.decision == "fits":
            # (the same objects, but the note of the gap before the question: made per fit)
            assert all(
                a is b
                for a, b in zip(rest, plain.messages, strict=True)
                if (a.marker or {}).get("kind") != "gap_note"
            )
    else:
        ids = {m.id for m in messages}
        own = [m for m in rest if m.id in ids]
        assert all(
            (m.marker or {}).get("kind") in ("summary", "trim_note", "gap_note")
            for m in rest[len(own) :]
            if m not in own
        )
        newest_user = next(m.id for m in reversed(messages) if m.role == "user")
        assert newest_user in {m.id for m in own}

    json.dumps(report.to_dict())
