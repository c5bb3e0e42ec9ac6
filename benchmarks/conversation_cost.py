"""What a long conversation costs: prefix-cache reuse of consecutive requests (work in progress
for tracker issue 40).

Replays each LoCoMo dev conversation turn by turn (speaker A's messages as the user's, B's as the
assistant's), fits every request through a surface, and counts the share of prompt tokens a
provider's prefix cache would reuse from the request before (OpenAI's rule: from 1,024 shared
tokens, in steps of 128), over the requests past 1.5x the budget, with the worst wait of a fit.

    python -m benchmarks.conversation_cost [--budget 8192] [--data PATH]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from benchmarks import locomo
from session_migrator import Message, ModelWindow, SessionFitter, migrate
from session_migrator.counting._encodings import get_encoding


class Surface(Protocol):
    def request(self, history: list[Message], new: list[Message]) -> list[Message]: ...
    def reply(self, messages: list[Message]) -> None: ...
    def ask(self, history: list[Message], question: Message) -> list[Message]: ...


_ENCODING = get_encoding("o200k_base")
_TOKENS: dict[tuple[str, str], list[int]] = {}


def tokens(m: Message) -> list[int]:
    """The message as the provider reads it (role and text), in o200k tokens (memoised)."""
    key = (m.role, m.text)
    found = _TOKENS.get(key)
    if found is None:
        assert _ENCODING is not None, "o200k_base is not available offline"
        text = f"<|{m.role}|>{m.text}<|end|>"
        found = _TOKENS[key] = _ENCODING.encode(text, disallowed_special=())
    return found


def shared_prefix(a: Sequence[Message], b: Sequence[Message]) -> int:
    """The tokens two requests share from their start."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x.role == y.role and x.text == y.text:
            n += len(tokens(x))
            continue
        for p, q in zip(tokens(x), tokens(y), strict=False):
            if p != q:
                break
            n += 1
        break
    return n


def cached(shared: int) -> int:
    """What OpenAI's prefix cache serves of ``shared`` tokens."""
    return 0 if shared < 1024 else shared // 128 * 128


def turns(conv: locomo.Conversation) -> list[list[Message]]:
    out: list[list[Message]] = []
    for m in conv.dated[1:]:
        if m.role == "user" and out and out[-1][-1].role == "assistant":
            out.append([])
        if not out:
            out.append([])
        out[-1].append(m)
    return out


def replay(
    make: Callable[[ModelWindow, Message], Surface], conv: locomo.Conversation, budget: int
) -> tuple[float, int, float, float]:
    """(reuse past 1.5x the budget, requests counted, the worst fit's seconds, the evidence
    retention of the questions asked on the way).

    At each counted turn one of the conversation's questions whose evidence was all said is
    asked aside (each in turn): the share of its evidence turns in what the surface would send
    with it is its retention."""
    texts = {m.id: m.text for m in conv.dated}
    position = {m.id: k for k, m in enumerate(conv.dated)}
    pending = sorted(conv.questions, key=lambda q: max(position[e] for e in q.evidence))
    asked: list[float] = []
    next_q = 0
    window = ModelWindow("bench", "bench", budget, budget, 0, "o200k_base", "explicit")
    system = conv.dated[0]
    surface = make(window, system)
    history, size = [system], 0
    previous: list[Message] | None = None
    prompt = hit = counted = 0
    worst = 0.0
    for turn in turns(conv):
        users = [m for m in turn if m.role == "user"]
        rest = [m for m in turn if m.role != "user"]
        history += users
        size += sum(len(tokens(m)) for m in users)
        started = time.perf_counter()
        sent = surface.request(history, users)
        worst = max(worst, time.perf_counter() - started)
        if previous is not None and size > 1.5 * budget:
            prompt += sum(len(tokens(m)) for m in sent)
            hit += cached(shared_prefix(previous, sent))
            counted += 1
            ready = [q for q in pending if max(position[e] for e in q.evidence) < len(history)]
            if ready:
                q = ready[next_q % len(ready)]
                next_q += 1
                seen = "\n".join(m.text for m in surface.ask(history, Message("user", q.text)))
                asked.append(sum(texts[e] in seen for e in q.evidence) / len(q.evidence))
        previous = sent
        history += rest
        size += sum(len(tokens(m)) for m in rest)
        surface.reply(rest)
    retention = sum(asked) / len(asked) if asked else float("nan")
    return (hit / prompt if prompt else float("nan")), counted, worst, retention


class Migrate:
    """``migrate()`` on the whole history at every turn (no state)."""

    def __init__(self, window: ModelWindow, system: Message, strategy: str = "auto") -> None:
        self.window, self.strategy = window, strategy

    def request(self, history: list[Message], new: list[Message]) -> list[Message]:
        return migrate(history, self.window, strategy=self.strategy, reserve_output=0).messages

    def reply(self, messages: list[Message]) -> None:
        pass

    def ask(self, history: list[Message], question: Message) -> list[Message]:
        return self.request([*history, question], [question])


class Fitter:
    """A :class:`SessionFitter` on ``memory://``, appended to as the conversation goes."""

    made = 0

    def __init__(self, window: ModelWindow, system: Message, strategy: str = "auto") -> None:
        Fitter.made += 1
        self.fitter = SessionFitter(
            f"cost-{Fitter.made}", store="memory://", strategy=strategy, reserve_output=0
        )
        self.fitter.append([system])
        self.window = window

    def request(self, history: list[Message], new: list[Message]) -> list[Message]:
        self.fitter.append(new)
        return self.fitter.fit(self.window).messages

    def reply(self, messages: list[Message]) -> None:
        self.fitter.append(messages)

    def ask(self, history: list[Message], question: Message) -> list[Message]:
        return [*self.fitter.fit(self.window, query=question.text).messages, question]


class Whole:
    """No fitting: the whole history (the cache's best case)."""

    def __init__(self, window: ModelWindow, system: Message) -> None:
        pass

    def request(self, history: list[Message], new: list[Message]) -> list[Message]:
        return list(history)

    def reply(self, messages: list[Message]) -> None:
        pass

    def ask(self, history: list[Message], question: Message) -> list[Message]:
        return [*history, question]


SURFACES: dict[str, Callable[[ModelWindow, Message], Surface]] = {
    "no fitting": Whole,
    "migrate(), auto": Migrate,
    "migrate(), trim": lambda w, s: Migrate(w, s, "trim"),
    "SessionFitter, auto": Fitter,
    "SessionFitter, trim": lambda w, s: Fitter(w, s, "trim"),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--budget", type=int, default=8192)
    parser.add_argument("--data", help="the LoCoMo JSON (a folder or a file)")
    args = parser.parse_args(argv)
    convs = locomo.load(locomo.data_files(args.data))
    print(f"prefix-cache reuse past 1.5x a budget of {args.budget:,} tokens, per conversation")
    for name, make in SURFACES.items():
        rows = [replay(make, conv, args.budget) for conv in convs]
        cells = ", ".join(f"{r:.3f} ({n} requests)" for r, n, _, _ in rows)
        kept = ", ".join(f"{e:.3f}" for _, _, _, e in rows)
        worst = max(w for _, _, w, _ in rows) * 1000
        print(f"- {name}: reuse {cells}; retention {kept}; worst fit {worst:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
