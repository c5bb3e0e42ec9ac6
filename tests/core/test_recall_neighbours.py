"""Recall's neighbour turns when messages carry no time: turns next to each other are taken as
one conversation (tracker issue 33: the turn that names a person, place or event comes back with
the turn that answers about it)."""

from __future__ import annotations

from session_migrator import Message, ModelWindow, counter_for, migrate

COUNTER = counter_for("o200k_base")


def _window(budget: int) -> ModelWindow:
    return ModelWindow("t", "test", budget, budget, 0, "o200k_base", "explicit")


def _chat(rounds: int) -> list[Message]:
    """Small talk, with one exchange naming a place and the next giving its phone number
    in words the question does not use."""
    out = [Message("system", "You are a helpful assistant.", id="s")]
    for k in range(rounds):
        if k == 5:
            out += [
                Message("user", "Remind me, which restaurant is the Sino by the harbour?", id="p"),
                Message("assistant", "Sino is the Cantonese place on Pier Road.", id="pa"),
                Message("user", "And how do I reach them?", id="n"),
                Message("assistant", "Call 0161 555 0199 before six.", id="na"),
            ]
            continue
        out += [
            Message("user", f"Tell me something nice about day {k} of the trip.", id=f"u{k}"),
            Message("assistant", f"On day {k} the weather was mild and the walk was long.",
                    id=f"a{k}"),
        ]  # fmt: skip
    return out


def test_plain_messages_bring_their_neighbour_turn() -> None:
    # no message carries a time: turns next to each other are taken as one conversation, so
    # the turn after the one naming the restaurant (its number) comes back with it
    history = _chat(40)
    question = Message("user", "What is the phone number of the Sino restaurant?", id="q")
    budget = COUNTER.count_messages([*history, question]) // 3
    result = migrate([*history, question], _window(budget), strategy="recall", reserve_output=0)
    sent = {m.id for m in result.messages}
    assert {"p", "pa"} <= sent
    assert {"n", "na"} <= sent  # its neighbour: names neither "Sino" nor "restaurant"
    assert "n" in result.report.recalled_ids
