"""Full-text relevance ranking with SQLite FTS5 (bm25), from the standard library.

Used by the ``recall`` strategy to bring back the cut turns that matter for the current question:
:func:`recall_turns` ranks the whole cut turns and takes the best that fit, in their order.
"""

from __future__ import annotations

import itertools
import re
import sqlite3
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Generic, TypeVar

from session_migrator._fit import Layout, Unit
from session_migrator._messages import Message
from session_migrator._tokens import TokenCounter

__all__ = ["RelevanceIndex", "rank_by_relevance", "recall_turns"]

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
#: Keys (rowid - 1) and scores (negated bm25: higher is better), best first, ties to the later.
_RANK = "SELECT rowid - 1, -bm25(docs) FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), rowid DESC"


#: The scratch table's columns: a question's words are stemmed this many to a row, one a column.
_WIDE = 64
_COLUMNS = [f"c{k}" for k in range(_WIDE)]


def _open(con: sqlite3.Connection) -> None:
    """The (contentless) document table and its vocabulary."""
    con.execute(f"CREATE VIRTUAL TABLE docs USING fts5(body, content='', tokenize='{_TOKENIZER}')")
    con.execute("CREATE VIRTUAL TABLE docs_vocab USING fts5vocab(docs, 'row')")


def _open_scratch(con: sqlite3.Connection) -> None:
    """A contentless scratch table that stems words (one a column) and counts a batch of
    documents' words (in its first column); only a question of more than
    :data:`MAX_QUERY_TERMS` words, or a kept index, needs it.
    """
    columns = ", ".join(_COLUMNS)
    con.execute(
        f"CREATE VIRTUAL TABLE words USING fts5({columns}, content='', tokenize='{_TOKENIZER}')"
    )
    con.execute("CREATE VIRTUAL TABLE words_stems USING fts5vocab(words, 'instance')")
    con.execute("CREATE VIRTUAL TABLE words_docs USING fts5vocab(words, 'row')")


def _scratch(con: sqlite3.Connection, rows: Iterable[Sequence[int | str]]) -> None:
    """Make the scratch table hold exactly ``rows``: each a rowid, then texts for its first
    columns.
    """
    con.execute("INSERT INTO words(words) VALUES ('delete-all')")
    for length, batch in itertools.groupby(rows, len):
        names = ", ".join(_COLUMNS[: length - 1])
        marks = ", ".join("?" * length)
        con.executemany(f"INSERT INTO words(rowid, {names}) VALUES ({marks})", batch)


#: How many documents hold a stem, given the stems (absent ones: in none).
_Counts = Callable[[sqlite3.Connection, list[str]], Mapping[str, int]]


def _counts_from_vocab(con: sqlite3.Connection, stems: list[str]) -> dict[str, int]:
    """From the documents' vocabulary (which reads each stem's whole document list)."""
    marks = ", ".join("?" * len(stems))
    rows = con.execute(f"SELECT term, doc FROM docs_vocab WHERE term IN ({marks})", stems)
    return dict(rows.fetchall())


class _Stems:
    """Each word's stems (the tokens the documents' tokenizer makes of it), remembered."""

    def __init__(self) -> None:
        self.of: dict[str, tuple[str, ...]] = {}

    def learn(self, con: sqlite3.Connection, words: list[str]) -> None:
        new = [w for w in dict.fromkeys(words) if w not in self.of]
        if not new:
            return
        _scratch(
            con,
            ((k // _WIDE + 1, *new[k : k + _WIDE]) for k in range(0, len(new), _WIDE)),
        )
        found: dict[str, list[str]] = {w: [] for w in new}
        column = {name: k for k, name in enumerate(_COLUMNS)}
        for stem, doc, col in con.execute("SELECT term, doc, col FROM words_stems"):
            found[new[(int(doc) - 1) * _WIDE + column[col]]].append(stem)
        self.of.update((w, tuple(dict.fromkeys(v))) for w, v in found.items())


def _match(con: sqlite3.Connection, terms: list[str], stems: _Stems, counted: _Counts) -> str:
    """The MATCH expression for ``terms``: all of them, or the :data:`MAX_QUERY_TERMS` rarest in
    the documents (by the most documents any of a word's stems is in; ties to the earlier word;
    words in no document left out: they cannot make a document relevant).
    """
    if len(terms) > MAX_QUERY_TERMS:
        stems.learn(con, terms)
        counts = counted(con, list(dict.fromkeys(s for t in terms for s in stems.of[t])))
        rarity = [max((counts.get(s, 0) for s in stems.of[t]), default=0) for t in terms]
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
        if len(terms) > MAX_QUERY_TERMS:
            _open_scratch(con)
        con.executemany(
            "INSERT INTO docs(rowid, body) VALUES (?, ?)",
            ((i + 1, text) for i, text in enumerate(documents)),
        )
        match = _match(con, terms, _Stems(), _counts_from_vocab)
        rows = con.execute(_RANK, (match,)).fetchall() if match else []
    finally:
        con.close()
    return rows


_Doc = TypeVar("_Doc")


class RelevanceIndex(Generic[_Doc]):
    """A full-text index kept between rankings, for documents keyed by increasing integers.

    :meth:`sync` makes it hold exactly the given documents, indexing only the new ones (the
    others are dropped), so that re-ranking a conversation whose cut part grew by a turn costs
    that turn, not the whole cut part. :meth:`rank` gives what :func:`rank_by_relevance` gives
    for the same documents in key order (bm25 reads the same statistics), with keys instead of
    positions. The table is contentless: no copy of the text is kept. How many documents hold
    each stem (which picks a long question's rarest words) is kept in a table, made with the
    index and kept up to date as turns are added, so that a new question reads one row per word.
    Not thread-safe: its owner serialises access.
    """

    def __init__(self, text: Callable[[_Doc], str]) -> None:
        self._text = text
        self._con = sqlite3.connect(":memory:", check_same_thread=False)
        _open(self._con)
        _open_scratch(self._con)
        # how many documents hold each stem, for picking a long question's rarest words: the
        # vocabulary reads a stem's whole document list, this table one row
        self._con.execute("CREATE TABLE counts(term TEXT PRIMARY KEY, n INTEGER) WITHOUT ROWID")
        self._docs: dict[int, _Doc] = {}
        # the last ranking: its question, keys and scores (arrays: 16 bytes a ranked document)
        self._ranked: tuple[str, array[int], array[float]] | None = None
        self._stems = _Stems()

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
        if not gone and not new:
            return
        self._ranked = None
        # a few newly cut turns are counted into ``counts`` as they come; otherwise (the first
        # sync, dropped turns, more new turns than held) ``counts`` is made again from the index
        recount = bool(gone) or len(new) > len(held)
        if gone:
            # a contentless table forgets a row given the text it was indexed with
            self._con.executemany(
                "INSERT INTO docs(docs, rowid, body) VALUES('delete', ?, ?)",
                [(k + 1, self._text(held.pop(k))) for k in gone],
            )
        if new and not recount:
            texts = [self._text(documents[k]) for k in new]
            self._con.executemany(
                "INSERT INTO docs(rowid, body) VALUES (?, ?)",
                [(k + 1, t) for k, t in zip(new, texts, strict=True)],
            )
            _scratch(self._con, enumerate(texts, 1))
            self._con.execute(
                "INSERT INTO counts(term, n) SELECT term, doc FROM words_docs WHERE true "
                "ON CONFLICT(term) DO UPDATE SET n = n + excluded.n"
            )
        elif new:
            # a generator: one document's text at a time, never all of them at once
            self._con.executemany(
                "INSERT INTO docs(rowid, body) VALUES (?, ?)",
                ((k + 1, self._text(documents[k])) for k in new),
            )
        if recount:
            self._con.execute("DELETE FROM counts")
            self._con.execute("INSERT INTO counts(term, n) SELECT term, doc FROM docs_vocab")
        for k in new:
            held[k] = documents[k]

    def _counts(self, con: sqlite3.Connection, stems: list[str]) -> dict[str, int]:
        marks = ", ".join("?" * len(stems))
        rows = con.execute(f"SELECT term, n FROM counts WHERE term IN ({marks})", stems)
        return dict(rows.fetchall())

    def rank(self, query: str) -> list[tuple[int, float]]:
        """Keys of the documents matching ``query``, most relevant first (ties: later key), with
        their scores (negated bm25).
        """
        keys, scores = self._rank(query)
        return list(zip(keys, scores, strict=True))

    def ranked_keys(self, query: str) -> Sequence[int]:
        """:meth:`rank`'s keys alone."""
        return self._rank(query)[0]

    def _rank(self, query: str) -> tuple[array[int], array[float]]:
        """The same query on the same documents is answered from the last ranking."""
        if self._ranked is not None and self._ranked[0] == query:
            return self._ranked[1], self._ranked[2]
        terms = query_terms(query)
        if not terms or not self._docs:
            return array("q"), array("d")
        match = _match(self._con, terms, self._stems, self._counts)
        rows = self._con.execute(_RANK, (match,)).fetchall() if match else []
        keys, scores = zip(*rows, strict=True) if rows else ((), ())
        self._ranked = (query, array("q", keys), array("d", scores))
        return self._ranked[1], self._ranked[2]

    def close(self) -> None:
        self._con.close()


# -- choosing the cut turns to bring back ---------------------------------------------------


def recall_turns(
    messages: Sequence[Message],
    layout: Layout,
    cut: tuple[range, ...],
    room: int,
    counter: TokenCounter,
    query: str,
    incremental: bool = False,
) -> tuple[list[Message], list[int], int]:
    """The cut turns most relevant to ``query`` that fit in ``room``, in their order, their
    positions in ``messages``, and what they cost.

    With ``incremental`` (the cut part is one run of units, a prefix of a growing
    conversation) the full-text index is kept in ``layout.cache`` and only newly cut turns
    are indexed; the ranking is the same as from a fresh index.
    """
    if room <= 0 or not query.strip():
        return [], [], 0

    def document(turn: list[Unit]) -> str:
        return "\n".join(
            " ".join(
                [messages[i].text] + [c.name + " " + c.arguments for c in messages[i].tool_calls]
            )
            for u in turn
            for i in u.indices
        )

    cache = layout.cache if incremental else None
    held = cache.get("recall") if cache is not None else None
    if not isinstance(held, _CutTurns) or held.cut != cut:
        previous = held.index if isinstance(held, _CutTurns) else None
        held = _CutTurns(layout, cut)
        if cache is not None:
            # one index for the growing conversation: only the newly cut turns are indexed
            # (``document`` reads this call's ``messages``: a ledger's list, which only grows)
            held.index = previous if previous is not None else RelevanceIndex(document)
            held.index.sync({key: held.turns[k] for key, k in held.keys.items()})
            cache["recall"] = held
    turns, smallest = held.turns, held.smallest
    ranked: Iterable[int]
    if held.index is not None:
        ranked = map(held.keys.__getitem__, held.index.ranked_keys(query))
    else:
        ranked = (k for k, _ in rank_by_relevance([document(t) for t in turns], query))
    chosen: list[tuple[int, list[int]]] = []
    used = 0
    firsts, wholes = held.firsts, held.wholes

    def cost_of(unit: Unit) -> int:
        return layout.unit_cost(unit, messages, counter)

    for index_ in ranked:
        if room - used < smallest:
            break  # not even the smallest turn's question fits any more
        turn = turns[index_]
        first = firsts[index_]
        if first < 0:
            first = firsts[index_] = cost_of(turn[0])
        if first > room - used:
            continue  # neither the turn nor its compact form (which starts with it) fits
        cost = wholes[index_]
        if cost < 0:
            cost = wholes[index_] = first + sum(cost_of(u) for u in turn[1:])
        take = turn
        if used + cost > room:
            # compact form: the question and the last plain answer of that turn
            answer = next(
                (u for u in reversed(turn[1:]) if not messages[u.indices[0]].tool_calls), None
            )
            take = [turn[0]] + ([answer] if answer else [])
            cost = first + (cost_of(answer) if answer else 0)
            if used + cost > room:
                continue
        chosen.append((turn[0].indices[0], [i for u in take for i in u.indices]))
        used += cost
    chosen.sort(key=lambda item: item[0])
    at = [i for _, positions in chosen for i in positions]
    return [messages[i] for i in at], at, used


class _CutTurns:
    """The whole turns of a cut, keyed by their first message's index, the smallest turn's
    question, and (when kept between fits) the full-text index that holds them.
    """

    def __init__(self, layout: Layout, cut: tuple[range, ...]) -> None:
        self.cut = cut
        self.turns = _cut_turns(layout, cut)
        self.keys = {t[0].indices[0]: k for k, t in enumerate(self.turns)}
        # the cut turns of a cold migration were not counted: counting them all to find the
        # smallest would cost what was spared (a turn is counted when its rank comes)
        self.smallest = (
            1 if layout.counted_from else min((t[0].cost for t in self.turns), default=0)
        )
        self.index: RelevanceIndex[list[Unit]] | None = None
        # each turn's question's cost and its whole cost, once needed (-1: not yet)
        self.firsts = [-1] * len(self.turns)
        self.wholes = [-1] * len(self.turns)


def _cut_turns(layout: Layout, cut: tuple[range, ...]) -> list[list[Unit]]:
    """The whole turns among the cut units: a cut unit continues the turn of the cut unit right
    before it; units whose turn start is kept (or that follow a kept unit) cannot be recalled,
    since recalled turns go before the newest ones.
    """
    turns: list[list[Unit]] = []
    previous = -2
    for r in cut:
        for k in r:
            unit = layout.units[k]
            if unit.starts_turn or k != previous + 1 or not turns:
                turns.append([unit])
            else:
                turns[-1].append(unit)
            previous = k
    return [t for t in turns if t[0].starts_turn]
