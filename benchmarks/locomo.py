"""Evidence retention on conversations people wrote: LoCoMo (``python -m benchmarks.retention
--locomo [PATH]``).

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL
2024; CC BY-NC 4.0, evaluation only) holds very long conversations between two people over
months, and questions about them whose evidence is annotated by turn. The data is read at run
time from ``PATH`` (a folder of LoCoMo JSON files, or one file; default
``../shared/data/locomo-dev`` beside the repository, or ``SESSION_MIGRATOR_LOCOMO_DIR``), never
copied into the project: the whole set is ``data/locomo10.json`` of the GitHub repository
snap-research/locomo.

**History.** One conversation is one history: a short system prompt, then every turn of every
session in order, ``speaker_a``'s as user messages and ``speaker_b``'s as assistant messages,
each written ``"Name: text"`` (a shared image as ``[shares <its caption>]``, as LoCoMo's own
evaluation writes it). *Plain*: the messages carry no time. *Dated*: each carries its session's
date and time in ``Message.timestamp`` (the field a store stamps on append; 30 s apart within a
session), and the question is asked a day after the last session.

**Question.** Each LoCoMo question is asked as the newest user message, after the whole
conversation. The input budget is exactly B o200k tokens with nothing reserved
(``ModelWindow(..., context_window=B, max_input_tokens=B, max_output_tokens=0)``,
``reserve_output=0``). Budgets: 4k, 8k, 16k tokens, and 10, 25, 50% of the conversation's tokens.

**Scores**, averaged over questions, from what ``migrate()`` (or a yardstick) returns, the system
prompt and the question itself left out:

- *evidence recall*: the share of the question's evidence turns (``evidence``, by ``dia_id``)
  whose text is present verbatim;
- *answer presence*: the share of the answer's parts (a multi-hop answer's comma-separated
  items, an open-domain answer's first ``;`` alternative, else the whole answer) present in the
  text, both normalised as LoCoMo's evaluation does (lower case, no punctuation, no articles,
  whitespace collapsed). Adversarial questions (category 5) have no answer and are left out of
  it. Many answers are written by the annotators (dates worked out from "yesterday",
  inferences), so even the whole conversation holds only part of them: the *whole conversation*
  row is that ceiling.

**Categories**, LoCoMo's numbers: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
5 adversarial (its ``task_eval/evaluation.py`` scores category 1 by comma-separated answer items,
takes category 3's first ``;`` alternative and scores category 5 by "not mentioned"; its
``evaluation_stats.py`` prints them as 4, 1, 2, 3, 5, the paper's column order single-hop,
multi-hop, temporal, open-domain, adversarial).

**Yardsticks in the same run** (retrieval alone: the system prompt and the question, then turns
added by rank while they fit, the whole budget filled, sent in the conversation's order):
``trim``; BM25 over whole turns (the SGD benchmark's naive suffix stripper, k1 1.2, b 0.75;
turns without a query word ranked newest first); BM25 + neighbour turns (each hit with the turns
just before and after it in its session); dense (all-MiniLM-L6-v2 cosine, see
:mod:`benchmarks._minilm`); hybrid (reciprocal-rank fusion, k = 60, of the BM25 and dense
ranks). The dense rows say how to install them where the ``local-embeddings`` extra is missing.
"""

from __future__ import annotations

import json
import math
import os
import re
import string
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import _minilm
from benchmarks.retention import _terms
from session_migrator import (
    Embeddings,
    Message,
    ModelWindow,
    counter_for,
    local_embeddings,
    migrate,
)

STRATEGIES = ("trim", "summarize", "recall", "auto")
BUDGETS = ("4k", "8k", "16k", "10%", "25%", "50%")
MODES = ("plain", "dated")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo-dev"
WHERE = (
    "LoCoMo's data/locomo10.json (GitHub: snap-research/locomo; CC BY-NC 4.0): pass its folder "
    "or file as --locomo PATH, or set SESSION_MIGRATOR_LOCOMO_DIR"
)
RRF_K = 60
BM25 = "BM25 fill (yardstick)"
BM25_NEIGHBOURS = "BM25 + neighbour turns (yardstick)"
DENSE = "dense fill, all-MiniLM-L6-v2 (yardstick)"
HYBRID = "hybrid, RRF k=60 of BM25 and dense (yardstick)"
WHOLE = "whole conversation (ceiling)"


# --- the data ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]  # message ids
    answer: tuple[str, ...]  # normalised parts; () for adversarial questions


@dataclass
class Conversation:
    id: str
    plain: list[Message]  # system prompt + turns, no times
    dated: list[Message]  # the same, each stamped with its session's time
    session: list[int]  # the session of each turn (index into plain[1:])
    asked_at: datetime
    questions: list[Question]
    skipped: int  # questions without evidence that names a turn


def data_files(given: str | os.PathLike[str] | None = None) -> list[Path]:
    """The LoCoMo JSON files at ``given`` (a file or a folder), ``SESSION_MIGRATOR_LOCOMO_DIR``,
    or beside the repository."""
    path = Path(given or os.environ.get("SESSION_MIGRATOR_LOCOMO_DIR") or DEFAULT_DATA)
    files = [path] if path.is_file() else sorted(path.glob("*.json")) if path.is_dir() else []
    if not files:
        raise FileNotFoundError(f"no LoCoMo JSON at {path}: {WHERE}")
    return files


def _when(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` (LoCoMo's session_N_date_time), as UTC."""
    clean = " ".join(text.replace(",", " ").split())
    for fmt in ("%I:%M %p on %d %B %Y", "%I:%M %p on %B %d %Y", "%d %B %Y"):
        try:
            return datetime.strptime(clean, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unknown LoCoMo date {text!r}")


_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalise(text: str) -> str:
    """LoCoMo's ``normalize_answer``: lower case, commas and punctuation out, articles out."""
    text = text.replace(",", "").lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _answer_parts(qa: dict[str, Any]) -> tuple[str, ...]:
    if qa.get("category") == 5 or qa.get("answer") is None:
        return ()
    answer = str(qa["answer"])
    if qa["category"] == 3:
        answer = answer.split(";")[0]
    parts = answer.split(",") if qa["category"] == 1 else [answer]
    return tuple(p for p in (normalise(x) for x in parts) if p)


def load(files: Sequence[Path]) -> list[Conversation]:
    out = []
    for file in files:
        raw = json.loads(file.read_text(encoding="utf-8"))
        for sample in raw if isinstance(raw, list) else [raw]:
            out.append(_conversation(sample))
    return out


def _conversation(sample: dict[str, Any]) -> Conversation:
    c = sample["conversation"]
    sid = str(sample.get("sample_id", "conv"))
    a, b = c["speaker_a"], c["speaker_b"]
    system = (
        f"You are talking with {a} and {b}, who have been chatting over many months. Answer "
        "questions about their conversations."
    )
    plain = [Message("system", system, id=f"{sid}:system")]
    dated = [Message("system", system, id=f"{sid}:system")]
    session: list[int] = []
    numbers = sorted(int(k.split("_")[1]) for k in c if re.fullmatch(r"session_\d+", k))
    last = datetime(2000, 1, 1, tzinfo=UTC)
    for n in numbers:
        turns = c[f"session_{n}"]
        if not turns:
            continue
        start = _when(c[f"session_{n}_date_time"])
        for i, t in enumerate(turns):
            text = f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                text += f" [shares {t['blip_caption']}]"
            role = "user" if t["speaker"] == a else "assistant"
            mid = f"{sid}:{t['dia_id']}"
            when = start + timedelta(seconds=30 * i)
            plain.append(Message(role, text, id=mid))
            dated.append(Message(role, text, id=mid, timestamp=when))
            session.append(n)
            last = max(last, when)
    ids = {m.id for m in plain}
    questions = []
    skipped = 0
    for qa in sample["qa"]:
        # a few evidence entries hold two ids ("D8:6; D9:17")
        found = [
            f"{sid}:{e}" for item in qa.get("evidence", []) for e in re.findall(r"D\d+:\d+", item)
        ]
        evidence = tuple(dict.fromkeys(e for e in found if e in ids))
        if not evidence:
            skipped += 1
            continue
        questions.append(Question(qa["question"], int(qa["category"]), evidence, _answer_parts(qa)))
    return Conversation(sid, plain, dated, session, last + timedelta(days=1), questions, skipped)


# --- the methods ---------------------------------------------------------------------------------

# (history, question message, budget) -> what is sent
Method = Callable[[list[Message], Message, int], list[Message]]


def _ours(strategy: str, embeddings: Embeddings | None = None) -> Method:
    def run(history: list[Message], question: Message, budget: int) -> list[Message]:
        window = ModelWindow("bench", "bench", budget, budget, 0, "o200k_base", "explicit")
        result = migrate(
            [*history, question],
            window,
            strategy=strategy,
            reserve_output=0,
            query=question.text,
            embeddings=embeddings,
        )
        if embeddings is not None and result.report.fallbacks:
            raise RuntimeError(f"the embeddings fell back: {result.report.fallbacks}")
        return result.messages

    return run


class Index:
    """One conversation's turns for the retrieval yardsticks: BM25 postings, the turns' token
    costs and, where the dense extra is there, their unit vectors."""

    def __init__(self, conv: Conversation, dense: bool) -> None:
        self.conv = conv
        counter = counter_for("o200k_base")
        turns = conv.plain[1:]
        base = counter.count_messages([])
        self.cost = [counter.count_messages([m]) - base for m in turns]
        docs = [_terms(m.text) for m in turns]
        self.n = len(docs)
        self.lengths = np.array([len(d) for d in docs], dtype=np.float64)
        self.avg = float(self.lengths.mean()) if self.n else 0.0
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for i, doc in enumerate(docs):
            for term, tf in Counter(doc).items():
                self.postings[term].append((i, tf))
        self.vectors = _minilm.load().embed([m.text for m in turns]) if dense else None

    def bm25(self, query: str) -> list[int]:
        scores = np.zeros(self.n)
        for term in set(_terms(query)):
            posting = self.postings.get(term)
            if not posting:
                continue
            df = len(posting)
            idf = math.log(1 + (self.n - df + 0.5) / (df + 0.5))
            for i, tf in posting:
                norm = 1.2 * (0.25 + 0.75 * self.lengths[i] / self.avg)
                scores[i] += idf * tf * 2.2 / (tf + norm)
        # best first; turns the query does not touch, newest first
        return sorted(range(self.n), key=lambda i: (-scores[i], -i))

    def dense(self, query_vector: np.ndarray) -> list[int]:
        assert self.vectors is not None
        sims = self.vectors @ query_vector
        return sorted(range(self.n), key=lambda i: (-float(sims[i]), -i))

    def neighbours(self, ranking: Sequence[int]) -> list[int]:
        out: list[int] = []
        for i in ranking:
            for j in (i, i - 1, i + 1):
                if 0 <= j < self.n and self.conv.session[j] == self.conv.session[i]:
                    out.append(j)
        return out

    def fill(self, ranking: Iterable[int], question: Message, budget: int) -> list[Message]:
        """System prompt and question, then turns by rank while they fit; conversation order."""
        counter = counter_for("o200k_base")
        system = self.conv.plain[0]
        used = counter.count_messages([system, question])
        keep: set[int] = set()
        for i in ranking:
            if i in keep:
                continue
            if used + self.cost[i] <= budget:
                keep.add(i)
                used += self.cost[i]
        turns = self.conv.plain[1:]
        return [system, *(turns[i] for i in sorted(keep)), question]


def rrf(*rankings: Sequence[int], k: int = RRF_K) -> list[int]:
    """Reciprocal-rank fusion: the sum of 1 / (k + rank), ranks from 1."""
    score: dict[int, float] = defaultdict(float)
    for ranking in rankings:
        for rank, i in enumerate(ranking, start=1):
            score[i] += 1.0 / (k + rank)
    return sorted(score, key=lambda i: (-score[i], -i))


# --- scoring -------------------------------------------------------------------------------------


def _scores(sent: Sequence[Message], q: Question, question_id: str, by_id: dict[str, str],
            system_id: str) -> tuple[float, float | None]:  # fmt: skip
    text = "\n".join(m.text for m in sent if m.id not in (question_id, system_id))
    evidence = sum(by_id[e] in text for e in q.evidence) / len(q.evidence)
    if not q.answer:
        return evidence, None
    flat = f" {normalise(text)} "
    return evidence, sum(f" {p} " in flat for p in q.answer) / len(q.answer)


def parse_budgets(spec: Iterable[str]) -> list[str]:
    out = []
    for raw in spec:
        label = raw.strip().lower()
        if not label:
            continue
        if not re.fullmatch(r"\d+(k|%)?", label):
            raise ValueError(f"budget {raw!r}: use 4k, 4000 or 25%")
        out.append(label)
    return out


def _tokens(label: str, total: int) -> int:
    if label.endswith("%"):
        return int(total * int(label[:-1]) / 100)
    if label.endswith("k"):
        return int(label[:-1]) * 1000
    return int(label)


# --- the run -------------------------------------------------------------------------------------


def run(
    data: str | os.PathLike[str] | None = None,
    *,
    budgets: Iterable[str] = BUDGETS,
    strategies: Iterable[str] = STRATEGIES,
    modes: Iterable[str] = MODES,
    every: int = 1,
    conversations: int | None = None,
    dense: bool = True,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Evidence recall and answer presence per method, budget and category.

    ``every``: every Nth question of each conversation (from its first); ``conversations``: the
    first N conversations only; ``dense``: run the dense and hybrid yardsticks where the
    ``local-embeddings`` extra and the weights are installed (else their rows say how to install
    them)."""
    labels = parse_budgets(budgets)
    strategies = list(strategies)
    modes = list(modes)
    unknown = set(modes) - set(MODES)
    if unknown:
        raise ValueError(f"modes: {sorted(unknown)} (known: plain, dated)")
    convs = load(data_files(data))[:conversations]
    dense_skip = _minilm.missing() if dense else "not run (dense=False)"
    methods: dict[str, tuple[str, Method | None]] = {}
    for mode in modes:
        for s in strategies:
            methods[s if mode == "plain" else f"{s}, dated"] = (mode, _ours(s))
    if dense_skip is None:
        # the library's hybrid recall with its local model (the MiniLM, local_embeddings()),
        # through the public API: each message embedded once (kept in the model's memory),
        # then each question
        minilm = local_embeddings(timeout=600)
        for mode in modes:
            for s in [s for s in strategies if s in ("recall", "auto")]:
                name = f"{s}, embeddings" if mode == "plain" else f"{s}, dated, embeddings"
                methods[name] = (mode, _ours(s, minilm))
    yardsticks = [BM25, BM25_NEIGHBOURS, DENSE, HYBRID]
    rows = [*methods, *yardsticks, WHOLE]
    evidence: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    answers: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    seconds: dict[str, float] = defaultdict(float)
    over: dict[str, int] = {}
    asked = 0
    tokens = []
    started = time.perf_counter()
    for conv in convs:
        t0 = time.perf_counter()
        index = Index(conv, dense=dense_skip is None)
        seconds["dense: embedding the turns"] += (
            time.perf_counter() - t0 if dense_skip is None else 0
        )
        counter = counter_for("o200k_base")
        total = counter.count_messages(conv.plain)
        tokens.append(total)
        limits = {label: _tokens(label, total) for label in labels}
        by_id = {m.id: m.text for m in conv.plain}
        system_id = conv.plain[0].id
        picked = conv.questions[:: max(every, 1)]
        if progress:
            progress(f"{conv.id}: {len(picked)} questions, {total:,} tokens")
        qvecs = None
        if dense_skip is None:
            t0 = time.perf_counter()
            qvecs = _minilm.load().embed([q.text for q in picked])
            seconds["dense: embedding the questions"] += time.perf_counter() - t0
        for k, q in enumerate(picked):
            asked += 1
            qid = f"{conv.id}:question-{k}"
            questions = {
                "plain": Message("user", q.text, id=qid),
                "dated": Message("user", q.text, id=qid, timestamp=conv.asked_at),
            }
            t0 = time.perf_counter()
            bm25 = index.bm25(q.text)
            seconds["BM25 ranking"] += time.perf_counter() - t0
            rankings: dict[str, list[int]] = {BM25: bm25, BM25_NEIGHBOURS: index.neighbours(bm25)}
            if qvecs is not None:
                dense_rank = index.dense(qvecs[k])
                rankings[DENSE] = dense_rank
                rankings[HYBRID] = rrf(bm25, dense_rank)
            whole_e, whole_a = _scores(conv.plain, q, qid, by_id, system_id)
            for label, budget in limits.items():
                cells: dict[str, list[Message]] = {}
                for name, (mode, method) in methods.items():
                    assert method is not None
                    t0 = time.perf_counter()
                    history = conv.plain if mode == "plain" else conv.dated
                    cells[name] = method(history, questions[mode], budget)
                    seconds[name] += time.perf_counter() - t0
                for name, ranking in rankings.items():
                    t0 = time.perf_counter()
                    cells[name] = index.fill(ranking, questions["plain"], budget)
                    seconds[name] += time.perf_counter() - t0
                for name, sent in cells.items():
                    if counter.count_messages(sent) > budget:
                        over[name] = over.get(name, 0) + 1
                    e, a = _scores(sent, q, qid, by_id, system_id)
                    evidence[(name, label, q.category)].append(e)
                    if a is not None:
                        answers[(name, label, q.category)].append(a)
                evidence[(WHOLE, label, q.category)].append(whole_e)
                if whole_a is not None:
                    answers[(WHOLE, label, q.category)].append(whole_a)

    def mean(table: dict[tuple[str, str, int], list[float]], name: str, label: str,
             cats: Iterable[int] = CATEGORIES) -> float | None:  # fmt: skip
        values = [v for c in cats for v in table.get((name, label, c), [])]
        return round(sum(values) / len(values), 3) if values else None

    counts = Counter(q.category for conv in convs for q in conv.questions[:: max(every, 1)])
    skipped = {DENSE: dense_skip, HYBRID: dense_skip} if dense_skip else {}
    return {
        "dataset": "LoCoMo",
        "files": [str(f) for f in data_files(data)],
        "conversations": [c.id for c in convs],
        "conversation_tokens": tokens,
        "questions": asked,
        "every": max(every, 1),
        "questions_without_evidence": sum(c.skipped for c in convs),
        "categories": {CATEGORIES[c]: counts.get(c, 0) for c in CATEGORIES},
        "budgets": labels,
        "rows": rows,
        "skipped": skipped,
        "evidence_recall": {
            name: {label: mean(evidence, name, label) for label in labels} for name in rows
        },
        "answer_presence": {
            name: {label: mean(answers, name, label) for label in labels} for name in rows
        },
        "answer_questions": sum(counts.get(c, 0) for c in (1, 2, 3, 4)),
        "evidence_by_category": {
            label: {
                name: {CATEGORIES[c]: mean(evidence, name, label, [c]) for c in CATEGORIES}
                for name in rows
            }
            for label in labels
        },
        "answer_by_category": {
            label: {
                name: {CATEGORIES[c]: mean(answers, name, label, [c]) for c in (1, 2, 3, 4)}
                for name in rows
            }
            for label in labels
        },
        "over_budget": over,
        "seconds_by_method": {k: round(v, 1) for k, v in seconds.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }


# --- the report ----------------------------------------------------------------------------------


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _table(result: dict[str, Any], scores: dict[str, dict[str, float | None]],
           heads: Sequence[str]) -> list[str]:  # fmt: skip
    lines = ["| method | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(heads)]
    for name in result["rows"]:
        if name in result["skipped"]:
            lines.append(f"| {name} | {result['skipped'][name]} |" + " |" * (len(heads) - 1))
            continue
        lines.append(f"| {name} | " + " | ".join(_cell(scores[name].get(h)) for h in heads) + " |")
    return lines


def summary_line(result: dict[str, Any]) -> str:
    toks = result["conversation_tokens"]
    every = f", every {result['every']}th question" if result["every"] > 1 else ""
    return (
        f"{result['questions']} questions{every} over {len(toks)} conversations "
        f"({', '.join(result['conversations'])}) of {min(toks):,} to {max(toks):,} o200k tokens; "
        f"{result['seconds']} s"
    )


def markdown(result: dict[str, Any]) -> str:
    labels = result["budgets"]
    cats = [CATEGORIES[c] for c in CATEGORIES]
    counts = result["categories"]
    lines = [
        "Evidence recall (the share of each question's evidence turns sent verbatim):",
        "",
        *_table(result, result["evidence_recall"], labels),
        "",
        f"Answer presence (the share of the normalised answer found in what is sent; "
        f"{result['answer_questions']} questions of categories 1-4):",
        "",
        *_table(result, result["answer_presence"], labels),
    ]
    for label in labels:
        if label.endswith("%"):
            continue
        heads = [f"{c} ({counts[c]})" for c in cats]
        by = {
            name: {f"{c} ({counts[c]})": v for c, v in row.items()}
            for name, row in result["evidence_by_category"][label].items()
        }
        lines += ["", f"Evidence recall by category at {label} (questions):", ""]
        lines += _table(result, by, heads)
    if result["over_budget"]:
        lines += ["", f"OVER BUDGET: {result['over_budget']}"]
    timing = ", ".join(f"{k} {v} s" for k, v in result["seconds_by_method"].items())
    lines += ["", f"Time spent, by method (all budgets and questions): {timing}."]
    return "\n".join(lines)


def report(result: dict[str, Any], command: str) -> str:
    """The Markdown saved as ``benchmarks/results/retention_locomo.md``."""
    import platform

    from session_migrator import __version__

    date = datetime.now(UTC).isoformat(timespec="minutes")
    return "\n".join(
        [
            "# Evidence retention on LoCoMo (conversations people wrote)",
            "",
            f"Made with `{command}` on {date[:10]} ({os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}, session-migrator {__version__}): "
            f"{summary_line(result)}. Method: `benchmarks/locomo.py`; data: LoCoMo (Maharana "
            "et al., ACL 2024; CC BY-NC 4.0), read at run time, not in this repository. "
            "Budgets: exactly B o200k tokens, nothing reserved; plain rows send messages without "
            "times, dated rows with each session's date in `Message.timestamp`. Categories: "
            "LoCoMo's 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial.",
            "",
            markdown(result),
            "",
        ]
    )
