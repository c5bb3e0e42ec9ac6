"""Evidence retention on stitched SGD dialogues with templated questions (a saturated check):
does what a model is sent still hold the turn a question needs?

The text is the Schema-Guided Dialogue dev split (Rastogi et al., AAAI 2020; CC BY-SA 4.0), read
at run time from ``../shared/data/sgd/dev`` beside the repository (``--data`` or
``SESSION_MIGRATOR_SGD_DIR`` elsewhere); nothing of it is copied into the project. Its per-turn
annotations say which turn states which slot value, so the evidence of a question is known
exactly, on text no one here wrote.

**Histories.** The dialogues are stitched, in a seeded order, into long histories of one user: one
dialogue a day, one to three days apart, every message stamped with when it was said (as an
assistant's log is), under one system prompt. A history of 130 dialogues is about 40,000 tokens.

**Questions** are asked as the newest user turn, a few days after the last session, about
dialogues of the first 85% of the history, phrased as users ask: without the value, mostly
without the evidence turn's own words, anchored by something else of that conversation:

- ``paraphrase``: one slot, anchored by a name or place of that dialogue ("Can you give me the
  number for Sino again?"); evidence: the turn that states the value;
- ``temporal``: anchored by the day only ("Which restaurant did I pick on 3 March?"); answerable
  only where the date a message was said is visible;
- ``multi``: two slots of one dialogue stated in different turns; evidence: both turns;
- ``changed``: a slot whose value changed during the dialogue; evidence: the turn with the final
  value ("What time did I end up booking it for?").

**Measure:** evidence recall, the share of a question's evidence turns whose text survives
verbatim (recalled, kept, or quoted whole) in what is sent, averaged over questions; at budgets of
4k, 8k and 16k tokens and 10, 25 and 50% of the history.

**Yardsticks in the same run:** the ``trim`` strategy, and a plain whole-message BM25: a naive
suffix-stripping stemmer, the question as the query, the system prompt and the question kept, the
rest of the budget filled greedily by score with nothing kept for recent turns; and the same with
each hit's exchange partner added (``BM25 + neighbour``).

It saturates: its questions are made from slot values by templates and share words with the
turns that answer them, so every method that matches words scores about 0.99 and the benchmark
cannot tell them apart. For conversations people wrote, with questions people wrote, run the
LoCoMo benchmark (:mod:`benchmarks.locomo`): ``--locomo [PATH]``.

    python -m benchmarks.retention [--quick] [--json] [--data DIR]
    python -m benchmarks.retention --locomo [PATH] [--budgets 4k,8k,16k,10%,25%,50%]
        [--strategies trim,summarize,recall,auto] [--every N] [--modes plain,dated] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from session_migrator import Message, ModelWindow, counter_for, migrate

STRATEGIES = ("trim", "summarize", "recall", "auto")
ABSOLUTE = (4_000, 8_000, 16_000)
SHARES = (0.10, 0.25, 0.50)
SYSTEM = "You are a helpful personal assistant. You help the user book and plan things."
DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "sgd" / "dev"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


# --- the corpus ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    speaker: str  # "USER" | "SYSTEM"
    text: str
    # (service, slot) -> (act, values) this turn states (INFORM, CONFIRM, OFFER)
    states: dict[tuple[str, str], tuple[str, tuple[str, ...]]]


@dataclass(frozen=True)
class Dialogue:
    id: str
    services: tuple[str, ...]
    turns: tuple[Turn, ...]


def data_dir(given: str | os.PathLike[str] | None = None) -> Path:
    """Where the SGD dev split is: ``given``, ``SESSION_MIGRATOR_SGD_DIR``, or beside the repo."""
    path = Path(given or os.environ.get("SESSION_MIGRATOR_SGD_DIR") or DEFAULT_DATA)
    if not any(path.glob("dialogues_*.json")):
        raise FileNotFoundError(
            f"no SGD dialogues_*.json under {path}: pass --data DIR (the dev split of "
            "google-research-datasets/dstc8-schema-guided-dialogue) or set SESSION_MIGRATOR_SGD_DIR"
        )
    return path


def load_dialogues(path: Path) -> list[Dialogue]:
    out = []
    for file in sorted(path.glob("dialogues_*.json")):
        for raw in json.loads(file.read_text(encoding="utf-8")):
            turns = []
            for t in raw["turns"]:
                states: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
                for frame in t["frames"]:
                    for act in frame["actions"]:
                        if act["values"] and act["act"] in ("INFORM", "CONFIRM", "OFFER"):
                            key = (frame["service"], act["slot"])
                            states[key] = (act["act"], tuple(act["values"]))
                turns.append(Turn(t["speaker"], t["utterance"], states))
            out.append(Dialogue(raw["dialogue_id"], tuple(raw["services"]), tuple(turns)))
    return out


# --- how users ask -------------------------------------------------------------------------------

# what each service's conversation is about, and the slots that name it (anchors)
NOUNS = {
    "Restaurants_2": "restaurant booking", "Flights_3": "flight", "Buses_1": "bus trip",
    "Hotels_1": "hotel", "Hotels_4": "hotel", "Homes_1": "apartment", "Events_1": "event",
    "RentalCars_1": "rental car", "RideSharing_1": "ride", "Services_4": "therapist appointment",
    "Travel_1": "attraction", "Movies_2": "movie", "Media_2": "movie", "Music_1": "song",
    "Banks_2": "bank transfer", "Weather_1": "weather check", "Alarm_1": "alarm",
}  # fmt: skip
NAMES = {
    "restaurant_name": "the table at {v}", "event_name": "the {v} event",
    "hotel_name": "my stay at {v}", "place_name": "my stay at {v}",
    "property_name": "the viewing at {v}", "therapist_name": "my appointment with {v}",
    "attraction_name": "the trip to {v}", "song_name": "the song {v}",
    "movie_name": "the film {v}", "title": "the movie {v}", "car_name": "the {v} rental",
    "recipient_name": "the transfer to {v}", "new_alarm_name": "the {v} alarm",
}  # fmt: skip
PLACES = {
    "location": "in", "destination": "to", "to_location": "to", "destination_city": "to",
    "city_of_event": "in", "pickup_city": "in", "city": "in", "area": "in",
}  # fmt: skip
# the question's lead for a slot; {x} is the anchor ("Sino", "the hotel in Paris")
LEADS = {
    "phone_number": "Can you give me the number for {x} again?",
    "address": "Where exactly was {x}?",
    "street_address": "Where exactly was {x}?",
    "address_of_location": "Where do I have to go for {x}?",
    "event_location": "Which venue was {x} at?",
    "time": "What time was {x}?",
    "date": "Which day was {x} for?",
    "number_of_seats": "How many of us were going for {x}?",
    "price": "How much was {x}?",
    "fare": "How much did {x} cost me?",
    "total_price": "What was the total for {x}?",
    "ride_fare": "How much did {x} come to?",
    "rent": "What's the monthly cost of {x}?",
    "price_per_night": "What does {x} charge per night?",
    "rating": "How well reviewed was {x}?",
    "star_rating": "How many stars did {x} have?",
    "airlines": "Which carrier was {x} with?",
    "outbound_departure_time": "When did {x} leave?",
    "leaving_time": "When did {x} depart?",
    "leaving_date": "Which day was {x} leaving?",
    "departure_date": "Which day was I flying out for {x}?",
    "return_date": "When was I coming back from {x}?",
    "check_in_date": "When was I checking in for {x}?",
    "stay_length": "How many nights was {x} for?",
    "number_of_days": "How many nights was {x} for?",
    "number_of_rooms": "How many rooms did I need for {x}?",
    "appointment_time": "What time was {x}?",
    "appointment_date": "Which day was {x}?",
    "visit_date": "Which day was I visiting {x}?",
    "pickup_time": "What time was I collecting {x}?",
    "pickup_date": "Which day was I collecting {x}?",
    "dropoff_date": "When did {x} have to go back?",
    "pickup_location": "Where was I picking up {x}?",
    "type": "What kind of {x} was it?",
    "category": "What kind of place was {x}?",
    "number_of_riders": "How many people were in {x}?",
    "travelers": "How many people were on {x}?",
    "transfer_amount": "How much money went out in {x}?",
    "account_type": "Which of my accounts was used for {x}?",
    "playback_device": "Where was {x} playing?",
    "artist": "Who sang {x}?",
    "album": "Which record is {x} from?",
    "subtitle_language": "Which subtitles did {x} have?",
    "number_of_beds": "How many bedrooms did {x} have?",
    "therapist_name": "Who was {x} with?",
    "to_station": "Which station did {x} arrive at?",
    "from_station": "Which station did {x} leave from?",
    "new_alarm_time": "What time is {x} set for?",
}
# the slot a temporal question asks for, per service, and how
WHAT_ON_DAY = {
    "Restaurants_2": ("restaurant_name", "Which restaurant did I pick when we talked on {d}?"),
    "Events_1": ("event_name", "What was the show I asked you about on {d}?"),
    "Hotels_1": ("hotel_name", "Which hotel did we settle on, the day we spoke on {d}?"),
    "Hotels_4": ("place_name", "Where did I plan to stay when we talked on {d}?"),
    "Homes_1": ("property_name", "Which apartment came up on {d}?"),
    "RentalCars_1": ("car_name", "What car did I reserve on {d}?"),
    "Services_4": ("therapist_name", "Who was I seeing, per our chat on {d}?"),
    "Travel_1": ("attraction_name", "What did you suggest I go and see on {d}?"),
    "Music_1": ("song_name", "What was that track I put on, on {d}?"),
    "Media_2": ("movie_name", "Which film did I watch on {d}?"),
    "Movies_2": ("title", "Which movie did you find for me on {d}?"),
    "Flights_3": ("airlines", "Which airline came up for my flight on {d}?"),
    "Buses_1": ("to_location", "Where was I taking the coach to, the day we spoke on {d}?"),
    "Banks_2": ("recipient_name", "Who did I send money to on {d}?"),
}


def _day(when: datetime, rng: random.Random) -> str:
    return rng.choice(
        [
            f"{when.day} {when:%B}",
            f"{when:%B} {when.day}",
            f"{when:%A}, {when.day} {when:%B}",
            f"{when:%b} {when.day}",
        ]
    )


@dataclass(frozen=True)
class Question:
    kind: str
    text: str
    evidence: tuple[str, ...]  # ids of the messages that hold the answer
    values: tuple[str, ...]


@dataclass
class History:
    messages: list[Message]
    questions: list[Question] = field(default_factory=list)
    asked_at: datetime = START


def _message(role: str, text: str, id: str, when: datetime) -> Message:
    """A message stamped with when it was said (a field where Message has one, else ``extra``)."""
    if "timestamp" in {f.name for f in fields(Message)}:
        return Message(role, text, id=id, timestamp=when)  # type: ignore[arg-type, call-arg]
    return Message(role, text, id=id, extra={"timestamp": when.isoformat()})  # type: ignore[arg-type]


_RANK = {"OFFER": 0, "INFORM": 1, "CONFIRM": 2}


def _final_values(d: Dialogue) -> dict[tuple[str, str], tuple[int, str, list[str]]]:
    """(service, slot) -> (the turn stating its final value, the value, the values the user
    asked for in turn, when they changed).

    The final value is the last one confirmed, else the last one informed, else the last one
    offered (the system offers several options; only what was confirmed was chosen)."""
    best: dict[tuple[str, str], tuple[int, int, str]] = {}
    asked: dict[tuple[str, str], list[str]] = {}
    for i, t in enumerate(d.turns):
        for key, (act, values) in t.states.items():
            value = values[0]
            rank = _RANK[act]
            if key not in best or rank >= best[key][0]:
                best[key] = (rank, i, value)
            if act == "CONFIRM" or (act == "INFORM" and t.speaker == "USER"):
                seen = asked.setdefault(key, [])
                if not seen or seen[-1].lower() != value.lower():
                    seen.append(value)
    return {k: (i, v, asked.get(k, [])) for k, (_, i, v) in best.items()}


def _unique_in(text: str, value: str, corpus: str) -> bool:
    return len(value) > 2 and corpus.count(value.lower()) == text.count(value.lower()) >= 1


def build_history(dialogues: Sequence[Dialogue], seed: int, size: int) -> History:
    """One user's history of ``size`` dialogues and the questions about its earlier part."""
    rng = random.Random(seed)
    chosen = rng.sample(list(dialogues), size)
    when = START + timedelta(days=rng.randint(0, 30))
    msgs = [_message("system", SYSTEM, f"h{seed}-system", when)]
    placed: list[tuple[Dialogue, datetime, list[str]]] = []
    for k, d in enumerate(chosen):
        when = (when + timedelta(days=rng.randint(1, 3))).replace(
            hour=rng.randint(8, 20), minute=rng.randint(0, 59)
        )
        ids = []
        for i, t in enumerate(d.turns):
            role = "user" if t.speaker == "USER" else "assistant"
            mid = f"h{seed}-d{k}-t{i}"
            msgs.append(_message(role, t.text, mid, when + timedelta(seconds=20 * i)))
            ids.append(mid)
        placed.append((d, when, ids))
    history = History(msgs, asked_at=when + timedelta(days=rng.randint(2, 6), hours=1))
    corpus = "\n".join(m.text for m in msgs).lower()
    days = Counter(w.date() for _, w, _ in placed)
    for d, day, ids in placed[: int(size * 0.85)]:
        history.questions.extend(_questions(d, day, ids, corpus, days[day.date()] == 1, rng))
    rng.shuffle(history.questions)
    # as many of each kind as can be had, in turn (temporal ones are the most plentiful)
    kinds: dict[str, list[Question]] = {}
    for q in history.questions:
        kinds.setdefault(q.kind, []).append(q)
    order = sorted(kinds)
    history.questions = [
        kinds[k][i] for i in range(max(map(len, kinds.values()), default=0)) for k in order
        if i < len(kinds[k])
    ]  # fmt: skip
    return history


def _anchor(d: Dialogue, finals: dict[tuple[str, str], tuple[int, str, list[str]]],
            corpus: str, service: str, avoid: str) -> str | None:  # fmt: skip
    """A phrase naming this dialogue's ``service`` part alone in the history: a name, else a
    place."""
    whole = "\n".join(t.text for t in d.turns).lower()
    mine = sorted((slot, v) for (s, slot), v in finals.items() if s == service)
    for slot, (_, value, _) in mine:
        if slot in NAMES and slot != avoid and _unique_in(whole, value, corpus):
            return NAMES[slot].format(v=value)
    for slot, (_, value, _) in mine:
        if slot in PLACES and slot != avoid and _unique_in(whole, value, corpus):
            return f"the {NOUNS.get(service, 'booking')} {PLACES[slot]} {value}"
    return None


def _questions(
    d: Dialogue, day: datetime, ids: list[str], corpus: str, alone_that_day: bool,
    rng: random.Random,
) -> list[Question]:  # fmt: skip
    finals = _final_values(d)
    out: list[Question] = []
    askable = [(key, v) for key, v in sorted(finals.items()) if key[1] in LEADS and len(v[1]) > 0]
    rng.shuffle(askable)
    # paraphrase: one slot, anchored by a name or a place of this dialogue
    for (service, slot), (turn, value, _) in askable[:1]:
        anchor = _anchor(d, finals, corpus, service, slot)
        if anchor and value.lower() not in anchor.lower():
            text = LEADS[slot].format(x=anchor)
            out.append(Question("paraphrase", text, (ids[turn],), (value,)))
    # multi: two slots stated in different turns
    pairs = [(a, b) for a in askable for b in askable if a[1][0] < b[1][0] and a[0][0] == b[0][0]]
    if pairs:
        (sa, (ta, va, _)), (sb, (tb, vb, _)) = pairs[0]
        anchor = _anchor(d, finals, corpus, sa[0], sa[1])
        if anchor and sb[1] != sa[1] and va.lower() not in anchor.lower():
            first = LEADS[sa[1]].format(x=anchor).rstrip("?")
            second = LEADS[sb[1]].format(x="it")
            out.append(
                Question(
                    "multi",
                    f"{first}, and {second[0].lower()}{second[1:]}",
                    (ids[ta], ids[tb]),
                    (va, vb),
                )
            )
    # changed: a slot whose value changed during the dialogue
    for (service, slot), (turn, value, seen) in askable:
        if len(seen) > 1 and seen[-1] == value:
            anchor = _anchor(d, finals, corpus, service, slot)
            if anchor:
                lead = LEADS[slot].format(x=anchor).rstrip("?")
                out.append(Question("changed", f"{lead} in the end? I changed it at some point.",
                                    (ids[turn],), (value,)))  # fmt: skip
            break
    # temporal: anchored by the day alone
    for service in d.services:
        if service in WHAT_ON_DAY and alone_that_day:
            slot, lead = WHAT_ON_DAY[service]
            if (service, slot) in finals:
                turn, value, _ = finals[(service, slot)]
                text = lead.format(d=_day(day, rng))
                out.append(Question("temporal", text, (ids[turn],), (value,)))
            break
    return out


# --- the methods ---------------------------------------------------------------------------------

Method = Callable[[list[Message], int, str], list[Message]]


def _ours(strategy: str) -> Method:
    def run(messages: list[Message], budget: int, query: str) -> list[Message]:
        window = ModelWindow("bench", "bench", budget, budget, 0, "o200k_base", "explicit")
        return migrate(messages, window, strategy=strategy, reserve_output=0, query=query).messages

    return run


_WORD = re.compile(r"[a-z0-9]+")
_SUFFIXES = ("ing", "edly", "ed", "ies", "es", "s", "ly", "er")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _terms(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(text.lower())]


def _bm25(neighbours: bool) -> Method:
    """A plain BM25 over whole messages, the budget filled greedily by score (the yardstick)."""
    counter = counter_for("o200k_base")

    def run(messages: list[Message], budget: int, query: str) -> list[Message]:
        system, rest, question = messages[0], messages[1:-1], messages[-1]
        docs = [_terms(m.text) for m in rest]
        n = len(docs)
        avg = sum(map(len, docs)) / max(n, 1)
        df = Counter(t for doc in docs for t in set(doc))
        q = set(_terms(query))
        scores = []
        for i, doc in enumerate(docs):
            tf = Counter(doc)
            s = 0.0
            for t in q & tf.keys():
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * tf[t] * 2.2 / (tf[t] + 1.2 * (0.25 + 0.75 * len(doc) / avg))
            scores.append((s, i))
        used = counter.count_messages([system, question])
        keep: set[int] = set()
        for s, i in sorted(scores, key=lambda x: (-x[0], x[1])):
            if s <= 0:
                break
            group = [i]
            if neighbours:
                partner = i + 1 if rest[i].role == "user" else i - 1
                if 0 <= partner < n:
                    group.append(partner)
            for j in group:
                if j in keep:
                    continue
                cost = counter.count_messages([rest[j]]) - counter.count_messages([])
                if used + cost <= budget:
                    keep.add(j)
                    used += cost
        return [system, *(rest[i] for i in sorted(keep)), question]

    return run


def methods(strategies: Iterable[str] = STRATEGIES) -> dict[str, Method]:
    out: dict[str, Method] = {s: _ours(s) for s in strategies}
    out["BM25 (yardstick)"] = _bm25(neighbours=False)
    out["BM25 + neighbour (yardstick)"] = _bm25(neighbours=True)
    return out


# --- the run -------------------------------------------------------------------------------------


def run(
    quick: bool = False,
    *,
    data: str | os.PathLike[str] | None = None,
    histories: int | None = None,
    size: int = 130,
    questions_per_history: int | None = None,
    strategies: Iterable[str] = STRATEGIES,
) -> dict[str, Any]:
    """Evidence recall per method and budget: ``{"rows": [...], "questions": n, ...}``."""
    dialogues = load_dialogues(data_dir(data))
    count = histories if histories is not None else 2 if quick else 6
    per = questions_per_history if questions_per_history is not None else 10 if quick else 30
    table = methods(strategies)
    counter = counter_for("o200k_base")
    budgets = [f"{b // 1000}k" for b in ABSOLUTE] + [f"{int(s * 100)}%" for s in SHARES]
    hits: dict[tuple[str, str], float] = {}
    by_kind: dict[tuple[str, str], list[float]] = {}
    over: dict[str, int] = {}
    asked = 0
    tokens = []
    started = time.perf_counter()
    for seed in range(count):
        h = build_history(dialogues, seed, size)
        total = counter.count_messages(h.messages)
        tokens.append(total)
        limits = dict(zip(budgets, [*ABSOLUTE, *(int(total * s) for s in SHARES)], strict=True))
        for k, q in enumerate(h.questions[:per]):
            msgs = [*h.messages, _message("user", q.text, f"h{seed}-q{k}", h.asked_at)]
            asked += 1
            for name, method in table.items():
                for label, budget in limits.items():
                    sent = method(msgs, budget, q.text)
                    if counter.count_messages(sent) > budget:
                        over[name] = over.get(name, 0) + 1
                    text = "\n".join(m.text for m in sent)
                    # verbatim: the evidence turn's whole text is in what is sent
                    found = [_text_of(h.messages, e) in text for e in q.evidence]
                    score = sum(found) / len(found)
                    hits[(name, label)] = hits.get((name, label), 0.0) + score
                    if label == "8k":
                        by_kind.setdefault((name, q.kind), []).append(score)
    rows = [
        {"method": name, **{b: round(hits[(name, b)] / max(asked, 1), 3) for b in budgets}}
        for name in table
    ]
    kinds = sorted({k for _, k in by_kind})
    return {
        "questions": asked,
        "histories": count,
        "history_tokens": round(sum(tokens) / max(len(tokens), 1)),
        "budgets": budgets,
        "rows": rows,
        "kinds_at_8k": {
            name: {k: round(sum(v) / len(v), 3) for (n, k), v in by_kind.items() if n == name}
            for name in table
        },
        "kinds": kinds,
        "over_budget": over,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _text_of(messages: Sequence[Message], id: str) -> str:
    for m in messages:
        if m.id == id:
            return m.text
    raise KeyError(id)


def markdown(result: dict[str, Any]) -> str:
    heads = ["method", *result["budgets"]]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for row in result["rows"]:
        cells = [f"{row[b]:.3f}" for b in result["budgets"]]
        lines.append("| " + " | ".join([row["method"], *cells]) + " |")
    lines.append("")
    heads = ["method at 8k", *result["kinds"]]
    lines += ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for name, kinds in result["kinds_at_8k"].items():
        cells = [f"{kinds.get(k, float('nan')):.3f}" for k in result["kinds"]]
        lines.append("| " + " | ".join([name, *cells]) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="--locomo runs the LoCoMo benchmark instead (benchmarks/locomo.py): "
        "conversations people wrote, every strategy beside retrieval-only yardsticks.",
    )
    parser.add_argument("--quick", action="store_true", help="2 histories, 10 questions each")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--data", help="the SGD dev folder (dialogues_*.json)")
    parser.add_argument("--histories", type=int)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    lo = parser.add_argument_group("LoCoMo")
    lo.add_argument(
        "--locomo", nargs="?", const="", metavar="PATH",
        help="LoCoMo JSON (a folder or a file; default ../shared/data/locomo-dev beside the "
        "repository, or SESSION_MIGRATOR_LOCOMO_DIR); the full set is data/locomo10.json of "
        "the GitHub repository snap-research/locomo (CC BY-NC 4.0)",
    )  # fmt: skip
    lo.add_argument("--budgets", default="4k,8k,16k,10%,25%,50%",
                    help="tokens (4k, 4000) or shares of the conversation (25%%)")  # fmt: skip
    lo.add_argument("--every", type=int, default=1, help="every Nth question of each conversation")
    lo.add_argument("--modes", default="plain,dated", help="plain, dated (messages stamped)")
    lo.add_argument("--conversations", type=int, help="the first N conversations only")
    lo.add_argument("--no-dense", action="store_true", help="skip the dense and hybrid rows")
    lo.add_argument(
        "--out", type=Path, default=RESULTS_LOCOMO,
        help="the Markdown report to write (default benchmarks/results/retention_locomo.md)",
    )  # fmt: skip
    lo.add_argument("--no-save", action="store_true", help="print only")
    args = parser.parse_args(argv)
    strategies = [s for s in args.strategies.split(",") if s]
    if args.locomo is not None:
        return _main_locomo(args, strategies, argv)
    try:
        result = run(
            quick=args.quick,
            data=args.data,
            histories=args.histories,
            strategies=strategies,
        )
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        print(
            f"Evidence recall on SGD ({result['questions']} questions over "
            f"{result['histories']} histories of ~{result['history_tokens']:,} tokens; "
            f"{result['seconds']} s)"
        )
        print(markdown(result))
        if result["over_budget"]:
            print(f"OVER BUDGET: {result['over_budget']}")
    return 0


RESULTS_LOCOMO = Path(__file__).resolve().parent / "results" / "retention_locomo.md"


def _main_locomo(args: argparse.Namespace, strategies: list[str],
                 argv: Sequence[str] | None) -> int:  # fmt: skip
    from benchmarks import locomo

    try:
        result = locomo.run(
            args.locomo or None,
            budgets=args.budgets.split(","),
            strategies=strategies,
            modes=[m for m in args.modes.split(",") if m],
            every=args.every,
            conversations=args.conversations,
            dense=not args.no_dense,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    words = sys.argv[1:] if argv is None else list(argv)
    command = " ".join(["python -m benchmarks.retention", *words])
    report = locomo.report(result, command)
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        print(report)
    if not args.no_save:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report, encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
