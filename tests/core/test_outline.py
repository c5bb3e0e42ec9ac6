"""The offline summary's outline: decisions, facts, open tasks and files, each item one dated
line under its heading, within the token limit; rolling summaries merge by heading.

The conversations are a coding agent's: the bundled demo session (a real-length one, tool calls
and file paths), a Claude Code session imported from the fixtures, and small ones made here."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from session_migrator import ExtractiveSummarizer, Message, ModelWindow, ToolCall, migrate
from session_migrator._demo import demo_messages
from session_migrator.counting._tokens import TiktokenCounter
from session_migrator.importers import import_claude_code
from session_migrator.summaries._cues import AGREES, ASKS, CLOSES, DONE, FAILED, FAREWELL, cue_bits
from session_migrator.summaries._outline import HEADINGS

COUNTER = TiktokenCounter()
FIXTURES = Path(__file__).resolve().parents[1] / "importers" / "fixtures"
SHOP = "claude_code/-home-dev-shop/5b1c9e2a-7d4f-4c3b-9a8e-1f2d3c4b5a69.jsonl"


def summarize(messages: list[Message], max_tokens: int, previous: str | None = None) -> str:
    return ExtractiveSummarizer().summarize(
        messages, max_tokens=max_tokens, counter=COUNTER, previous=previous
    )


def sections(text: str, *, only: bool = True) -> dict[str, list[str]]:
    """The items of a summary by heading (each heading once); ``only``: nothing else in it."""
    out: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        if line in HEADINGS:
            assert line not in out, f"{line} twice"
            current = line
            out[current] = []
        elif current and line.startswith("- "):
            out[current].append(line)
        else:
            assert not only, line
    return out


def test_a_coding_session_names_its_decisions_facts_open_work_and_files() -> None:
    messages = demo_messages()[1:60]  # the morning of the demo session, cut mid-way
    text = summarize(messages, 1_500)
    assert COUNTER.count_text(text) <= 1_500
    got = sections(text)
    assert list(got) == ["Decisions:", "Facts:", "Open tasks:", "Files:"]
    decisions = "\n".join(got["Decisions:"])
    assert "I never want raw SQL in the service layer" in decisions
    facts = "\n".join(got["Facts:"])
    for fact in ("LEDG-2417", "port 6432", "Friday 4 December, 17:00 CET", "Priya Raman"):
        assert fact in facts
    # asked last and not done yet (the next turns do it)
    assert got["Open tasks:"] == [
        "- user: Next: port the tax_rates table. Keep the tax_rates repository API unchanged."
    ]
    files = got["Files:"]
    assert "- `migrations/versions/2417_07_subscriptions.py`: written" in files
    assert "- `ledgerd/repos/tax_rates.py`: read" in files


def test_an_imported_claude_code_session_lists_the_file_it_edited() -> None:
    session = import_claude_code(FIXTURES / SHOP).session
    got = sections(summarize(list(session.messages), 400))
    # (the imported messages carry the day they were said: each line is dated by it)
    assert "- [Wed 2025-09-03] `/home/dev/shop/src/cart.py`: edited, read" in got["Files:"]
    facts = "\n".join(got["Facts:"])
    assert "FAILED tests/test_cart.py::test_coupon - assert 4995 == 95" in facts
    assert "called Bash" in facts  # a call that names no file is a line of its own
    assert "Open tasks:" not in got  # "Fix it" was done: "Fixed: the coupon amount ..."


def _todo(*entries: tuple[str, str]) -> ToolCall:
    todos = [{"content": c, "status": s, "activeForm": c} for c, s in entries]
    return ToolCall("t", "TodoWrite", json.dumps({"todos": todos}))


def test_the_newest_to_do_list_gives_the_open_tasks() -> None:
    old = _todo(("Port m1", "pending"))
    new = _todo(("Port m1", "completed"), ("Run the billing tests", "in_progress"),
                ("Update the changelog", "pending"))  # fmt: skip
    messages = [
        Message("user", "Port the billing service to Python 3.12."),
        Message("assistant", "", tool_calls=(old,)),
        Message("tool", "Todos have been modified successfully.", tool_call_id="t"),
        Message("assistant", "Module m1 uses datetime.utcnow 3 times.", tool_calls=(new,)),
        Message("tool", "Todos have been modified successfully.", tool_call_id="t"),
    ]
    got = sections(summarize(messages, 300))
    assert got["Open tasks:"] == [
        "- user: Port the billing service to Python 3.12.",
        "- to-do: Run the billing tests (in progress)",
        "- to-do: Update the changelog",
    ]
    assert "TodoWrite" not in "\n".join(got.get("Facts:", []))  # the list is not a call line


def test_items_are_dated_by_the_day_they_were_said() -> None:
    day = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
    messages = [
        Message("user", "Book the Hotel Lumen for 3 nights from 12 March.", timestamp=day),
        Message(
            "assistant", "You want 3 nights at Hotel Lumen from 12 March, correct?", timestamp=day
        ),
        Message("user", "Yes.", timestamp=day),
        Message("assistant", "Booked: confirmation LUM-4471.", timestamp=day),
        Message("user", "My budget is $4,200.", timestamp=day + timedelta(days=2)),
    ]
    got = sections(summarize(messages, 300))
    assert got["Decisions:"] == [
        "- [Sun 2026-11-22] agreed: You want 3 nights at Hotel Lumen from 12 March, correct? (done)"
    ]
    assert got["Facts:"] == [
        "- [Sun 2026-11-22] user: Book the Hotel Lumen for 3 nights from 12 March.",
        "- [Sun 2026-11-22] assistant: Booked: confirmation LUM-4471.",
        "- [Tue 2026-11-24] user: My budget is $4,200.",
    ]
    assert "Open tasks:" not in got  # the booking request was done


def test_a_changed_fact_keeps_its_newest_value_when_only_one_fits() -> None:
    messages = [
        Message("user", "The staging port is 6432."),
        Message("assistant", "Noted."),
        Message("user", "The staging port is 6433."),
    ]
    both = summarize(messages, 200)
    assert both == "Facts:\n- user: The staging port is 6432.\n- user: The staging port is 6433."
    one = next(summarize(messages, n) for n in range(1, 200) if "port" in summarize(messages, n))
    assert one == "Facts:\n- user: The staging port is 6433."


def test_a_rolling_summary_merges_by_heading() -> None:
    def call(path: str, name: str) -> ToolCall:
        return ToolCall("c", name, json.dumps({"file_path": path}))

    first_part = [
        Message("user", "Decision: we rename the columns rather than quoting them."),
        Message("assistant", "", tool_calls=(call("src/a.py", "Read"),)),
        Message("tool", "def a(): ...", tool_call_id="c"),
        Message("user", "Also bump the version in pyproject.toml."),
    ]
    first = summarize(first_part, 200)
    assert sections(first)["Files:"] == ["- `src/a.py`: read", "- `pyproject.toml`: mentioned"]
    assert sections(first)["Open tasks:"] == ["- user: Also bump the version in pyproject.toml."]
    second_part = [
        Message("assistant", "", tool_calls=(call("src/a.py", "Edit"),)),
        Message("tool", "The file src/a.py has been updated.", tool_call_id="c"),
        Message("assistant", "Done: bumped the version to 2.4.1 and renamed a to b."),
    ]
    second = summarize(second_part, 300, previous=first)
    got = sections(second)
    assert list(got) == ["Decisions:", "Facts:", "Files:"]  # each heading once, in order
    assert got["Decisions:"] == sections(first)["Decisions:"]
    assert "Done: bumped the version to 2.4.1" in got["Facts:"][-1]
    assert got["Files:"] == ["- `pyproject.toml`: mentioned", "- `src/a.py`: edited, read"]
    # "Also bump the version" was settled by "Done: ..."
    assert "Open tasks:" not in got


def test_a_previous_summary_of_plain_lines_is_kept_as_facts() -> None:
    previous = "- [user, 3 Mar 2026] My locker code is 4417."
    text = summarize([Message("user", "Decision: we keep the old locker.")], 200, previous)
    assert sections(text) == {
        "Decisions:": ["- user: Decision: we keep the old locker."],
        "Facts:": [previous],
    }


def test_the_summarize_strategy_rolls_the_outline_forward() -> None:
    turns = []
    for k in range(30):
        turns += [
            Message(
                "user", f"Ticket T-{1000 + k}: please fix the flaky test test_{k}.py.", id=f"u{k}"
            ),
            Message("assistant", f"Fixed test_{k}.py: the retry waits 2{k} ms now.", id=f"a{k}"),
        ]
    target = ModelWindow("small", "example", 500, 500, 0, "o200k_base", "explicit")
    first = migrate(turns[:40], target, strategy="summarize", reserve_output=0)
    assert first.summary is not None
    second = migrate(
        turns, target, strategy="summarize", reserve_output=0, previous_summary=first.summary
    )
    assert second.summary is not None
    assert second.report.tokens_after <= 500
    assert second.summary.first_id == first.summary.first_id
    assert second.summary.covered_count > first.summary.covered_count
    before, after = sections(first.summary.text), sections(second.summary.text)
    assert list(after) == list(before) == ["Facts:", "Files:"]  # each heading once
    for heading, lines in before.items():
        assert set(lines) <= set(after[heading])  # the earlier items keep their bonus


@pytest.mark.parametrize(
    ("text", "cues"),
    [
        ("Can you find me a hotel in Paris?", ASKS),
        ("Next: port the tax_rates table.", ASKS),
        ("No, thanks.", CLOSES),
        ("Thanks, that will be all.", CLOSES),
        ("Yes that is correct.", AGREES),
        ("Yes, but make it 8 pm.", 0),
        ("Okay, not now.", CLOSES),
        ("Your reservation has been made.", DONE),
        ("I could not make the appointment.", FAILED),
        ("Have a great day!", FAREWELL),
        ("The table is booked. Enjoy your meal!", DONE | FAREWELL),
        ("I like the sound of that.", 0),
    ],
)
def test_what_a_message_says(text: str, cues: int) -> None:
    assert cue_bits([text]) == [cues]
    # the same in a block of others, and in curly quotes
    assert cue_bits(["Sure.", text.replace("'", "\u2019"), "Hello"])[1] == cues
