"""The core in a few lines: fit an OpenAI-format conversation to smaller models, offline.

python examples/quickstart.py
"""

from __future__ import annotations

from session_migrator import Message, ToolCall, migrate, plan


def conversation() -> list[Message]:
    messages = [
        Message("system", "You are a travel assistant."),
        Message("user", "I'm Ana. I'm vegetarian and my budget is 1,800 EUR for Lisbon in May."),
        Message("assistant", "Noted: vegetarian, 1,800 EUR, Lisbon in May."),
    ]
    for day in range(1, 31):
        call = ToolCall(f"call-{day}", "search_hotels", f'{{"city": "Lisbon", "day": {day}}}')
        messages += [
            Message("user", f"What about day {day}? " + "Tell me about the neighbourhoods. " * 20),
            Message("assistant", "", tool_calls=(call,)),
            Message(
                "tool", "Hotel list: " + "Alfama, Baixa, Chiado, Belém. " * 80, tool_call_id=call.id
            ),
            Message("assistant", f"Day {day}: a walk through Alfama and dinner in Chiado. " * 10),
        ]
    messages.append(Message("user", "Remind me: what was my budget and my diet?"))
    return messages


def main() -> None:
    messages = conversation()
    for model in ("gpt-4o", "gpt-4", "claude-3-haiku-20240307"):
        p = plan(messages, model)
        result = migrate(messages, model, strategy="auto")
        report = result.report
        print(
            f"{model:24} {p.tokens:>7,} tokens ({'exact' if p.exact else 'estimated'}), budget "
            f"{p.budget.tokens:>7,}: {report.decision:10} -> {report.tokens_after:>6,} tokens, "
            f"{report.messages_after} of {report.messages_before} messages"
            f" ({len(report.summarized_ids)} summarized, {len(report.recalled_ids)} recalled)"
        )
    small = migrate(messages, "gpt-4", strategy="auto").messages
    kept = "\n".join(m.text for m in small)
    print("budget and diet still known on gpt-4:", "1,800 EUR" in kept and "vegetarian" in kept)


if __name__ == "__main__":
    main()
