"""Room where the evidence is (issue 33, point 4): under ``auto`` the offline summary yields
its share to the cut turns recall finds for the question, keeps it when recall finds none, and
a summarizer the user configures keeps its share whatever the question."""

from __future__ import annotations

from collections.abc import Sequence

from session_migrator import Message, ModelWindow, TokenCounter, counter_for, migrate
from session_migrator.migration._strategies import AutoStrategy

PETS = ["stoat", "otter", "heron", "lynx"]


def _history() -> list[Message]:
    """Forty turns, each on one animal's care, in the words of a keeper's log."""
    out = [Message("system", "You keep the zoo's notes.", id="s")]
    for k in range(40):
        pet = PETS[k % len(PETS)]
        out += [
            Message(
                "user", f"Log day {k}: the {pet} ate well and slept in the east pen.", id=f"u{k}"
            ),
            Message(
                "assistant",
                f"Logged day {k}: the {pet} is fed; its pen was cleaned and the water changed. "
                "The keepers will check the fences, the heating and the feeding rota tomorrow.",
                id=f"a{k}",
            ),
        ]
    return out


def _fit(question: str, strategy: AutoStrategy) -> tuple[list[Message], int, TokenCounter]:
    messages = [*_history(), Message("user", question, id="q")]
    counter = counter_for("o200k_base")
    budget = counter.count_messages(messages) // 3
    window = ModelWindow("t", "test", budget, budget, 0, "o200k_base", "explicit")
    result = migrate(messages, window, strategy=strategy, reserve_output=0)
    assert result.report.tokens_after <= budget
    return result.messages, budget, counter


def _lead(sent: Sequence[Message]) -> Message:
    lead = sent[1]
    assert lead.role == "system"
    assert lead.marker is not None
    return lead


def _holding(sent: Sequence[Message]) -> list[str]:
    """The ids of the sent turns (before the newest ten) that speak of the stoat."""
    return [m.id for m in sent if m.id[:1] in "ua" and "stoat" in m.text and int(m.id[1:]) < 30]


def _kept_share() -> AutoStrategy:
    """``auto`` as it was: its offline summary keeps its share whatever the question."""
    strategy = AutoStrategy()
    strategy._engine.summary_yields = False
    return strategy


def test_the_offline_summary_gives_its_room_to_the_turns_recall_finds() -> None:
    question = "The stoat's feeding log, please."
    sent, _budget, counter = _fit(question, AutoStrategy())
    kept, _, _ = _fit(question, _kept_share())
    assert len(_holding(sent)) > len(_holding(kept)) > 0
    assert counter.count_message(_lead(sent)) < counter.count_message(_lead(kept))


def test_a_question_recall_finds_nothing_for_leaves_the_summary_its_share() -> None:
    sent, budget, counter = _fit("Quokka?", AutoStrategy())
    kept, _, _ = _fit("Quokka?", _kept_share())
    assert sent == kept
    lead = _lead(sent)
    assert "summary" in lead.text
    assert counter.count_message(lead) > 0.1 * budget


class _Notes:
    """A summarizer of one's own: it writes as much as it is given."""

    name = "notes"

    def __init__(self) -> None:
        self.given: list[int] = []

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str:
        self.given.append(max_tokens)
        return "notes " * max(1, max_tokens // 2)


def test_a_configured_summarizer_keeps_its_share() -> None:
    notes = _Notes()
    sent, budget, counter = _fit("The stoat's feeding log, please.", AutoStrategy(notes))
    assert notes.given
    assert notes.given[-1] >= 0.19 * budget
    assert counter.count_message(_lead(sent)) > 0.1 * budget


def test_for_a_question_about_the_past_auto_sends_what_recall_sends_and_a_summary() -> None:
    messages = [*_history(), Message("user", "What did the stoat eat before?", id="q")]
    counter = counter_for("o200k_base")
    budget = counter.count_messages(messages) // 3
    window = ModelWindow("t", "test", budget, budget, 0, "o200k_base", "explicit")
    auto = migrate(messages, window, strategy="auto", reserve_output=0)
    recall = migrate(messages, window, strategy="recall", reserve_output=0)
    assert auto.report.recalled_ids == recall.report.recalled_ids != []
    turns = [m.id for m in auto.messages if m.role != "system"]
    assert turns == [m.id for m in recall.messages if m.role != "system"]
    assert auto.report.summarized_ids  # (the lead is a summary of the rest, not a note)
