"""What a long conversation costs, turn by turn (tracker issue 40): prefix-cache reuse,
uncached input tokens, the price of 100 turns, the waits, the summarizer calls and the evidence
retention of a question asked at each turn, through this project's surfaces and the frameworks'
built-ins, side by side in one run.

Each LoCoMo dev conversation is replayed turn by turn (speaker A's messages as the user's, B's
as the assistant's) at a budget of 8k; at 32k, the dev conversations one after another, as one
long conversation (each alone fits). Over the requests past 1.5x the budget:

- **reuse**: the share of prompt tokens a provider's prefix cache serves from the request
  before, by OpenAI's rule (from 1,024 shared tokens, in steps of 128);
- **uncached / turn**: the prompt tokens it does not serve;
- **$ / 100 turns** at listed input prices (output not counted): OpenAI gpt-4.1, $2.00 per
  million input tokens and $0.50 cached; Anthropic Claude Sonnet 4, $3.00, $0.30 for a cache
  read and $3.75 for a cache write (a breakpoint at the end of each request: what is not read
  is written), from 1,024 shared tokens;
- **worst / p95 wait**: a turn's fit, plus the latency of the summaries written on its thread
  (a summarizer's latency is charged, not slept: see :mod:`benchmarks._cost_surfaces`);
- **summaries / 100 turns**;
- **retention**: at each counted turn one of the conversation's questions whose evidence was
  all said is asked aside; the share of its evidence turns in what the surface sends with it.

    python -m benchmarks.conversation_cost [--budgets 8192,32768] [--data PATH] [--only NAME]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from benchmarks import locomo
from benchmarks._cost_surfaces import SURFACES, Surface, charged, o200k
from session_migrator import Message, ModelWindow

OPENAI = (2.00, 0.50)  # $ per million input tokens: uncached, cached (gpt-4.1)
ANTHROPIC = (3.00, 0.30, 3.75)  # base, cache read, cache write (Claude Sonnet 4)
_TOKENS: dict[tuple[str, str], int] = {}


def tokens(m: Message) -> int:
    """The message as the provider reads it (role and text), in o200k tokens (memoised)."""
    key = (m.role, m.text)
    found = _TOKENS.get(key)
    if found is None:
        found = _TOKENS[key] = o200k(m.text) + 4
    return found


def shared_prefix(a: Sequence[Message], b: Sequence[Message]) -> int:
    """The tokens two requests share from their start (the whole messages alike, then the
    tokens of the first that differs, as far as they agree)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x.role == y.role and x.text == y.text:
            n += tokens(x)
            continue
        if x.role == y.role:
            common = 0
            for p, q in zip(x.text, y.text, strict=False):
                if p != q:
                    break
                common += 1
            n += o200k(x.text[:common]) if common else 0
        break
    return n


def cached(shared: int) -> int:
    """What OpenAI's prefix cache serves of ``shared`` tokens."""
    return 0 if shared < 1024 else shared // 128 * 128


def turns(history: Sequence[Message]) -> list[list[Message]]:
    out: list[list[Message]] = []
    for m in history[1:]:
        if m.role == "user" and out and out[-1][-1].role == "assistant":
            out.append([])
        if not out:
            out.append([])
        out[-1].append(m)
    return out


@dataclass
class Replay:
    """One surface over one conversation."""

    requests: int = 0
    prompt: int = 0
    cached: int = 0
    anthropic_read: int = 0
    waits: tuple[float, ...] = ()
    calls: int = 0
    turns: int = 0
    retention: float = float("nan")

    @property
    def reuse(self) -> float:
        return self.cached / self.prompt if self.prompt else float("nan")

    @property
    def uncached(self) -> float:
        return (self.prompt - self.cached) / self.requests if self.requests else float("nan")

    def dollars(self) -> tuple[float, float]:
        """$ per 100 turns: OpenAI, Anthropic."""
        if not self.requests:
            return float("nan"), float("nan")
        per = 100 / self.requests / 1e6
        openai = ((self.prompt - self.cached) * OPENAI[0] + self.cached * OPENAI[1]) * per
        written = self.prompt - self.anthropic_read
        anthropic = (written * ANTHROPIC[2] + self.anthropic_read * ANTHROPIC[1]) * per
        return openai, anthropic


def replay(
    make: Callable[[ModelWindow, Message], Surface],
    history: Sequence[Message],
    questions: Sequence[locomo.Question],
    budget: int,
) -> Replay:
    texts = {m.id: m.text for m in history}
    position = {m.id: k for k, m in enumerate(history)}
    pending = sorted(questions, key=lambda q: max(position[e] for e in q.evidence))
    asked: list[float] = []
    window = ModelWindow("bench", "bench", budget, budget, 0, "o200k_base", "explicit")
    surface = make(window, history[0])
    said, size = [history[0]], 0
    previous: list[Message] | None = None
    out = Replay()
    waits: list[float] = []
    for turn in turns(history):
        users = [m for m in turn if m.role == "user"]
        rest = [m for m in turn if m.role != "user"]
        said += users
        size += sum(tokens(m) for m in users)
        before = charged()
        started = time.perf_counter()
        sent = surface.request(said, users)
        wait = time.perf_counter() - started + charged() - before
        out.turns += 1
        if previous is not None and size > 1.5 * budget:
            waits.append(wait)
            prompt = sum(tokens(m) for m in sent)
            shared = shared_prefix(previous, sent)
            out.prompt += prompt
            out.cached += cached(shared)
            out.anthropic_read += shared if shared >= 1024 else 0
            out.requests += 1
            ready = [q for q in pending if max(position[e] for e in q.evidence) < len(said)]
            if ready:
                q = ready[len(asked) % len(ready)]
                seen = "\n".join(m.text for m in surface.ask(said, Message("user", q.text)))
                asked.append(sum(texts[e] in seen for e in q.evidence) / len(q.evidence))
        previous = sent
        said += rest
        size += sum(tokens(m) for m in rest)
        surface.reply(rest)
    out.waits = tuple(waits)
    out.calls = surface.calls
    out.retention = sum(asked) / len(asked) if asked else float("nan")
    return out


def stitched(convs: Sequence[locomo.Conversation]) -> tuple[list[Message], list[locomo.Question]]:
    """The conversations one after another, each a day after the one before ends, under the
    first one's system prompt."""
    history = [convs[0].dated[0]]
    questions: list[locomo.Question] = []
    end = None
    for conv in convs:
        body = conv.dated[1:]
        first = body[0].timestamp
        shift = timedelta(0) if end is None or first is None else end - first + timedelta(days=1)
        for m in body:
            when = None if m.timestamp is None else m.timestamp + shift
            history.append(m.replace(timestamp=when))
        end = history[-1].timestamp
        questions += conv.questions
    return history, questions


def run(
    budgets: Sequence[int] = (8192, 32768),
    data: str | None = None,
    only: Sequence[str] | None = None,
) -> dict[str, Any]:
    convs = locomo.load(locomo.data_files(data))
    rows: list[dict[str, Any]] = []
    for budget in budgets:
        if budget <= 16_384:
            runs = [(c.id, c.dated, c.questions) for c in convs]
        else:
            history, questions = stitched(convs)
            runs = [("all dev conversations in a row", history, questions)]
        for name, make in SURFACES.items():
            if only and not any(o in name for o in only):
                continue
            for conv_id, history, questions in runs:
                r = replay(make, history, questions, budget)
                openai, anthropic = r.dollars()
                waits = sorted(r.waits)
                rows.append(
                    {
                        "budget": budget,
                        "surface": name,
                        "conversation": conv_id,
                        "requests": r.requests,
                        "reuse": r.reuse,
                        "uncached_per_turn": r.uncached,
                        "openai_per_100": openai,
                        "anthropic_per_100": anthropic,
                        "worst_wait": waits[-1] if waits else float("nan"),
                        "p95_wait": waits[int(0.95 * (len(waits) - 1))] if waits else float("nan"),
                        "summaries_per_100": 100 * r.calls / r.turns if r.turns else 0.0,
                        "retention": r.retention,
                    }
                )
    return {"rows": rows}


def _mean(values: list[float]) -> float:
    kept = [v for v in values if v == v]
    return statistics.fmean(kept) if kept else float("nan")


def markdown(report: dict[str, Any]) -> str:
    """One row per budget and surface: means over the conversations (the worst wait: the
    worst of them)."""
    lines = [
        "| budget | surface | reuse | uncached / turn | $ / 100 turns, OpenAI | "
        "$ / 100 turns, Anthropic | worst wait | p95 wait | summaries / 100 turns | retention |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for row in report["rows"]:
        groups.setdefault((row["budget"], row["surface"]), []).append(row)
    for (budget, surface), rows in groups.items():

        def mean(key: str, rows: list[dict[str, Any]] = rows) -> float:
            return _mean([r[key] for r in rows])

        worst = max((r["worst_wait"] for r in rows if r["worst_wait"] == r["worst_wait"]),
                    default=float("nan"))  # fmt: skip
        lines.append(
            f"| {budget:,} | {surface} | {mean('reuse'):.3f} | {mean('uncached_per_turn'):,.0f} "
            f"| {mean('openai_per_100'):.3f} | {mean('anthropic_per_100'):.3f} | {worst:.2f} s "
            f"| {mean('p95_wait'):.2f} s | {mean('summaries_per_100'):.1f} "
            f"| {mean('retention'):.3f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--budgets", default="8192,32768")
    parser.add_argument("--data", help="the LoCoMo JSON (a folder or a file)")
    parser.add_argument("--only", action="append", help="surfaces whose name holds this")
    args = parser.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    print(markdown(run(budgets, args.data, args.only)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
