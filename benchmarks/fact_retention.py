"""Fact retention: how many planted facts survive a migration, per strategy and budget.

Each generated conversation plants facts in its early turns ("my locker code is 4417"), then buries
them under long filler turns (with tool calls and large outputs), among them one distractor turn
per fact that shares the question's words but not the answer ("Side note on the locker code:
nothing new there yet"). The final user message asks for one fact. A fact survives when its value
appears in what the model is sent (verbatim, recalled, or in a summary). Budgets are 10%, 25% and
50% of the conversation's tokens. The frameworks' built-ins run on the same inputs: LangChain
``trim_messages(strategy="last")`` and LlamaIndex ``ChatMemoryBuffer``.

    python -m benchmarks.fact_retention [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from session_migrator import Message, ToolCall
from session_migrator.counting._tokens import counter_for
from session_migrator.migration._migrate import migrate
from session_migrator.models._windows import ModelWindow
from session_migrator.recall._fts import query_terms

BUDGETS = (0.10, 0.25, 0.50)
STRATEGIES = ("trim", "summarize", "recall", "auto")

FIRST = ["Amara", "Bruno", "Chen", "Dalia", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jana"]
LAST = ["Okafor", "Lindqvist", "Moreau", "Tanaka", "Silva", "Novak", "Haddad", "Kowalski"]
WORDS = ["Bluefin", "Kestrel", "Marigold", "Obsidian", "Quartz", "Saffron", "Tundra", "Zephyr"]
FOODS = ["peanuts", "shellfish", "sesame", "kiwi", "mustard", "celery"]
LIBS = ["Vega-Lite", "ECharts", "Plotly", "Chart.js", "Recharts", "Bokeh"]


@dataclass(frozen=True)
class Fact:
    statement: str
    question: str
    value: str


def _facts(rng: random.Random) -> list[Fact]:
    day = rng.randint(1, 28)
    month = rng.choice(["March", "April", "June", "September", "October"])
    return (
        [
            Fact(f"By the way, my locker code is {v}.", "What's my locker code again?", v)
            for v in [str(rng.randint(1000, 9999))]
        ]
        + [
            Fact(
                f"The staging server listens on port {v}.",
                "Which port does the staging server listen on?",
                v,
            )
            for v in [str(rng.randint(10000, 65000))]
        ]
        + [
            Fact(f"Our project codename is {v}.", "Remind me, what is our project codename?", v)
            for v in [rng.choice(WORDS)]
        ]
        + [
            Fact(f"My manager's name is {v}.", "What is my manager's name?", v)
            for v in [f"{rng.choice(FIRST)} {rng.choice(LAST)}"]
        ]
        + [
            Fact(f"The invoice total came to ${v}.", "How much did the invoice total come to?", v)
            for v in [f"{rng.randint(1000, 99999):,}.{rng.randint(10, 99)}"]
        ]
        + [
            Fact(f"Note that I'm allergic to {v}.", "What am I allergic to?", v)
            for v in [rng.choice(FOODS)]
        ]
        + [
            Fact(
                f"The meeting with the auditors is on {v}.",
                "When is the meeting with the auditors?",
                v,
            )
            for v in [f"{month} {day}"]
        ]
        + [
            Fact(f"The database we use is called {v}.", "What is the database we use called?", v)
            for v in [f"{rng.choice(['orders', 'ledger', 'fleet', 'crm'])}_{rng.randint(10, 99)}"]
        ]
        + [
            Fact(
                f"We decided to use {v} for the charts.",
                "Which library did we decide to use for the charts?",
                v,
            )
            for v in [rng.choice(LIBS)]
        ]
        + [
            Fact(
                f"The flight number for the offsite is {v}.",
                "What's the flight number for the offsite?",
                v,
            )
            for v in [f"{rng.choice(['LH', 'BA', 'KL', 'AF'])}{rng.randint(100, 999)}"]
        ]
    )


_FILLER = (
    "the service handles retries with exponential backoff and the queue depth stays bounded "
    "while the workers drain messages from the broker and the dashboard shows latency by region "
    "so that the team can compare the code paths and the server configuration before deploying "
    "the next release to the cluster where the database migrations run in a maintenance window "
).split()


def _filler(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_FILLER) for _ in range(words)).capitalize() + "."


def conversation(seed: int, filler_turns: int = 60) -> tuple[list[Message], list[Fact]]:
    """A conversation with facts planted early and long filler after (without the question)."""
    rng = random.Random(seed)
    facts = _facts(rng)
    msgs = [Message("system", "You are a helpful assistant.", id=f"s{seed}")]
    n = 0

    def add(m: Message) -> None:
        nonlocal n
        msgs.append(m)
        n += 1

    for i, fact in enumerate(facts):
        add(Message("user", f"{_filler(rng, 25)} {fact.statement}", id=f"{seed}-f{i}"))
        add(Message("assistant", f"Got it. {_filler(rng, 40)}", id=f"{seed}-fa{i}"))
    # distractors: later turns that share the question's words but not the fact's value
    distractors = {rng.randrange(filler_turns): fact for fact in facts}
    for t in range(filler_turns):
        if t in distractors:
            words = " ".join(query_terms(distractors[t].question))
            add(
                Message(
                    "user",
                    f"Side note on the {words}: nothing new there yet, "
                    "I will tell you when it changes.",
                    id=f"{seed}-d{t}",
                )
            )
            add(Message("assistant", f"Understood. {_filler(rng, 20)}", id=f"{seed}-da{t}"))
        add(
            Message(
                "user", f"Question {t}: {_filler(rng, rng.randint(15, 60))}?", id=f"{seed}-u{t}"
            )
        )
        if t % 4 == 0:
            cid = f"c{seed}-{t}"
            add(
                Message(
                    "assistant",
                    "",
                    tool_calls=(ToolCall(cid, "search", json.dumps({"q": _filler(rng, 5)})),),
                    id=f"{seed}-tc{t}",
                )
            )
            add(
                Message(
                    "tool",
                    _filler(rng, rng.randint(200, 900)),
                    tool_call_id=cid,
                    id=f"{seed}-tr{t}",
                )
            )
        add(Message("assistant", _filler(rng, rng.randint(60, 300)), id=f"{seed}-a{t}"))
    return msgs, facts


Trimmer = Callable[[list[Message], int, str], list[Message]]


def _ours(strategy: str) -> Trimmer:
    def run(messages: list[Message], budget: int, query: str) -> list[Message]:
        window = ModelWindow("bench", "bench", budget, budget, 0, "o200k_base", "explicit")
        return migrate(messages, window, strategy=strategy, reserve_output=0, query=query).messages

    return run


def _langchain_trim() -> Trimmer | None:
    try:
        from langchain_core.messages import (
            AIMessage,
            BaseMessage,
            HumanMessage,
            SystemMessage,
            ToolMessage,
            trim_messages,
        )
    except ImportError:
        return None
    counter = counter_for("o200k_base")

    def to_lc(m: Message) -> BaseMessage:
        if m.role == "system":
            return SystemMessage(m.text, id=m.id)
        if m.role == "user":
            return HumanMessage(m.text, id=m.id)
        if m.role == "tool":
            return ToolMessage(m.text, tool_call_id=m.tool_call_id or "", id=m.id)
        return AIMessage(
            m.text,
            id=m.id,
            tool_calls=[
                {"id": c.id, "name": c.name, "args": json.loads(c.arguments)} for c in m.tool_calls
            ],
        )

    def count(msgs: Sequence[BaseMessage]) -> int:
        return 3 + sum(3 + counter.count_text(str(m.content)) for m in msgs)

    def run(messages: list[Message], budget: int, query: str) -> list[Message]:
        del query
        kept = trim_messages(
            [to_lc(m) for m in messages],
            max_tokens=budget,
            token_counter=count,
            strategy="last",
            start_on="human",
            include_system=True,
        )
        return [Message("user", str(m.content), id=m.id or "") for m in kept]

    return run


def _llamaindex_buffer() -> Trimmer | None:
    try:
        from llama_index.core.base.llms.types import ChatMessage
        from llama_index.core.memory import ChatMemoryBuffer
    except ImportError:
        return None
    from session_migrator.counting._encodings import get_encoding

    enc = get_encoding("o200k_base")
    if enc is None:
        return None

    def run(messages: list[Message], budget: int, query: str) -> list[Message]:
        del query
        history = [ChatMessage(role=m.role, content=m.text) for m in messages]
        buf = ChatMemoryBuffer.from_defaults(
            chat_history=history, token_limit=budget, tokenizer_fn=enc.encode
        )
        return [Message("user", m.content or "") for m in buf.get()]

    return run


def run(quick: bool = False, *, seeds: int | None = None, builtins: bool = True) -> dict[str, Any]:
    """Retention per method and budget share: ``{"rows": [...], "questions": n}``."""
    methods: dict[str, Trimmer] = {f"session-migrator {s}": _ours(s) for s in STRATEGIES}
    if builtins:
        lc = _langchain_trim()
        if lc is not None:
            methods["LangChain trim_messages(last)"] = lc
        li = _llamaindex_buffer()
        if li is not None:
            methods["LlamaIndex ChatMemoryBuffer"] = li
    counter = counter_for("o200k_base")
    hits: dict[tuple[str, float], int] = {}
    questions = 0
    for seed in range(seeds if seeds is not None else 3 if quick else 8):
        base, facts = conversation(seed)
        for k, fact in enumerate(facts):
            msgs = [*base, Message("user", fact.question, id=f"{seed}-q{k}")]
            total = counter.count_messages(msgs)
            questions += 1
            for share in BUDGETS:
                budget = int(total * share)
                for name, method in methods.items():
                    kept = method(msgs, budget, fact.question)
                    text = "\n".join(m.text for m in kept)
                    hits[(name, share)] = hits.get((name, share), 0) + (fact.value in text)
    rows = [
        {
            "method": name,
            **{f"{int(s * 100)}%": round(hits[(name, s)] / questions, 3) for s in BUDGETS},
        }
        for name in methods
    ]
    return {"questions": questions, "budgets": [f"{int(s * 100)}%" for s in BUDGETS], "rows": rows}


def markdown(result: dict[str, Any]) -> str:
    heads = ["method", *result["budgets"]]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for row in result["rows"]:
        lines.append(
            "| "
            + " | ".join([row["method"]] + [f"{row[b] * 100:.0f}%" for b in result["budgets"]])
            + " |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(quick=args.quick)
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        print(f"Facts retained ({result['questions']} questions), share of budget = session tokens")
        print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
