"""Text into stems for bm25: SQLite FTS5's ``porter unicode61`` tokenizer (Unicode folding,
Porter stemming) in an in-memory database, and the postings it gives.

:class:`_Tokenizer` turns a question into its distinct stems (less stop words and one-character
stems) and a batch of documents into :class:`_Postings` (each stem's documents and counts);
:mod:`session_migrator.recall._bm25` scores them.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["query_terms"]

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


_TOKENIZER = "porter unicode61"

_Floats = npt.NDArray[np.float64]
_Ints = npt.NDArray[np.int64]
_Small = npt.NDArray[np.integer[Any]]


class _Tokenizer:
    """An in-memory SQLite database whose contentless FTS5 scratch table turns text into stems:
    a question's distinct stems, or each document's stems and their counts.
    """

    def __init__(self) -> None:
        # transactions are explicit (one per text or batch); once a batch is deleted, its pages
        # are given back
        self.con = _connection()
        self.con.execute("PRAGMA auto_vacuum = FULL")
        _create_index(self.con, "scratch")

    def _read_with(self, text: str, sql: str) -> list[Any]:
        """The rows ``sql`` reads while ``text`` is the scratch table's one row (taken out
        again after).
        """
        con = self.con
        con.execute("BEGIN")
        try:
            _insert(con, "scratch", [text])
            return con.execute(sql).fetchall()
        finally:
            con.execute("ROLLBACK")

    def _distinct(self, text: str) -> list[str]:
        """The distinct stems of ``text``, in the index's (binary) order."""
        return [term for (term,) in self._read_with(text, "SELECT term FROM scratch_terms")]

    def _each(self, words: list[str]) -> list[str] | None:
        """The stem of each of ``words`` (ASCII letters and digits, lower case: one token
        each), or ``None`` if the tokenizer did not give one stem per word.
        """
        found = self._read_with(" ".join(words), "SELECT term, offset FROM scratch_instances")
        out = [""] * len(words)
        for term, offset in found:
            if not 0 <= offset < len(out) or out[offset]:  # pragma: no cover - not seen
                return None
            out[offset] = term
        return out if len(found) == len(words) else None

    def stems(self, query: str) -> list[str]:
        """The stems ``query`` is searched by: distinct, in the index's order, without stop
        words' stems and one-character stems.

        An ASCII question is split into words here, each word's stem looked up in a memo
        (FTS5 stems the words not in it, all at once): questions repeat their words, and
        reading a question's stems from FTS5 costs more than its words' lookups.
        """
        global _stop_stems
        if _stop_stems is None:
            _stop_stems = frozenset(self._distinct(" ".join(sorted(_STOP))))
        stop = _stop_stems
        if query.isascii():
            memo = _stem_memo
            words = set(_ASCII_WORD.findall(query.lower()))
            found = {w: memo.get(w) for w in words}
            unknown = [w for w, s in found.items() if s is None]
            stems = self._each(unknown) if unknown else []
            if stems is not None:
                if len(memo) + len(unknown) > _STEM_MEMO_SIZE:
                    memo.clear()
                keep = len(unknown) <= _STEM_MEMO_SIZE
                for word, stem in zip(unknown, stems, strict=True):
                    searched = stem if len(stem) > 1 and stem not in stop else ""
                    found[word] = searched
                    if keep:
                        memo[word] = searched
                # (code point order: for ASCII, the index's byte order)
                return sorted({s for s in found.values() if s})
        return [s for s in self._distinct(query) if len(s) > 1 and s not in stop]

    def postings(self, texts: Sequence[str]) -> _Postings:
        """Each of ``texts``' stems, the documents (positions in ``texts``) holding it and how
        many times, and each document's length in tokens.
        """
        con = self.con
        con.execute("BEGIN")
        try:
            _insert(con, "scratch", texts)
            return _Postings.of(_postings_rows(con, "scratch"), len(texts))
        finally:
            con.execute("INSERT INTO scratch(scratch) VALUES ('delete-all')")
            con.execute("COMMIT")

    def close(self) -> None:
        self.con.close()


_stop_stems: frozenset[str] | None = None
#: An ASCII text's words as ``porter unicode61`` splits it (after lower-casing): runs of ASCII
#: letters and digits; every other ASCII character separates.
_ASCII_WORD = re.compile(r"[a-z0-9]+")
#: ASCII word -> its stem ("" when a question is not searched by it: a stop word's stem or a
#: one-character stem); emptied when it would hold more than this many words. (Not a
#: ``DigestMemo``: a question looks up each word, a plain dict lookup, and learns the missing
#: ones in one FTS5 call.)
_stem_memo: dict[str, str] = {}
_STEM_MEMO_SIZE = 1 << 14


def _create_index(con: sqlite3.Connection, table: str) -> None:
    """A contentless FTS5 ``table`` with its vocabularies ``{table}_terms`` (a row per stem)
    and ``{table}_instances`` (a row per occurrence).
    """
    con.execute(
        f"CREATE VIRTUAL TABLE {table} USING fts5(body, content='', tokenize='{_TOKENIZER}')"
    )
    con.execute(f"CREATE VIRTUAL TABLE {table}_terms USING fts5vocab({table}, 'row')")
    con.execute(f"CREATE VIRTUAL TABLE {table}_instances USING fts5vocab({table}, 'instance')")


def _postings_rows(
    con: sqlite3.Connection, table: str, stems: Sequence[str] | None = None
) -> sqlite3.Cursor:
    """One row per stem of ``table`` (or per one of ``stems`` in it), in stem order (the
    vocabulary is read in that order, no sort): the stem, its occurrences and their documents
    space-separated, in document order; :meth:`_Postings.of` reads them.
    """
    where = f"WHERE term IN ({', '.join('?' * len(stems))}) " if stems is not None else ""
    return con.execute(
        f"SELECT term, count(*), group_concat(doc, ' ') FROM {table}_instances {where}"
        "GROUP BY term",
        list(stems or ()),
    )


def _insert(con: sqlite3.Connection, table: str, texts: Sequence[str]) -> None:
    """Insert ``texts`` as rows 1, 2, ... of ``table`` (inside the caller's transaction). A
    lone surrogate (which UTF-8 cannot encode) is tokenized as a separator.
    """
    sql = f"INSERT INTO {table}(rowid, body) VALUES (?, ?)"
    try:
        con.executemany(sql, enumerate(texts, 1))
    except UnicodeEncodeError:
        con.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")
        con.executemany(
            sql, ((k, t.encode("utf-8", "replace").decode("utf-8")) for k, t in enumerate(texts, 1))
        )


@dataclass
class _Postings:
    """Stems, and for each (stem, document) pair: the stem's position in ``terms``, the
    document, and how many times the stem occurs in it (pairs in stem order, then document
    order); ``lengths``: each document's tokens among those read (all of them when every stem
    is read, as the kept index does).
    """

    terms: list[str]
    term: _Small
    doc: _Small
    tf: _Small
    lengths: _Ints

    @classmethod
    def of(cls, rows: sqlite3.Cursor, size: int) -> _Postings:
        """From (stem, occurrences, their 1-based documents space-separated) rows, read a few
        at a time (the documents' numbers as text take more room than the arrays).
        """
        terms: list[str] = []
        counted: list[int] = []
        parts: list[_Small] = []
        while chunk := rows.fetchmany(1024):
            terms.extend(row[0] for row in chunk)
            counted.extend(row[1] for row in chunk)
            # (32-bit: a batch of documents holds fewer than 2**31 tokens)
            parts.append(np.fromstring(" ".join(row[2] for row in chunk), dtype=np.int32, sep=" "))
        if not terms:
            empty = np.zeros(0, dtype=np.int32)
            return cls([], empty, empty, empty, np.zeros(size, dtype=np.int64))
        counts = np.array(counted, dtype=np.int64)
        docs = np.concatenate(parts)
        del parts
        docs -= 1
        if len(docs) != int(counts.sum()):  # pragma: no cover - a tokenizer bug if reached
            raise AssertionError("the tokenizer's occurrences do not add up")
        first = np.zeros(len(terms), dtype=np.int64)  # where each stem's occurrences start
        np.cumsum(counts[:-1], out=first[1:])
        inside = np.ones(len(docs), dtype=bool)
        inside[first] = False
        if bool(np.any((docs[1:] < docs[:-1]) & inside[1:])):  # pragma: no cover - not seen
            # a stem's documents out of order: put them in order
            term = np.repeat(np.arange(len(terms), dtype=np.int32), counts)
            docs = docs[np.lexsort((docs, term))]
            del term
        # a (stem, document) pair starts where a stem's run starts or the document changes
        new = inside
        np.not_equal(docs[1:], docs[:-1], out=new[1:])
        new[first] = True
        pairs = np.add.reduceat(new, first, dtype=np.int64)  # each stem's documents
        starts = np.flatnonzero(new)
        del new
        tf = np.empty(len(starts), dtype=np.int64)
        tf[:-1] = starts[1:]
        tf[-1] = len(docs)
        tf -= starts
        doc = docs[starts]
        del starts
        lengths = np.bincount(docs, minlength=size).astype(np.int64)
        term = np.repeat(np.arange(len(terms), dtype=np.int32), pairs)
        return cls(terms, term, doc, tf.astype(np.int32), lengths)


def _connection() -> sqlite3.Connection:
    """An in-memory database (transactions explicit), usable from another thread."""
    return sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)


def _varint(data: bytes) -> int:
    """The first SQLite varint of ``data`` (an FTS5 row size: its tokens)."""
    value = 0
    for byte in data[:8]:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return (value << 8) | data[8]


class _Part:
    """An FTS5 index of ``documents`` (the documents ``first``, ``first + 1``, ... of a
    ranking) in the database of ``con``, its tables named ``docs``.
    """

    def __init__(self, con: sqlite3.Connection, documents: Sequence[str], first: int) -> None:
        self.con = con
        self.first = first
        _create_index(con, "docs")
        con.execute("BEGIN")  # one transaction: FTS5 writes its index once
        _insert(con, "docs", documents)
        con.execute("COMMIT")

    def holding(self, stems: list[str]) -> _Ints:
        """How many of the documents hold each of ``stems`` (asked :data:`_ASKED` at a time:
        the second hop asks for every stem of its best documents, and SQLite bounds the
        parameters of one statement)."""
        found: dict[str, int] = {}
        for start in range(0, len(stems), _ASKED):
            some = stems[start : start + _ASKED]
            marks = ", ".join("?" * len(some))
            query = f"SELECT term, doc FROM docs_terms WHERE term IN ({marks})"
            found.update(self.con.execute(query, some))
        return np.array([found.get(stem, 0) for stem in stems], dtype=np.int64)

    def postings(self, stems: list[str]) -> _Postings:
        """The postings of ``stems`` (documents numbered from 0 in this part)."""
        return _Postings.of(_postings_rows(self.con, "docs", stems), 0)

    def lengths(self, out: _Floats) -> None:
        """Write each document's length in tokens into ``out`` (at its number in the ranking)."""
        first = self.first - 1
        for rowid, size in self.con.execute("SELECT id, sz FROM docs_docsize"):
            out[first + rowid] = _varint(size)


#: The most stems one statement of :meth:`_Part.holding` asks for (SQLite's oldest bound on a
#: statement's parameters is 999).
_ASKED = 500
