"""The demo: a real long agent conversation migrated down a chain of models, with a report.

The bundled conversation (178 messages, about 120,000 o200k tokens, tool calls and large tool
outputs) is stored in the session store, then fitted to each model of the chain with each
strategy. The report shows tokens before and after, the budget, what was kept, dropped,
summarized and recalled, and which of the facts the last question needs survived.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import TextIO

from session_migrator.messages._messages import Message, messages_from_openai
from session_migrator.migration._migrate import migrate, resolve_target
from session_migrator.migration._report import MigrationResult

__all__ = ["DEMO_CHAIN", "DEMO_FACTS", "demo_messages", "run_demo"]

DEMO_CHAIN = ("gpt-4.1", "gpt-4o", "claude-3-haiku-20240307", "gpt-3.5-turbo", "gpt-4")
DEMO_STRATEGIES = ("trim", "summarize", "recall", "auto")
#: Facts stated early in the demo conversation that its last question needs.
DEMO_FACTS = {
    "ticket LEDG-2417": "LEDG-2417",
    "deadline Friday 4 December": "Friday 4 December",
    "staging port 6432": "6432",
    "rounding ROUND_HALF_UP": "ROUND_HALF_UP",
    "invoice INV-20931": "INV-20931",
    "p95 162 ms": "162 ms",
    "release Thursday 3 December": "Thursday 3 December",
    "credit note CN-2026-0458": "CN-2026-0458",
    "contact Jonas Becker": "Jonas Becker",
    "no raw SQL in services": "repository",
}


def demo_messages() -> list[Message]:
    """The bundled demo conversation as core messages."""
    data = resources.files("session_migrator").joinpath("_data/demo_conversation.json")
    return messages_from_openai(json.loads(data.read_text(encoding="utf-8")))


def facts_kept(messages: list[Message]) -> list[str]:
    """The names of :data:`DEMO_FACTS` whose text appears in ``messages``."""
    blob = "\n".join(m.text + " ".join(c.arguments for c in m.tool_calls) for m in messages)
    return [name for name, needle in DEMO_FACTS.items() if needle in blob]


@dataclass(frozen=True)
class DemoRow:
    model: str
    strategy: str
    result: MigrationResult
    facts: int


def run_demo(
    *,
    out: TextIO,
    store_url: str | None = None,
    chain: tuple[str, ...] = DEMO_CHAIN,
    strategies: tuple[str, ...] = DEMO_STRATEGIES,
    as_json: bool = False,
) -> list[DemoRow]:
    """Store the demo conversation, migrate it down ``chain`` with every strategy, report."""
    from session_migrator.cli._common import table
    from session_migrator.sessions._fitter import SessionFitter

    messages = demo_messages()
    fitter = SessionFitter("demo-ledgerd", store=store_url, strategy="auto")
    fitter.append(messages)
    rows: list[DemoRow] = []
    for model in chain:
        fitter.fit(model)  # logs the hop in the store's migration log
        for strategy in strategies:
            result = migrate(messages, model, strategy=strategy)
            rows.append(DemoRow(model, strategy, result, len(facts_kept(result.messages))))
    if as_json:
        json.dump(
            [
                {
                    "model": r.model,
                    "strategy": r.strategy,
                    "facts_kept": r.facts,
                    "facts_total": len(DEMO_FACTS),
                    "report": r.result.report.to_dict(),
                }
                for r in rows
            ],
            out,
            indent=2,
        )
        out.write("\n")
        return rows

    total = len(messages)
    first = rows[0].result.report
    out.write(
        f"Demo conversation: {total} messages, {first.tokens_before:,} tokens "
        f"({'exact' if first.exact else 'estimated'}, {first.counter}) — a coding agent's day on "
        "a billing service.\n"
        f"Stored in {fitter.store.url} as session 'demo-ledgerd' (the full log stays there).\n\n"
    )
    headers = [
        "target",
        "window",
        "budget",
        "strategy",
        "decision",
        "before",
        "after",
        "kept",
        "dropped",
        "summarized",
        "recalled",
        "facts",
        "ms",
    ]
    body = []
    for r in rows:
        rep = r.result.report
        window = resolve_target(r.model)
        body.append(
            [
                r.model,
                window.context_window,
                rep.budget,
                r.strategy,
                rep.decision,
                rep.tokens_before,
                rep.tokens_after,
                rep.messages_after,
                len(rep.dropped_ids),
                len(rep.summarized_ids),
                len(rep.recalled_ids),
                f"{r.facts}/{len(DEMO_FACTS)}",
                round(rep.seconds * 1000, 1),
            ]
        )
    out.write(table(headers, body) + "\n\n")
    out.write(
        "before/after: tokens counted with the target's tokenizer (exact for OpenAI models, a "
        "conservative estimate for Claude). kept: messages sent to the model, including the "
        "summary or note. facts: how many of the facts the last question needs are still in "
        "what the model sees.\n\n"
    )
    smallest = [r for r in rows if r.model == chain[-1] and r.strategy == "auto"]
    if smallest:
        res = smallest[0].result
        out.write(
            f"What {chain[-1]} receives with 'auto' ({res.report.tokens_after:,} of "
            f"{res.report.budget:,} tokens):\n"
        )
        for m in res.messages:
            text = " ".join(m.text.split())
            if m.tool_calls:
                text = f"{text} [calls {', '.join(c.name for c in m.tool_calls)}]".strip()
            out.write(f"  {m.role:9} {text[:110]}{'...' if len(text) > 110 else ''}\n")
        kept = set(facts_kept(res.messages))
        missing = [name for name in DEMO_FACTS if name not in kept]
        out.write(
            f"\nFacts kept: {len(kept)}/{len(DEMO_FACTS)}"
            + (f" (missing: {', '.join(missing)})" if missing else "")
            + "\n"
        )
    hops = fitter.store.migrations("demo-ledgerd")
    if hops:
        out.write(
            "\nMigration log in the store: "
            + " -> ".join(
                [hops[0].from_model or "(new)"] + [h.to_model for h in hops[-len(chain) :]]
            )
            + "\n"
        )
    return rows
