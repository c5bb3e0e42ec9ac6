"""Agent sessions, where most tokens are tool outputs: is the budget used, and is every user turn
kept verbatim before any is summarized?

Two sessions: the demo conversation bundled with the package (a coding agent's session: 41 user
turns, 178 messages, 97% of its tokens in tool outputs) and the synthetic agent conversation of
the speed benchmark (``benchmarks._conversation``, 1,000 messages). Each is fitted by every
strategy to budgets of 95%, 70%, 50%, 25% and 10% of its tokens (o200k, exact, nothing
reserved). Reported per strategy and budget: the share of the budget used, the user turns sent
verbatim, and the messages summarized or dropped. A budget is *used* when at least 95% of it
is; the user turns *come first* when no user turn is left out while a tool output could still
shrink (that is: every user turn is kept, or every old tool output is shrunk to its smallest).

    python -m benchmarks.agent_session [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib.resources import files
from typing import Any

from benchmarks._conversation import conversation
from session_migrator import Message, ModelWindow, counter_for, messages_from_openai, migrate
from session_migrator.fitting._tiers import TOOL_OUTPUT_CHARS, shrunk_output

STRATEGIES = ("trim", "summarize", "recall", "auto")
SHARES = (0.95, 0.70, 0.50, 0.25, 0.10)


def demo() -> list[Message]:
    raw = json.loads(
        (files("session_migrator") / "_data" / "demo_conversation.json").read_text("utf-8")
    )
    return messages_from_openai(raw["messages"] if isinstance(raw, dict) else raw)


def _users_first(messages: Sequence[Message], sent: Sequence[Message], counter: Any) -> bool:
    """Every user turn is sent verbatim, or else the newest turn left out costs more than
    shrinking every old tool output sent (all but the newest three) to its smallest would
    have freed: a user turn went only when tool outputs could not make room for it."""
    kept = {m.id: m for m in sent}
    missing = [k for k, m in enumerate(messages) if m.role == "user" and kept.get(m.id) != m]
    if not missing:
        return True
    start = missing[-1]
    stop = next((k for k in range(start + 1, len(messages)) if messages[k].role == "user"), None)
    turn = counter.count_messages(messages[start:stop]) - counter.count_messages([])
    freed = 0
    for m in [m for m in messages if m.role == "tool"][:-3]:
        out = kept.get(m.id)
        if out is not None:
            least = shrunk_output(m, TOOL_OUTPUT_CHARS[-1]) or m
            freed += max(counter.count_message(out) - counter.count_message(least), 0)
    return freed < turn


def run() -> dict[str, Any]:
    counter = counter_for("o200k_base")
    sessions = {
        "demo (coding agent)": demo(),
        "synthetic agent, 1,000 messages": conversation(1000),
    }
    rows: list[dict[str, Any]] = []
    for label, messages in sessions.items():
        total = counter.count_messages(messages)
        tool = sum(counter.count_message(m) for m in messages if m.role == "tool")
        users = [m for m in messages if m.role == "user"]
        for share in SHARES:
            budget = int(total * share)
            window = ModelWindow("bench", "bench", budget, budget, 0, "o200k_base", "explicit")
            for strategy in STRATEGIES:
                result = migrate(messages, window, strategy=strategy, reserve_output=0)
                sent = {m.id: m for m in result.messages}
                verbatim = sum(1 for u in users if sent.get(u.id) == u)
                rows.append(
                    {
                        "session": label,
                        "tokens": total,
                        "tool_share": round(tool / total, 3),
                        "users": len(users),
                        "share": share,
                        "strategy": strategy,
                        "used": round(result.report.tokens_after / budget, 4),
                        "users_verbatim": verbatim,
                        "summarized": len(result.report.summarized_ids),
                        "dropped": len(result.report.dropped_ids),
                        "cut_inside": len(result.report.truncated_ids),
                        "users_first": _users_first(messages, result.messages, counter),
                    }
                )
    return {"rows": rows}


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| session (tool share) | budget | strategy | budget used | user turns verbatim | "
        "summarized | dropped | cut inside | user turns first |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['session']} ({r['tool_share']:.0%}) | {r['share']:.0%} | {r['strategy']} | "
            f"{r['used']:.1%} | "
            f"{r['users_verbatim']}/{r['users']} | {r['summarized']} | {r['dropped']} | "
            f"{r['cut_inside']} | {'yes' if r['users_first'] else 'NO'} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run()
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
