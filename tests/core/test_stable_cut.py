"""The stable cut across a conversation: the guards keep it per conversation, it holds after a
model switch, and what the next request sends again is marked (``stable_through``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from session_migrator import Message, ModelWindow, RequestFitter, SessionFitter

SMALL = ModelWindow("small", "example", 2_000, 2_000, 0, "o200k_base", "explicit")
LARGER = ModelWindow("larger", "other", 3_000, 3_000, 0, "o200k_base", "explicit")


def _turn(n: int) -> list[Message]:
    return [
        Message("user", f"When does order {n} ship from the north warehouse?", id=f"u{n}"),
        Message("assistant", f"Order {n} ships on day {n % 7} of the week.", id=f"a{n}"),
    ]


def _shared(a: Sequence[Message], b: Sequence[Message]) -> int:
    """How many leading messages two requests share (the same ids and texts)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if (x.id, x.text) != (y.id, y.text):
            break
        n += 1
    return n


def _replay(fit: Callable[[list[Message], int], list[Message]], turns: int) -> list[float]:
    """Each request's share of messages sent again from the one before, past the budget."""
    history = [Message("system", "You answer questions about orders.", id="sys")]
    previous: list[Message] | None = None
    shares: list[float] = []
    for n in range(turns):
        user, answer = _turn(n)
        history.append(user)
        sent = fit(history, n)
        if previous is not None and n > 80:
            shares.append(_shared(previous, sent) / len(sent))
        previous = sent
        history.append(answer)
    return shares


def test_a_guard_keeps_each_conversations_cut() -> None:
    guard = RequestFitter(reserve_output=0)
    shares = _replay(lambda history, n: guard.fit(history, SMALL).messages, 200)
    assert guard.last_report is not None
    assert guard.last_report.decision == "compressed"
    # most requests send again all but the newest turn and what is recalled for it (a few
    # hundred tokens, a share of a 2,000-token window); a handful move the cut
    assert sum(s >= 0.7 for s in shares) >= 0.9 * len(shares)


def test_a_guard_without_slack_cuts_afresh() -> None:
    guard = RequestFitter(reserve_output=0, slack=0)
    shares = _replay(lambda history, n: guard.fit(history, SMALL).messages, 200)
    assert sum(s >= 0.7 for s in shares) < 0.2 * len(shares)


def test_the_cut_is_as_stable_after_a_model_switch() -> None:
    fitter = SessionFitter("switch", store="memory://", reserve_output=0)
    fitter.append([Message("system", "You answer questions about orders.", id="sys")])
    sent_so_far = 1

    def fit(history: list[Message], n: int) -> list[Message]:
        nonlocal sent_so_far
        fitter.append(history[sent_so_far:])
        sent_so_far = len(history)
        return fitter.fit(SMALL if n < 200 else LARGER).messages

    shares = _replay(fit, 400)
    before, after = shares[: 200 - 82], shares[200 - 80 :]
    stable_before = sum(s >= 0.7 for s in before) / len(before)
    stable_after = sum(s >= 0.7 for s in after) / len(after)
    assert stable_before >= 0.9
    assert stable_after >= stable_before - 0.05


def test_stable_through_marks_what_the_next_request_sends_again() -> None:
    fitter = SessionFitter("marks", store="memory://", reserve_output=0)
    fitter.append([Message("system", "You answer questions about orders.", id="sys")])
    fitter.append(_turn(0))
    fitted = fitter.fit(SMALL)
    assert fitted.report.decision == "fits"
    assert fitted.report.stable_through == "a0"  # the whole request, while it fits
    for n in range(1, 150):
        fitter.append(_turn(n))
    fitter.append([Message("user", "And order 7?", id="q")])
    result = fitter.fit(SMALL)
    assert result.report.decision == "compressed"
    through = result.report.stable_through
    ids = [m.id for m in result.messages]
    assert through in ids
    # everything up to the mark is sent again by the next request
    fitter.append([Message("assistant", "Day 0.", id="qa"), Message("user", "Thanks!", id="t")])
    again = [m.id for m in fitter.fit(SMALL).messages]
    assert ids[: ids.index(through) + 1] == again[: ids.index(through) + 1]
