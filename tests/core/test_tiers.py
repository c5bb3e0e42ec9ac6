"""The tiers of compression: old tool outputs shrink before any turn is dropped, parallel tool
results that exceed the room are each cut in proportion, and the budget is used."""

from __future__ import annotations

import json
import re
from importlib.resources import files

import pytest

from session_migrator import (
    ContentPart,
    Message,
    ModelWindow,
    ToolCall,
    counter_for,
    messages_from_openai,
)
from session_migrator.fitting._tiers import shrunk_output
from session_migrator.migration._migrate import migrate

COUNTER = counter_for("o200k_base")
STRATEGIES = ("trim", "summarize", "recall", "auto")
_TOOL_MARKER = re.compile(
    r"\[\.\.\. [\d,]+ lines \([\d,]+ characters\) of this tool output cut by session-migrator; "
    r'read it back with read_context\(id="[^"\n]+"\) \.\.\.\]'
)

_CUT = re.compile(
    r"\n\[\.\.\. [\d,]+ tokens (?:of this tool output )?cut by session-migrator"
    r'(?:; read it back with read_context\(id="[^"\n]+"\))? \.\.\.\]\n'
)


def _window(budget: int) -> ModelWindow:
    return ModelWindow("t", "test", budget, budget, 0, "o200k_base", "explicit")


def _log(i: int, lines: int) -> str:
    return "\n".join(f"{i}:{k} GET /api/item/{k * 7} 200 {k * 13 % 997}ms ok" for k in range(lines))


def _agent_session(turns: int = 12, lines: int = 300) -> list[Message]:
    out = [Message("system", "You are a coding agent.", id="s")]
    for i in range(turns):
        out.append(Message("user", f"Step {i}: check the logs of service {i}.", id=f"u{i}"))
        call = ToolCall(f"c{i}", "read_log", json.dumps({"service": i}))
        out.append(Message("assistant", "", tool_calls=(call,), id=f"a{i}"))
        out.append(Message("tool", _log(i, lines), tool_call_id=f"c{i}", id=f"t{i}"))
        out.append(Message("assistant", f"Service {i} looks fine.", id=f"r{i}"))
    return out


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_old_tool_outputs_shrink_before_any_turn_is_dropped(strategy: str) -> None:
    messages = _agent_session()
    total = COUNTER.count_messages(messages)
    result = migrate(messages, _window(total // 3), strategy=strategy, reserve_output=0)
    sent = {m.id: m for m in result.messages}
    originals = {m.id: m for m in messages}
    # every user and assistant message is there verbatim; only tool outputs were cut
    for m in messages:
        if m.role != "tool":
            assert sent[m.id] == m
    assert result.report.dropped_ids == result.report.summarized_ids == []
    shrunk = [sent[f"t{i}"] for i in range(12) if sent[f"t{i}"] != originals[f"t{i}"]]
    assert shrunk, "some old tool output was shrunk"
    for m in shrunk:
        assert m.id in result.report.truncated_ids
        if m.marker and m.marker.get("tier") == "tool_output":
            assert _TOOL_MARKER.search(m.text)
            head, tail = _TOOL_MARKER.split(m.text)
            assert originals[m.id].text.startswith(head.rstrip("\n"))
            assert originals[m.id].text.endswith(tail.lstrip("\n"))
    # the newest tool outputs are whole, and the budget is used
    assert all(sent[f"t{i}"] == originals[f"t{i}"] for i in (9, 10, 11))
    assert result.report.tokens_after >= 0.95 * result.report.budget


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_session_a_few_percent_over_loses_a_few_percent(strategy: str) -> None:
    messages = _agent_session()
    total = COUNTER.count_messages(messages)
    result = migrate(messages, _window(int(total * 0.94)), strategy=strategy, reserve_output=0)
    assert result.report.decision != "fits"
    assert result.report.tokens_after >= 0.99 * result.report.budget
    assert len(result.report.truncated_ids) <= 2  # a few old outputs, nothing dropped
    assert result.report.dropped_ids == result.report.summarized_ids == []


def _demo() -> list[Message]:
    raw = json.loads(
        (files("session_migrator") / "_data" / "demo_conversation.json").read_text("utf-8")
    )
    return messages_from_openai(raw["messages"] if isinstance(raw, dict) else raw)


@pytest.mark.parametrize("share", [0.9, 0.5, 0.1])
def test_the_demo_agent_session_uses_the_budget_and_keeps_every_user_turn(share: float) -> None:
    messages = _demo()
    budget = int(COUNTER.count_messages(messages) * share)
    users = [m for m in messages if m.role == "user"]
    for strategy in STRATEGIES:
        result = migrate(messages, _window(budget), strategy=strategy, reserve_output=0)
        assert result.report.tokens_after >= 0.95 * budget, strategy
        assert all(u in result.messages for u in users), strategy


def test_parallel_tool_results_over_the_room_are_each_cut_in_proportion() -> None:
    calls = tuple(ToolCall(f"p{k}", "read_file", "{}") for k in range(3))
    sizes = (1200, 600, 200)  # lines
    messages = [
        Message("user", "Read the three files.", id="u"),
        Message("assistant", "", tool_calls=calls, id="a"),
        *(
            Message("tool", _log(k, n), tool_call_id=f"p{k}", id=f"t{k}")
            for k, n in enumerate(sizes)
        ),
    ]
    before = [COUNTER.count_message(m) for m in messages[2:]]
    result = migrate(messages, _window(sum(before) // 4), strategy="trim", reserve_output=0)
    assert COUNTER.count_messages(result.messages) <= result.report.budget
    cut = [m for m in result.messages if m.role == "tool"]
    assert [m.id for m in cut] == ["t0", "t1", "t2"]
    after = [COUNTER.count_message(m) for m in cut]
    for m, original in zip(cut, messages[2:], strict=True):
        assert m.id in result.report.truncated_ids
        head, tail = _CUT.split(m.text)
        assert head, "the head kept before the marker"
        assert tail, "the tail kept after the marker"
        assert original.text.startswith(head)
        assert original.text.endswith(tail)
    # in proportion: each keeps about the same share of what it was
    shares = [a / b for a, b in zip(after, before, strict=True)]
    assert max(shares) < 1.5 * min(shares), shares
    assert sum(after) >= 0.9 * (result.report.budget - 40)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_tool_outputs_in_text_blocks_shrink_as_strings_do(strategy: str) -> None:
    """A tool result given as content blocks (as MCP tools return it) shrinks like a string:
    its turns are kept, only its text is cut; an image in a result keeps it whole."""
    plain = _agent_session()
    blocks = [
        m.replace(content=tuple(ContentPart("text", line) for line in m.text.split("\n", 1)))
        if m.role == "tool"
        else m
        for m in plain
    ]
    total = COUNTER.count_messages(blocks)
    result = migrate(blocks, _window(total // 3), strategy=strategy, reserve_output=0)
    assert result.report.dropped_ids == result.report.summarized_ids == []
    shrunk = [m for m in result.messages if m.role == "tool" and m.marker]
    assert shrunk
    assert all(_TOOL_MARKER.search(m.text) or _CUT.search(m.text) for m in shrunk)
    assert result.report.tokens_after <= total // 3
    image = ContentPart("image", data={"type": "image_url", "image_url": {"url": "x"}})
    tool = blocks[3].replace(content=(*blocks[3].content, image))
    assert shrunk_output(tool, 400) is None
