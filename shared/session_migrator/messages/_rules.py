"""What the OpenAI, Anthropic and Gemini chat APIs accept, as one checker.

The rules every compressed conversation satisfies:

1. system messages come first (Anthropic and Gemini take the system prompt apart from the turns);
2. the first message after them is a user message (Anthropic and Gemini reject a conversation
   that opens with the model's turn);
3. every tool result directly follows the assistant message that called it, in the block of tool
   messages after it, and answers one of its calls (no orphan result: OpenAI rejects it);
4. every tool call has its result before the next non-tool message (no call left unanswered:
   OpenAI and Anthropic reject it);
5. a call id is answered once;
6. a user or system message has content (Anthropic and Gemini reject empty turns);
7. the conversation is not empty.
"""

from __future__ import annotations

from collections.abc import Sequence

from session_migrator.messages._messages import Message

__all__ = ["chat_rule_violations", "is_valid_chat"]


def _has_content(message: Message) -> bool:
    if isinstance(message.content, str):
        return bool(message.content.strip())
    return bool(message.content)


def chat_rule_violations(messages: Sequence[Message]) -> list[str]:
    """Every rule the conversation breaks, as sentences naming the message index (empty: valid)."""
    problems: list[str] = []
    if not messages:
        return ["the conversation is empty"]
    i = 0
    while i < len(messages) and messages[i].role == "system":
        if not _has_content(messages[i]):
            problems.append(f"message {i}: system message has no content")
        i += 1
    if i < len(messages) and messages[i].role != "user":
        problems.append(
            f"message {i}: the first message after the system prompt is "
            f"{messages[i].role!r}, not 'user'"
        )
    pending: dict[str, int] = {}
    answered: set[str] = set()
    for j in range(i, len(messages)):
        m = messages[j]
        if m.role == "system":
            problems.append(f"message {j}: system message after the conversation started")
            if not _has_content(m):
                problems.append(f"message {j}: system message has no content")
        if m.role == "tool":
            call_id = m.tool_call_id or ""
            if call_id not in pending:
                why = "answered twice" if call_id in answered else "no preceding call"
                problems.append(f"message {j}: tool result for {call_id!r} has {why}")
            else:
                del pending[call_id]
                answered.add(call_id)
            continue
        if pending:
            problems.append(
                f"message {j}: tool call(s) {sorted(pending)} from message "
                f"{min(pending.values())} have no result before this message"
            )
            pending.clear()
        if m.role == "user" and not _has_content(m):
            problems.append(f"message {j}: user message has no content")
        for call in m.tool_calls:
            pending[call.id] = j
    if pending:
        problems.append(
            f"tool call(s) {sorted(pending)} from message {min(pending.values())} have no result"
        )
    return problems


def is_valid_chat(messages: Sequence[Message]) -> bool:
    """Whether the conversation satisfies every rule in this module's docstring."""
    return not chat_rule_violations(messages)
