"""A deterministic synthetic agent conversation for the speed benchmark.

``conversation(n)`` is exactly ``n`` messages: a system prompt, then turns of a user message and
either a plain assistant answer or an assistant tool call (one or two calls), the tool results
and an answer; the last message is a user question. Message lengths are drawn log-uniformly
between 20 and 2,000 tokens (user messages up to 600, tool results from 100), so most messages
are short and a few are long, as in real agent sessions. Text mixes prose with a broad
vocabulary, identifiers, numbers, file paths, code and JSON, so that tokenizing it costs what
real text costs (a repeated small vocabulary tokenizes several times faster).

The same seed gives the same conversation on every machine (only ``random.Random`` is used).
"""

from __future__ import annotations

import json
import math
import random

from session_migrator import Message, ToolCall

__all__ = ["conversation", "next_messages", "text_bytes"]

_COMMON = """
the of and to in is that for it with as on be at by this had not are but from or have an they
which one you were all we her she there would their will when who him been has more if no out
so said what up its about than into them can only other time new some could these two may
first then do any like my now over such our man me even most made after also did many before
must through back years where much your way well down should because each just those people
how too little state good very make world still own see men work long get here between both
life being under never day same another know while last might us great old year off come
since against go came right used take three deploy service request cache latency queue worker
database index schema migration release cluster region budget token context window model
summary user assistant message session history invoice customer order payment refund report
meeting deadline auditors contract vendor shipment warehouse inventory forecast quarterly
""".split()

_SYLLABLES = (
    "ka lo mi ne ru sa te vi zo pra qua ex ul ing tion er an ber cor dex fin gal hem jor kyl lum "
    "mor nix ost pel quin ros syl tam umb vor wex yan zel"
).split()

_TOOLS = ("search_docs", "read_file", "run_query", "get_weather", "list_orders", "http_get")


def _vocabulary(rng: random.Random) -> list[str]:
    rare = ["".join(rng.choices(_SYLLABLES, k=rng.randint(2, 3))) for _ in range(6000)]
    names = [w.capitalize() for w in rare[:800]]
    # common words dominate, as in real prose; rare words and names make tokenization realistic
    return _COMMON * 40 + rare + names


def _sentence(words: list[str]) -> str:
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def _prose(rng: random.Random, vocab: list[str], tokens: int) -> str:
    words = max(3, int(tokens / 1.95))
    out: list[str] = []
    sentence: list[str] = []
    for word in rng.choices(vocab, k=words):
        sentence.append(word)
        if len(sentence) >= 6 and rng.random() < 0.12:
            if rng.random() < 0.3:
                sentence.append(str(rng.randint(2, 99_999)))
            out.append(_sentence(sentence) + rng.choice(".!?"))
            sentence = []
    if sentence:
        out.append(_sentence(sentence) + ".")
    return " ".join(out)


def _code(rng: random.Random, vocab: list[str], tokens: int) -> str:
    lines: list[str] = []
    used = 0
    while used < tokens:
        a, b, c = (w.lower().replace("'", "") for w in rng.choices(vocab, k=3))
        n = rng.randint(0, 999)
        line = rng.choice(
            [
                f"def {a}_{b}({c}, limit={n}):",
                f"    {a} = {b}.get('{c}', {n})",
                f"    if {a} > {n}: return {b}_{c}({a})",
                f"for {a} in {b}.{c}s[:{n}]:",
                f"    log.info('%s {a} {b}', {c})",
                f"{a}_{b} = {{'{c}': {n}, 'path': 'src/{a}/{b}.py'}}",
            ]
        )
        lines.append(line)
        used += 15
    return "\n".join(lines)


def _json_rows(rng: random.Random, vocab: list[str], tokens: int) -> str:
    rows = []
    for i in range(max(1, tokens // 39)):
        rows.append(
            {
                "id": f"{rng.choice(vocab).lower()}-{rng.randint(1000, 99999)}",
                "name": " ".join(rng.choices(vocab, k=2)),
                "amount": round(rng.uniform(1, 10_000), 2),
                "status": rng.choice(["open", "paid", "late", "void"]),
                "n": i,
            }
        )
    return json.dumps({"rows": rows, "total": len(rows)})


def _length(rng: random.Random, low: int, high: int) -> int:
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


class _Writer:
    """Writes the messages of one conversation (ids ``m000001``, ``m000002``, ...)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.vocab = _vocabulary(self.rng)
        self.count = 0

    def _id(self) -> str:
        self.count += 1
        return f"m{self.count:06d}"

    def user(self) -> Message:
        text = _prose(self.rng, self.vocab, _length(self.rng, 20, 600))
        return Message("user", text, id=self._id())

    def answer(self) -> Message:
        rng = self.rng
        tokens = _length(rng, 20, 2000)
        text = _prose(rng, self.vocab, tokens)
        if tokens > 200 and rng.random() < 0.3:
            split = tokens // 2
            text = (
                _prose(rng, self.vocab, split)
                + "\n\n```python\n"
                + _code(rng, self.vocab, tokens - split)
                + "\n```"
            )
        return Message("assistant", text, id=self._id())

    def tool_turn(self) -> list[Message]:
        rng = self.rng
        calls = []
        for _ in range(rng.choice((1, 1, 2))):
            call_id = f"call_{self._id()}"
            args = {
                "query": _prose(rng, self.vocab, rng.randint(8, 40)),
                "limit": rng.randint(1, 50),
            }
            calls.append(ToolCall(call_id, rng.choice(_TOOLS), json.dumps(args)))
        out = [Message("assistant", "", tool_calls=tuple(calls), id=self._id())]
        for call in calls:
            tokens = _length(rng, 100, 2000)
            kind = rng.random()
            if kind < 0.4:
                body = _json_rows(rng, self.vocab, tokens)
            elif kind < 0.7:
                body = _code(rng, self.vocab, tokens)
            else:
                body = _prose(rng, self.vocab, tokens)
            out.append(Message("tool", body, tool_call_id=call.id, id=self._id()))
        return out


def conversation(n: int, seed: int = 7) -> list[Message]:
    """Exactly ``n`` messages (``n >= 2``): system prompt, turns, and a final user question."""
    if n < 2:
        raise ValueError("a conversation here has at least a system prompt and a question")
    w = _Writer(seed)
    system = _prose(w.rng, w.vocab, 200)
    messages = [Message("system", "You are a careful assistant. " + system, id=w._id())]
    while len(messages) < n - 1:
        room = n - 1 - len(messages)
        turn = [w.user()]
        if room >= 5 and w.rng.random() < 0.35:
            turn += w.tool_turn()
        if len(turn) < room:
            turn.append(w.answer())
        messages.extend(turn)  # never more than ``room``: a tool turn is at most 4 + answer
    messages.append(w.user())
    return messages[:n]


def next_messages(messages: list[Message], count: int) -> list[Message]:
    """``count`` messages that continue the conversation: the assistant's reply to the final
    question, the next question, and so on (what "appending one message" appends, in turn).
    """
    w = _Writer(len(messages) * 31 + 1)
    out = []
    for k in range(count):
        message = w.answer() if k % 2 == 0 else w.user()
        out.append(message.replace(id=f"next-{len(messages):06d}-{k}"))
    return out


def text_bytes(messages: list[Message]) -> int:
    """The size of the conversation's text: UTF-8 bytes of every content and call argument."""
    total = 0
    for m in messages:
        total += len(m.text.encode())
        total += sum(len(c.arguments.encode()) for c in m.tool_calls)
    return total
