"""Property-based tests: the invariants every strategy keeps, over random sessions and targets.

Sessions are valid conversations (system prompts first, turns that open with a user message,
tool-call groups of 1-3 parallel calls answered in any order, content-part lists with images,
names, huge single messages); targets range from 300-token windows to 200k, exact and estimated
tokenizer families, with and without an explicit output reserve.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, assume, event, given, settings
from hypothesis import strategies as st

from session_migrator import BudgetError, ContentPart, Message, ModelWindow, ToolCall
from session_migrator.counting._counter import TokenCounter, counted_exactly
from session_migrator.counting._tokens import counter_for
from session_migrator.fitting._tiers import (
    KEEP_NEWEST_TOOL_OUTPUTS,
    TOOL_OUTPUT_CHARS,
    shrunk_output,
)
from session_migrator.fitting._units import broken_for_good
from session_migrator.messages._rules import chat_rule_violations
from session_migrator.migration._migrate import migrate
from session_migrator.migration._report import MigrationResult
from session_migrator.migration._strategies import get_strategy

STRATEGIES = ("trim", "summarize", "recall", "auto")
TOKENIZERS = ("o200k_base", "cl100k_base", "claude", "gemini", "llama", "mistral-spm", "other")

_VOCABULARY = (
    "the a of to and in is it you that he was for on are with as his they be at one have this "
    "from or had by hot word but what some we can out other were all there when up use your "
    "how said an each she which do their time if will way about many then them write would "
    "like so these her long make thing see him two has look more day could go come did number "
    "sound no most people my over know water than call first who may down side been now find "
    "Paris Alice Bob 2024-05-01 $4,200 config.yaml src/app.py deadline decided prefer never "
    "TODO ERR-42 penguin glacier invoice naïve café 数据 模型 東京 🙂 👍 ß Ω "
    # lone surrogates (JSON can carry them; UTF-8 cannot encode them)
    "\ud83d \udcff "
)
_WORDS = tuple(_VOCABULARY.split())

_IMAGE_URL = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYAAAAAMAASsJTYQAAAAASUVORK5CYII="
)


def _text(seed: int, words: int) -> str:
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(words):
        out.append(rng.choice(_WORDS))
        if i % 13 == 12:
            out.append(rng.choice((".", "!", "?", "\n", ".\n\n")))
    return " ".join(out)


_SIZE_KINDS = ("short",) * 12 + ("medium",) * 5 + ("huge",)


@st.composite
def _sizes(draw: st.DrawFn, huge: bool) -> int:
    """Mostly short messages, some medium, and (when ``huge``) a rare very long one."""
    kind = draw(st.sampled_from(_SIZE_KINDS))
    if kind == "huge" and huge:
        return draw(st.integers(1_500, 8_000))
    if kind == "medium":
        return draw(st.integers(13, 250))
    return draw(st.integers(1, 12))


@st.composite
def texts(draw: st.DrawFn, huge: bool = True) -> str:
    return _text(draw(st.integers(0, 2**31)), draw(_sizes(huge)))


names = st.one_of(st.none(), st.sampled_from(["alice", "bob_2", "analyst"]))


@st.composite
def user_contents(draw: st.DrawFn) -> str | tuple[ContentPart, ...]:
    if draw(st.integers(0, 4)) > 0:
        return draw(texts())
    parts: list[ContentPart] = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            text = draw(texts())
            parts.append(ContentPart("text", text, {"type": "text", "text": text}))
        else:
            detail = draw(st.sampled_from(["low", "high", "auto"]))
            parts.append(
                ContentPart(
                    "image",
                    None,
                    {"type": "image_url", "image_url": {"url": _IMAGE_URL, "detail": detail}},
                )
            )
    return tuple(parts)


@st.composite
def sessions(draw: st.DrawFn, max_turns: int = 10) -> list[Message]:
    """A valid conversation with unique ids."""
    counter = iter(range(10**6))

    def nid(prefix: str) -> str:
        return f"{prefix}{next(counter)}"

    messages: list[Message] = []
    for _ in range(draw(st.integers(0, 2))):
        messages.append(Message("system", draw(texts()), name=draw(names), id=nid("s")))
    for turn in range(draw(st.integers(1, max_turns))):
        messages.append(Message("user", draw(user_contents()), name=draw(names), id=nid("u")))
        for segment in range(draw(st.integers(0, 3))):
            if draw(st.booleans()):
                messages.append(Message("assistant", draw(texts()), id=nid("a")))
                continue
            n_calls = draw(st.integers(1, 3))
            calls = tuple(
                ToolCall(
                    f"call_{turn}_{segment}_{j}",
                    draw(st.sampled_from(["search", "read_file", "get_weather"])),
                    json.dumps({"q": draw(texts())}, ensure_ascii=False),
                )
                for j in range(n_calls)
            )
            content = draw(st.sampled_from(["", "Let me check."]))
            extra = {"openai_null_content": True} if not content and draw(st.booleans()) else {}
            messages.append(
                Message("assistant", content, tool_calls=calls, id=nid("a"), extra=extra)
            )
            for j in draw(st.permutations(range(n_calls))):
                messages.append(
                    Message("tool", draw(texts()), tool_call_id=calls[j].id, id=nid("t"))
                )
    assert chat_rule_violations(messages) == [], "the generator must build valid conversations"
    return messages


@st.composite
def targets(draw: st.DrawFn) -> tuple[ModelWindow, int | None]:
    window = draw(
        st.one_of(st.integers(300, 2_000), st.integers(2_000, 20_000), st.integers(20_000, 200_000))
    )
    max_input = draw(st.one_of(st.just(window), st.integers(max(1, window // 2), window)))
    max_output = draw(st.one_of(st.none(), st.integers(0, window)))
    tokenizer = draw(st.sampled_from(TOKENIZERS))
    reserve = draw(st.one_of(st.none(), st.integers(0, window // 2)))
    target = ModelWindow(
        f"test-{tokenizer}", "test", window, max_input, max_output, tokenizer, "explicit"
    )
    return target, reserve


# -- the checks --------------------------------------------------------------------------------


def _snapshot(messages: Sequence[Message]) -> str:
    return json.dumps([m.to_openai() for m in messages], sort_keys=True, ensure_ascii=False)


def _stable_report(result: MigrationResult) -> dict[str, Any]:
    report = result.report.to_dict()
    report.pop("seconds")
    return report


def _min_budget(messages: Sequence[Message]) -> int:
    """A generous bound under which a BudgetError is a fair answer: priming, every system
    message and one user message at their smallest (overhead, name, a marker)."""
    systems = sum(1 for m in messages if m.role == "system")
    return 3 + 24 + 16 * (systems + 1) + 32


_CUT = re.compile(
    r"\n\[\.\.\. (?:[\d,]+ tokens|[\d,]+ lines \([\d,]+ characters\) of this tool output) cut by "
    r'session-migrator(?:; read it back with read_context\(id="[^"\n]+"\))? \.\.\.\]\n'
)
_OMITTED = re.compile(r"\n\[\d+ non-text part\(s\) omitted\]$")


def _check_cut_inside(cut: Message, original: Message) -> None:
    """A message cut inside keeps the head and the tail of its text around one marker (and,
    where its text has sections, the lines that mark them, in order, between markers), and its
    tool calls (same ids and names) with arguments that are still a JSON object."""
    assert [(c.id, c.name) for c in cut.tool_calls] == [(c.id, c.name) for c in original.tool_calls]
    for call in cut.tool_calls:
        assert isinstance(json.loads(call.arguments), dict)
    text = _OMITTED.sub("", cut.text)
    pieces = _CUT.split(text)
    if len(pieces) >= 2:
        head, *marks, tail = pieces
        assert original.text.startswith(head)
        assert original.text.endswith(tail)
        position = len(head)
        for mark in marks:  # each a whole line of the part cut, in order
            found = original.text.find("\n" + mark + "\n", position)
            assert found >= 0, mark
            position = found + len(mark) + 1
        assert position <= len(original.text) - len(tail)
        if "\n" not in original.text:  # (one line: no section lines, a plain cut)
            assert len(head) >= len(tail), "the head gets the larger share"
    else:
        assert len(pieces) == 1
        assert text == original.text or text in ("", "[...]") or "cut by session-migrator" in text


def _turn_start(messages: Sequence[Message]) -> int:
    """Where the current turn starts: the newest user message (these sessions send no step
    results as user messages)."""
    return max((i for i, m in enumerate(messages) if m.role == "user"), default=len(messages))


def _fits_with_tool_outputs_shrunk(
    messages: Sequence[Message], budget: int, counter: TokenCounter
) -> bool:
    """Whether the conversation fits with every tool output of the turns before the current
    one but the newest three shrunk to its smallest, all of them answering their calls (no
    broken pair, no system prompt cut)."""
    if broken_for_good(messages):
        return False
    start = _turn_start(messages)
    tools = [i for i, m in enumerate(messages) if m.role == "tool"]
    old = {i for i in tools[: max(len(tools) - KEEP_NEWEST_TOOL_OUTPUTS, 0)] if i < start}
    smallest = [
        (shrunk_output(m, TOOL_OUTPUT_CHARS[-1]) or m) if i in old else m
        for i, m in enumerate(messages)
    ]
    return counter.count_messages(smallest) <= budget


def _current_turn_steps(messages: Sequence[Message]) -> set[str]:
    """The ids of the current turn's tool calls and results (those that pair up); none when
    the turn ended with the assistant's answer (a finished turn is history)."""
    last = messages[-1] if messages else None
    if last is not None and last.role == "assistant" and not last.tool_calls:
        return set()
    broken = set(broken_for_good(messages))
    return {
        m.id
        for i, m in enumerate(messages)
        if i > _turn_start(messages) and i not in broken and (m.tool_calls or m.role == "tool")
    }


def check_turn_steps_kept(messages: Sequence[Message], sent: Sequence[Message]) -> None:
    """Issue 32's property: no call or result of the current turn vanishes from what the model
    is sent. Each is there whole or shrunk (its id, its calls' ids and names)."""
    by_id = {m.id: m for m in sent}
    for mid in _current_turn_steps(messages):
        assert mid in by_id, f"a step of the current turn ({mid}) vanished"
        original = next(m for m in messages if m.id == mid)
        kept = by_id[mid]
        assert [(c.id, c.name) for c in kept.tool_calls] == [
            (c.id, c.name) for c in original.tool_calls
        ]
        assert kept.tool_call_id == original.tool_call_id


def check_turn_error(
    error: BudgetError, messages: list[Message], strategy: str, counter: TokenCounter
) -> None:
    """A BudgetError for the current turn is honest: at the budget it names, the fit holds the
    whole turn."""
    assert "current turn" in str(error), str(error)
    result = get_strategy(strategy).compress(messages, error.needed, counter)
    assert counter.count_messages(result.messages) <= error.needed
    check_turn_steps_kept(messages, result.messages)


def check_invariants(
    messages: list[Message], target: ModelWindow, reserve: int | None, strategy: str
) -> MigrationResult | None:
    counter = counter_for(target.tokenizer, model=target.name)
    before = _snapshot(messages)
    frozen = copy.deepcopy(messages)
    error: BudgetError | None = None
    try:
        result = migrate(messages, target, strategy=strategy, reserve_output=reserve)
    except BudgetError as exc:
        error = exc
    event("budget error" if error is not None else f"decision: {result.report.decision}")
    if error is not None:
        assert error.needed > error.budget
        assert "choose a larger model" in str(error).lower()
        assert _snapshot(messages) == before
        if error.budget >= _min_budget(messages):
            check_turn_error(error, messages, strategy, counter)
            event("budget error: the current turn")
        return None
    report = result.report
    assert report.counter == counter.name
    assert report.exact == counted_exactly(counter, messages)  # an image's cost is estimated

    # never over the budget, counted by the same counter
    total = counter.count_messages(result.messages)
    assert total <= report.budget, f"{total} tokens for a budget of {report.budget}"
    assert report.tokens_after == total
    assert report.messages_after == len(result.messages)

    # the input is never mutated
    assert _snapshot(messages) == before
    assert messages == frozen

    # valid for the chat APIs; system messages kept, first, in order
    assert chat_rule_violations(result.messages) == []
    input_ids = [m.id for m in messages]
    by_id = {m.id: m for m in messages}
    system_ids = [m.id for m in messages if m.role == "system"]
    assert [m.id for m in result.messages[: len(system_ids)]] == system_ids

    # the newest user message is always there (cut inside when it is larger than the budget),
    # and so is every call and result of the current turn
    newest_user = next(m.id for m in reversed(messages) if m.role == "user")
    assert newest_user in {m.id for m in result.messages}
    check_turn_steps_kept(messages, result.messages)

    if report.decision == "fits":
        assert report.tokens_before <= report.budget
        assert all(a is b for a, b in zip(result.messages, messages, strict=True))
        assert report.dropped_ids == report.summarized_ids == report.recalled_ids == []
        assert report.truncated_ids == []
    else:
        assert report.tokens_before > report.budget

    # every input message accounted for exactly once
    out_ids = [m.id for m in result.messages]
    assert len(out_ids) == len(set(out_ids)), "a message appears twice"
    kept = [i for i in out_ids if i in by_id]
    library = [m for m in result.messages if m.id not in by_id]
    for m in library:
        assert m.marker is not None
        assert m.marker.get("kind") in ("summary", "trim_note")
        assert m.role == "system"
    assert len(library) <= 1
    recalled = set(report.recalled_ids)
    assert recalled <= set(kept)
    buckets = [set(kept) - recalled, set(report.dropped_ids), set(report.summarized_ids), recalled]
    for ids in (report.dropped_ids, report.summarized_ids, report.recalled_ids):
        assert len(ids) == len(set(ids)), "an id is reported twice"
    for mid in input_ids:
        hits = sum(mid in bucket for bucket in buckets)
        assert hits == 1, f"message {mid} is accounted for {hits} times"
    assert set().union(*buckets) == set(input_ids)
    if report.summarized_ids:
        assert report.summary is not None
        assert any(m.marker and m.marker.get("kind") == "summary" for m in library)

    # what was cut inside is marked and reported; nothing else changed
    truncated = set(report.truncated_ids)
    assert truncated <= set(kept)
    for m in result.messages:
        original = by_id.get(m.id)
        if original is None:
            continue
        if m.id in truncated:
            assert m.marker is not None
            assert m.marker.get("kind") == "truncated"
            assert counter.count_message(m) < counter.count_message(original)
            _check_cut_inside(m, original)
        else:
            assert m == original

    # the tiers: while the conversation with its old tool outputs at their smallest would fit,
    # no user turn is left out (tool outputs shrink first)
    if report.decision != "fits" and _fits_with_tool_outputs_shrunk(
        messages, report.budget, counter
    ):
        users = [m.id for m in messages if m.role == "user"]
        assert set(users) <= set(kept), "a user turn was left out before the tool outputs shrank"
        event("tool outputs shrunk, every turn kept")

    # kept messages are in their original order
    positions = [input_ids.index(i) for i in kept]
    assert positions == sorted(positions)

    if truncated:
        event("cut inside a message")
    if report.summarized_ids:
        event("summarized")
    if report.recalled_ids:
        event("recalled")

    # the report is JSON-serialisable
    json.dumps(report.to_dict())

    # the same input gives the same output
    again = migrate(messages, target, strategy=strategy, reserve_output=reserve)
    assert again.messages == result.messages
    assert _stable_report(again) == _stable_report(result)
    return result


@pytest.mark.parametrize("strategy", STRATEGIES)
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
)
@given(session=sessions(), target=targets())
def test_invariants_hold(
    strategy: str, session: list[Message], target: tuple[ModelWindow, int | None]
) -> None:
    window, reserve = target
    check_invariants(session, window, reserve, strategy)


@pytest.mark.parametrize("strategy", STRATEGIES)
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
)
@given(session=sessions(max_turns=30), window=st.integers(300, 3_000), data=st.data())
def test_invariants_hold_under_pressure(
    strategy: str, session: list[Message], window: int, data: st.DataObject
) -> None:
    """Long sessions into small windows: compression on nearly every example."""
    tokenizer = data.draw(st.sampled_from(TOKENIZERS))
    target = ModelWindow("tight", "test", window, window, window // 4, tokenizer, "explicit")
    result = check_invariants(session, target, None, strategy)
    assume(result is not None)


@pytest.mark.parametrize("strategy", STRATEGIES)
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
)
@given(session=sessions(max_turns=6), budget=st.integers(0, 600), data=st.data())
def test_any_budget_gives_a_valid_result_or_a_budget_error(
    strategy: str, session: list[Message], budget: int, data: st.DataObject
) -> None:
    """The lower edge: budgets from nothing to a few hundred tokens, straight into compress."""
    counter = counter_for(data.draw(st.sampled_from(TOKENIZERS)))
    before = _snapshot(session)
    error: BudgetError | None = None
    try:
        result = get_strategy(strategy).compress(session, budget, counter)
    except BudgetError as exc:
        error = exc
    assert _snapshot(session) == before
    if error is not None:
        event("budget error")
        assert error.budget == budget
        assert error.needed > budget
        if budget >= _min_budget(session):
            check_turn_error(error, session, strategy, counter)
        return
    check_turn_steps_kept(session, result.messages)
    assert counter.count_messages(result.messages) <= budget
    assert chat_rule_violations(result.messages) == []
    ids = [m.id for m in result.messages]
    system_ids = [m.id for m in session if m.role == "system"]
    assert ids[: len(system_ids)] == system_ids
    assert next(m.id for m in reversed(session) if m.role == "user") in ids
    accounted = set(ids) | set(result.dropped_ids) | set(result.summarized_ids)
    assert {m.id for m in session} <= accounted
