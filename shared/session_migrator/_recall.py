"""Full-text relevance ranking with SQLite FTS5 (bm25), from the standard library.

Used by the ``recall`` strategy to bring back the cut turns that matter for the current question.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence

__all__ = ["rank_by_relevance"]

_WORD = re.compile(r"\w{2,}", re.UNICODE)
_STOP = frozenset(
    """
    a an and are as at be but by can could did do does for from had has have how i if in into
    is it its me my no not of on or our please so than that the their them then there these
    they this to us was we were what when where which who why will with would you your yes ok
    okay about again also any just like more most some such tell know want need give get let
    """.split()
)


def query_terms(query: str) -> list[str]:
    """The distinct searchable words of ``query`` (stop words dropped), in order."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        if word not in _STOP:
            seen.setdefault(word, None)
    return list(seen)


def rank_by_relevance(documents: Sequence[str], query: str) -> list[tuple[int, float]]:
    """Indices of ``documents`` matching ``query``, most relevant first, with bm25 scores.

    Scores are negated bm25 (higher is better); ties go to the later document. Documents with no
    query word are left out. Porter stemming and Unicode folding apply.
    """
    terms = query_terms(query)
    if not terms or not documents:
        return []
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    con = sqlite3.connect(":memory:")
    try:
        con.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize='porter unicode61')")
        con.executemany(
            "INSERT INTO docs(rowid, body) VALUES (?, ?)",
            ((i + 1, text) for i, text in enumerate(documents)),
        )
        rows = con.execute(
            "SELECT rowid, bm25(docs) FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), rowid DESC",
            (match,),
        ).fetchall()
    finally:
        con.close()
    return [(int(rowid) - 1, -float(score)) for rowid, score in rows]
