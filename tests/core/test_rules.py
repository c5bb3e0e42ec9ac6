"""The chat rules checker: what the OpenAI, Anthropic and Gemini chat APIs accept."""

from __future__ import annotations

import pytest

from session_migrator import ContentPart, Message, ToolCall
from session_migrator.messages._rules import chat_rule_violations, is_valid_chat


def sys(text: str = "Be brief.") -> Message:
    return Message("system", text)


def user(text: str = "Hi") -> Message:
    return Message("user", text)


def bot(text: str = "Hello", *calls: str) -> Message:
    return Message("assistant", text, tool_calls=tuple(ToolCall(c, "search", "{}") for c in calls))


def result(call_id: str, text: str = "42") -> Message:
    return Message("tool", text, tool_call_id=call_id)


VALID = {
    "one user message": [user()],
    "system then user": [sys(), user()],
    "several system messages": [sys(), sys("Use metric units."), user()],
    "a plain exchange": [sys(), user(), bot(), user("and?"), bot("so.")],
    "ends with an assistant": [user(), bot()],
    "a tool call answered": [user(), bot("", "c1"), result("c1"), bot("It is 42.")],
    "parallel calls answered out of order": [
        user(),
        bot("", "c1", "c2", "c3"),
        result("c3"),
        result("c1"),
        result("c2"),
        bot("Done."),
    ],
    "back-to-back tool groups": [
        user(),
        bot("", "c1"),
        result("c1"),
        bot("", "c2"),
        result("c2"),
        user("thanks"),
    ],
    "a tool group at the very end": [user(), bot("", "c1"), result("c1")],
    "an image-only user message": [
        Message("user", (ContentPart("image", None, {"type": "image_url"}),)),
        bot(),
    ],
    "an assistant with empty content": [user(), Message("assistant", ""), user("?")],
    "consecutive user messages": [user(), user("again")],
}


@pytest.mark.parametrize("messages", list(VALID.values()), ids=list(VALID))
def test_valid_conversations_have_no_violations(messages: list[Message]) -> None:
    assert chat_rule_violations(messages) == []
    assert is_valid_chat(messages)


INVALID = {
    "empty": ([], "the conversation is empty"),
    "opens with the assistant": ([bot(), user()], "message 0: the first message after the system"),
    "opens with the assistant after system": (
        [sys(), bot(), user()],
        "message 1: the first message after the system prompt is 'assistant'",
    ),
    "opens with a tool result": ([result("c1"), user()], "message 0: the first message after"),
    "system message after the start": (
        [user(), sys()],
        "message 1: system message after the conversation started",
    ),
    "empty system message": ([Message("system", "  "), user()], "message 0: system message has no"),
    "empty user message": (
        [user(), bot(), Message("user", "\n")],
        "message 2: user message has no",
    ),
    "user message with no parts": ([Message("user", ())], "message 0: user message has no content"),
    "orphan tool result": ([user(), bot(), result("c9")], "message 2: tool result for 'c9' has no"),
    "tool result after an intervening user message": (
        [user(), bot("", "c1"), user("wait"), result("c1")],
        "message 2: tool call(s) ['c1'] from message 1 have no result before this message",
    ),
    "a call answered twice": (
        [user(), bot("", "c1"), result("c1"), result("c1")],
        "message 3: tool result for 'c1' has answered twice",
    ),
    "unanswered call at the end": (
        [user(), bot("", "c1", "c2"), result("c2")],
        "tool call(s) ['c1'] from message 1 have no result",
    ),
    "unanswered call before the next turn": (
        [user(), bot("", "c1"), bot("never mind"), user()],
        "message 2: tool call(s) ['c1'] from message 1 have no result before this message",
    ),
}


@pytest.mark.parametrize(("messages", "expected"), list(INVALID.values()), ids=list(INVALID))
def test_each_broken_rule_is_named_with_its_index(messages: list[Message], expected: str) -> None:
    problems = chat_rule_violations(messages)
    assert any(p.startswith(expected) for p in problems), problems
    assert not is_valid_chat(messages)


def test_every_problem_is_reported_not_just_the_first() -> None:
    messages = [sys(), bot(), Message("user", ""), result("zz"), sys("late")]
    problems = chat_rule_violations(messages)
    assert len(problems) == 4, problems
    assert problems[0].startswith("message 1:")
    assert any("message 2: user message has no content" in p for p in problems)
    assert any("message 3: tool result for 'zz'" in p for p in problems)
    assert any("message 4: system message after" in p for p in problems)


def test_a_library_note_between_the_system_prompt_and_the_turns_is_valid() -> None:
    # the strategies put their note (a system message) right after the system prompt
    note = Message("system", "[session-migrator: 3 earlier messages left out.]")
    assert chat_rule_violations([sys(), note, user(), bot()]) == []
