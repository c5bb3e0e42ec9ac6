"""Recall across sessions on LoCoMo: each conversation's sessions stored as separate sessions of
one user, each question asked in a NEW session of that user (``python -m
benchmarks.cross_session [--every N] [--budgets 4k,8k] [--embeddings]``).

The history is LoCoMo's dated turns (see :mod:`benchmarks.locomo`): each LoCoMo session
``session_N`` becomes the stored session ``<conv>:s<N>`` of the user ``<conv>`` in a
``memory://`` store, its messages appended with their session's time. A question is asked the
way a new user of the library would: a fresh session of the same user holding only the
question, fitted by ``SessionFitter(..., recall_scope="user")`` (``strategy="auto"``) to a
window of exactly B o200k tokens with nothing reserved. The score is the share of the
question's evidence turns whose text reaches the model (the question and the system prompt
left out). The in-session row fits the whole conversation plus the question as one session
with ``migrate(strategy="auto")`` on the same questions (:mod:`benchmarks.locomo`'s
``auto, dated``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from benchmarks import locomo
from session_migrator import Message, ModelWindow, SessionFitter, counter_for, migrate
from session_migrator.store import open_store

CROSS = "cross-session (recall_scope=user, auto)"
IN_SESSION = "in-session auto, dated (one session)"


def _window(budget: int) -> ModelWindow:
    return ModelWindow("bench", "bench", budget, budget, 0, "o200k_base", "explicit")


def _stored(conv: locomo.Conversation, store: Any) -> None:
    """Each LoCoMo session of ``conv`` as its own stored session of the user ``conv.id``."""
    by_session: dict[int, list[Message]] = defaultdict(list)
    for n, m in zip(conv.session, conv.dated[1:], strict=True):
        by_session[n].append(m)
    for n, messages in by_session.items():
        store.append(
            f"{conv.id}:s{n}", messages, metadata={"user_id": conv.id, "title": f"session {n}"}
        )


def run(
    data: str | None = None,
    *,
    budgets: Sequence[str] = ("4k", "8k"),
    every: int = 1,
    conversations: int | None = None,
    embeddings: Any = None,
    in_session: bool = True,
) -> dict[str, Any]:
    """The share of evidence turns reaching the model, per budget, across sessions and (with
    ``in_session``) within one session, on the same questions."""
    convs = locomo.load(locomo.data_files(data))[:conversations]
    labels = locomo.parse_budgets(budgets)
    counter = counter_for("o200k_base")
    scores: dict[tuple[str, str], list[float]] = defaultdict(list)
    over: dict[str, int] = defaultdict(int)
    started = time.perf_counter()
    asked = 0
    for conv in convs:
        store = open_store("memory://")
        _stored(conv, store)
        by_id = {m.id: m.text for m in conv.plain}
        for k, q in enumerate(conv.questions[:: max(every, 1)]):
            asked += 1
            qid = f"{conv.id}:question-{k}"
            question = Message("user", q.text, id=qid, timestamp=conv.asked_at)
            session = f"{conv.id}:new-{k}"
            fitter = SessionFitter(
                session,
                store=store,
                recall_scope="user",
                metadata={"user_id": conv.id},
                reserve_output=0,
                embeddings=embeddings,
            )
            fitter.append([question])
            for label in labels:
                budget = locomo._tokens(label, 0)
                sent = fitter.fit(_window(budget)).messages
                if counter.count_messages(sent) > budget:
                    over[CROSS] += 1
                text = "\n".join(m.text for m in sent if m.id != qid)
                scores[(CROSS, label)].append(
                    sum(by_id[e] in text for e in q.evidence) / len(q.evidence)
                )
                if in_session:
                    result = migrate(
                        [*conv.dated, question],
                        _window(budget),
                        strategy="auto",
                        reserve_output=0,
                        query=q.text,
                        embeddings=embeddings,
                    )
                    text = "\n".join(
                        m.text for m in result.messages if m.id not in (qid, conv.dated[0].id)
                    )
                    scores[(IN_SESSION, label)].append(
                        sum(by_id[e] in text for e in q.evidence) / len(q.evidence)
                    )
            store.delete_session(session)
        store.close()
    rows = [CROSS, IN_SESSION] if in_session else [CROSS]
    return {
        "questions": asked,
        "conversations": [c.id for c in convs],
        "budgets": labels,
        "every": max(every, 1),
        "embeddings": embeddings is not None,
        "evidence_recall": {
            name: {
                label: round(sum(v) / len(v), 3) if (v := scores[(name, label)]) else None
                for label in labels
            }
            for name in rows
        },
        "over_budget": dict(over),
        "seconds": round(time.perf_counter() - started, 1),
    }


def markdown(result: dict[str, Any]) -> str:
    labels = result["budgets"]
    lines = [
        f"{result['questions']} LoCoMo questions (every {result['every']}th) over "
        f"{len(result['conversations'])} conversations; embeddings: "
        f"{'yes' if result['embeddings'] else 'no'}; {result['seconds']} s",
        "",
        "| method | " + " | ".join(labels) + " |",
        "|---|" + "---:|" * len(labels),
    ]
    for name, row in result["evidence_recall"].items():
        lines.append(f"| {name} | " + " | ".join(f"{row[b]:.3f}" for b in labels) + " |")
    if result["over_budget"]:
        lines.append(f"\nOVER BUDGET: {result['over_budget']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cross_session")
    parser.add_argument("--locomo", default=None, help="LoCoMo JSON file or folder")
    parser.add_argument("--budgets", default="4k,8k")
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--embeddings", action="store_true", help="with the local MiniLM")
    parser.add_argument("--no-in-session", action="store_true")
    args = parser.parse_args(argv)
    embeddings = None
    if args.embeddings:
        from session_migrator import local_embeddings

        embeddings = local_embeddings(timeout=600)
    try:
        result = run(
            args.locomo,
            budgets=args.budgets.split(","),
            every=args.every,
            conversations=args.conversations,
            embeddings=embeddings,
            in_session=not args.no_in_session,
        )
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
