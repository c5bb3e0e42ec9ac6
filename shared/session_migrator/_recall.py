"""Full-text relevance ranking with SQLite FTS5 (bm25), from the standard library.

Used by the ``recall`` strategy to bring back the cut turns that matter for the current question.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Generic, TypeVar

__all__ = ["RelevanceIndex", "rank_by_relevance"]

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


#: A long question is searched by this many of its words, the rarest in the documents: bm25
#: gives common words little weight anyway, and each word's postings cost time.
MAX_QUERY_TERMS = 16
_TOKENIZER = "porter unicode61"
_RANK = "SELECT rowid, bm25(docs) FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), rowid DESC"


def _open(con: sqlite3.Connection) -> None:
    """The (contentless) document table, its vocabulary, and a scratch table that stems words."""
    con.execute(f"CREATE VIRTUAL TABLE docs USING fts5(body, content='', tokenize='{_TOKENIZER}')")
    con.execute("CREATE VIRTUAL TABLE docs_vocab USING fts5vocab(docs, 'row')")
    con.execute(f"CREATE VIRTUAL TABLE words USING fts5(body, tokenize='{_TOKENIZER}')")
    con.execute("CREATE VIRTUAL TABLE words_vocab USING fts5vocab(words, 'instance')")


def _match(con: sqlite3.Connection, terms: list[str]) -> str:
    """The MATCH expression for ``terms``: all of them, or the :data:`MAX_QUERY_TERMS` rarest in
    the documents (by how many documents hold their stems; ties to the earlier word).
    """
    if len(terms) > MAX_QUERY_TERMS:
        con.execute("DELETE FROM words")
        con.executemany(
            "INSERT INTO words(rowid, body) VALUES (?, ?)",
            ((k + 1, t) for k, t in enumerate(terms)),
        )
        stems: dict[str, list[int]] = {}
        for stem, doc in con.execute("SELECT term, doc FROM words_vocab"):
            stems.setdefault(stem, []).append(int(doc) - 1)
        held = dict(
            con.execute(
                f"SELECT term, doc FROM docs_vocab WHERE term IN ({', '.join('?' * len(stems))})",
                list(stems),
            ).fetchall()
        )
        rarity = [0] * len(terms)
        for stem, positions in stems.items():
            for k in positions:
                rarity[k] = max(rarity[k], int(held.get(stem, 0)))
        # words found in no document match nothing: they cannot make a document relevant
        found = [k for k in range(len(terms)) if rarity[k] > 0]
        found.sort(key=lambda k: (rarity[k], k))
        terms = [terms[k] for k in sorted(found[:MAX_QUERY_TERMS])]
        if not terms:
            return ""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def rank_by_relevance(documents: Sequence[str], query: str) -> list[tuple[int, float]]:
    """Indices of ``documents`` matching ``query``, most relevant first, with bm25 scores.

    Scores are negated bm25 (higher is better); ties go to the later document. Documents with no
    query word are left out. Porter stemming and Unicode folding apply. A question of more than
    :data:`MAX_QUERY_TERMS` words is searched by its rarest ones.
    """
    terms = query_terms(query)
    if not terms or not documents:
        return []
    con = sqlite3.connect(":memory:")
    try:
        _open(con)
        con.executemany(
            "INSERT INTO docs(rowid, body) VALUES (?, ?)",
            ((i + 1, text) for i, text in enumerate(documents)),
        )
        match = _match(con, terms)
        rows = con.execute(_RANK, (match,)).fetchall() if match else []
    finally:
        con.close()
    return [(int(rowid) - 1, -float(score)) for rowid, score in rows]


_Doc = TypeVar("_Doc")


class RelevanceIndex(Generic[_Doc]):
    """A full-text index kept between rankings, for documents keyed by increasing integers.

    :meth:`sync` makes it hold exactly the given documents, indexing only the new ones (the
    others are dropped), so that re-ranking a conversation whose cut part grew by a turn costs
    that turn, not the whole cut part. :meth:`rank` gives what :func:`rank_by_relevance` gives
    for the same documents in key order (bm25 reads the same statistics), with keys instead of
    positions. The table is contentless: no copy of the text is kept. Not thread-safe: its
    owner serialises access.
    """

    def __init__(self, text: Callable[[_Doc], str]) -> None:
        self._text = text
        self._con = sqlite3.connect(":memory:", check_same_thread=False)
        _open(self._con)
        self._docs: dict[int, _Doc] = {}
        self._ranked: tuple[str, list[tuple[int, float]]] | None = None  # the last ranking

    def keys(self) -> list[int]:
        """The keys of the documents held, in increasing order."""
        return sorted(self._docs)

    def sync(self, documents: Mapping[int, _Doc]) -> None:
        """Hold exactly ``documents`` (key -> document; ``text(document)`` is called only for the
        documents to index or to drop, and must give the same text every time).
        """
        held = self._docs
        gone = [k for k in held if k not in documents]
        new = [k for k in documents if k not in held]
        if gone or new:
            self._ranked = None
        if gone:
            # a contentless table forgets a row given the text it was indexed with
            self._con.executemany(
                "INSERT INTO docs(docs, rowid, body) VALUES('delete', ?, ?)",
                [(k + 1, self._text(held.pop(k))) for k in gone],
            )
        if new:
            # a generator: one document's text at a time, never all of them at once
            self._con.executemany(
                "INSERT INTO docs(rowid, body) VALUES (?, ?)",
                ((k + 1, self._text(documents[k])) for k in new),
            )
            for k in new:
                held[k] = documents[k]

    def rank(self, query: str) -> list[tuple[int, float]]:
        """Keys of the documents matching ``query``, most relevant first (ties: later key).

        The same query on the same documents is answered from the last ranking.
        """
        if self._ranked is not None and self._ranked[0] == query:
            return list(self._ranked[1])
        terms = query_terms(query)
        if not terms or not self._docs:
            return []
        match = _match(self._con, terms)
        rows = self._con.execute(_RANK, (match,)).fetchall() if match else []
        ranked = [(int(rowid) - 1, -float(score)) for rowid, score in rows]
        self._ranked = (query, ranked)
        return list(ranked)

    def close(self) -> None:
        self._con.close()
