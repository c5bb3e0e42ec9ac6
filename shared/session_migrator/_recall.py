"""Full-text relevance ranking (bm25): SQLite FTS5 tokenizes, numpy scores.

Used by the ``recall`` strategy to bring back the cut turns that matter for the current question:
:func:`recall_turns` ranks the whole cut turns and takes the best that fit, in their order.

Documents and questions are split into tokens by FTS5's ``porter unicode61`` tokenizer (Unicode
folding, Porter stemming). A question is searched by its distinct stems, less stop words (by at
most :data:`MAX_QUERY_TERMS`, its rarest); a document's score is the sum, over those stems, of
the classic bm25 weight (k1 = 1.2, b = 0.75, FTS5's idf). :func:`rank_by_relevance` ranks a list
once from an FTS5 index and the postings of the question's stems alone; a
:class:`RelevanceIndex` holds every stem's postings in numpy arrays, so that a new question over
a cut part that grows costs its own stems and postings, not a pass over the cut part.
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from session_migrator._fit import Layout, Unit
from session_migrator._messages import Message
from session_migrator._tokens import TokenCounter

__all__ = ["MAX_QUERY_TERMS", "RelevanceIndex", "query_terms", "rank_by_relevance", "recall_turns"]

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


#: A long question is searched by this many of its stems, the rarest in the documents: bm25
#: gives common stems little weight anyway, and each stem's postings cost time.
MAX_QUERY_TERMS = 16
_TOKENIZER = "porter unicode61"
_K1 = 1.2
_B = 0.75
#: The kept index tokenizes new documents this many characters at a time (bounding the memory
#: the tokenizer's scratch index and its output take), each batch one segment of postings; a
#: full batch's segment is final (merging it would take as much memory again) ...
_BATCH_CHARS = 2_000_000
#: ... and the others are merged into the one before while that one has at most this many
#: times their postings, so that a cut part growing a turn at a time keeps a few segments (about
#: the logarithm of their number), each posting sorted again a logarithmic number of times.
_MERGE_RATIO = 2

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


def _rarest(counts: _Ints) -> _Ints:
    """Positions of the stems to search by, given how many documents hold each: those in some
    document, the :data:`MAX_QUERY_TERMS` rarest of them (ties to the earlier), in order.
    """
    found = np.flatnonzero(counts > 0)
    if len(found) > MAX_QUERY_TERMS:
        found = np.sort(found[np.lexsort((found, counts[found]))[:MAX_QUERY_TERMS]])
    return found


def _idfs(documents: int, holding: _Ints) -> _Floats:
    """FTS5's bm25 idf of stems held by ``holding`` of ``documents`` documents (never below a
    small positive floor).
    """
    out = [math.log((documents - n + 0.5) / (n + 0.5)) for n in holding.tolist()]
    return np.array([idf if idf > 0.0 else 1e-6 for idf in out], dtype=np.float64)


def _runs(starts: _Ints, lengths: _Ints) -> _Ints:
    """The positions ``starts[j] .. starts[j] + lengths[j] - 1`` for each j, one after another."""
    before = np.cumsum(lengths) - lengths
    return np.repeat(starts - before, lengths) + np.arange(int(lengths.sum()))


def _scores(doc: _Small, tf: _Small, idf: _Floats, lengths: _Floats, average: float) -> _Floats:
    """bm25 scores of every document (0: none of the stems), given the searched stems'
    postings (a document's in stem order: its sum is taken in that order) and each posting's
    stem's idf.
    """
    freq = tf.astype(np.float64)
    norm = _K1 * ((1.0 - _B) + (_B * lengths[doc]) / average)
    weights = idf * ((freq * (_K1 + 1.0)) / (freq + norm))
    return np.bincount(doc, weights=weights, minlength=len(lengths)).astype(np.float64, copy=False)


def _best_first(scores: _Floats, keys: _Ints, increasing: bool) -> tuple[_Ints, _Floats]:
    """The scored documents' keys and scores, highest first (ties: the later key first);
    ``increasing``: the keys increase with the documents' positions.
    """
    hit = np.flatnonzero(scores)
    if increasing:  # the later key first, then a stable sort by score
        hit = hit[::-1]
        at = hit[np.argsort(-scores[hit], kind="stable")]
    else:
        at = hit[np.lexsort((-keys[hit], -scores[hit]))]
    return keys[at], scores[at]


def rank_by_relevance(documents: Sequence[str], query: str) -> list[tuple[int, float]]:
    """Indices of ``documents`` matching ``query``, most relevant first, with bm25 scores.

    Scores are higher the better; ties go to the later document. Documents with none of the
    query's stems are left out. Porter stemming and Unicode folding apply. A question of more
    than :data:`MAX_QUERY_TERMS` stems is searched by its rarest ones.

    Many documents are indexed in two halves at once, in a worker thread and this one (SQLite
    tokenizes without holding the GIL): the index is most of a cold migration's time beside
    tokenizing.
    """
    if not documents:
        return []
    tokenizer = _Tokenizer()
    parts: list[_Part] = []
    try:
        stems = tokenizer.stems(query)
        if not stems:
            return []
        half = _halfway(documents)
        if half:
            with ThreadPoolExecutor(1, thread_name_prefix="session-migrator-recall") as pool:
                later = pool.submit(_Part, _connection(), documents[half:], half)
                try:
                    parts.append(_Part(tokenizer.con, documents[:half], 0))
                finally:
                    parts.append(later.result())  # (closed below, even if the first failed)
        else:
            parts.append(_Part(tokenizer.con, documents, 0))
        counts = np.zeros(len(stems), dtype=np.int64)
        for part in parts:
            counts += part.holding(stems)
        chosen = _rarest(counts)
        if not len(chosen):
            return []
        picked = [stems[k] for k in chosen.tolist()]
        n = len(documents)
        lengths = np.zeros(n, dtype=np.float64)
        docs: list[_Small] = []
        tfs: list[_Small] = []
        terms: list[_Ints] = []
        where = {stem: k for k, stem in enumerate(picked)}
        for part in parts:
            postings = part.postings(picked)
            part.lengths(lengths)
            ids = np.array([where[t] for t in postings.terms], dtype=np.int64)
            terms.append(ids[postings.term])
            docs.append(postings.doc.astype(np.int64) + part.first)
            tfs.append(postings.tf)
    finally:
        for part in parts[1:]:
            part.con.close()
        tokenizer.close()
    # each document is in one part, its postings in stem order: its sum is taken in that order
    idf = _idfs(n, counts[chosen])[np.concatenate(terms)]
    scores = _scores(
        np.concatenate(docs), np.concatenate(tfs), idf, lengths, float(lengths.sum()) / n
    )
    keys, values = _best_first(scores, np.arange(n, dtype=np.int64), True)
    return list(zip(keys.tolist(), values.tolist(), strict=True))


#: One-shot rankings of documents of at least this many characters in all are indexed in two
#: halves at once (below it, a thread costs more than it saves).
_PARALLEL_CHARS = 200_000


def _halfway(documents: Sequence[str]) -> int:
    """Where to split ``documents`` into two halves of about the same text (0: don't; nor
    when this SQLite library was built for one thread).
    """
    if len(documents) < 2 or not sqlite3.threadsafety:
        return 0
    sizes = list(itertools.accumulate(len(d) for d in documents))
    if sizes[-1] < _PARALLEL_CHARS:
        return 0
    return min(max(bisect.bisect_left(sizes, sizes[-1] // 2), 1), len(documents) - 1)


def _connection() -> sqlite3.Connection:
    """An in-memory database (transactions explicit), usable from another thread."""
    return sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)


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
        """How many of the documents hold each of ``stems``."""
        marks = ", ".join("?" * len(stems))
        found = dict(
            self.con.execute(f"SELECT term, doc FROM docs_terms WHERE term IN ({marks})", stems)
        )
        return np.array([found.get(stem, 0) for stem in stems], dtype=np.int64)

    def postings(self, stems: list[str]) -> _Postings:
        """The postings of ``stems`` (documents numbered from 0 in this part)."""
        return _Postings.of(_postings_rows(self.con, "docs", stems), 0)

    def lengths(self, out: _Floats) -> None:
        """Write each document's length in tokens into ``out`` (at its number in the ranking)."""
        first = self.first - 1
        for rowid, size in self.con.execute("SELECT id, sz FROM docs_docsize"):
            out[first + rowid] = _varint(size)


def _varint(data: bytes) -> int:
    """The first SQLite varint of ``data`` (an FTS5 row size: its tokens)."""
    value = 0
    for byte in data[:8]:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return (value << 8) | data[8]


@dataclass
class _Segment:
    """Postings of a run of documents, by stem id: ``terms`` (increasing), and stem
    ``terms[j]``'s documents (slots) and counts at ``[starts[j], starts[j + 1])``.
    """

    terms: _Small
    starts: _Ints
    slots: _Small
    tfs: _Small
    final: bool = False

    @classmethod
    def of(cls, term: _Small, slot: _Small, tf: _Small) -> _Segment:
        """From pairs in any stem order (a stem's pairs in slot order)."""
        if bool(np.any(term[1:] < term[:-1])):
            order = np.argsort(term, kind="stable")
            term, slot, tf = term[order], slot[order], tf[order]
            del order
        bounds = np.flatnonzero(term[1:] != term[:-1]) + 1
        starts = np.concatenate(([0], bounds, [len(term)])).astype(np.int64)
        return cls(term[starts[:-1]], starts, _narrow(slot), _narrow(tf))

    @property
    def size(self) -> int:
        return len(self.slots)

    def merged(self, later: _Segment) -> _Segment:
        runs = [np.diff(self.starts), np.diff(later.starts)]
        term = np.concatenate([np.repeat(self.terms, runs[0]), np.repeat(later.terms, runs[1])])
        slot = np.concatenate([self.slots.astype(np.int32), later.slots.astype(np.int32)])
        tf = np.concatenate([self.tfs.astype(np.int32), later.tfs.astype(np.int32)])
        return _Segment.of(term, slot, tf)


def _narrow(values: _Small) -> _Small:
    """``values`` (not negative) in 16 bits where they fit, else 32 (postings are most of what
    the index holds).
    """
    if not len(values) or int(values.max()) < 1 << 16:
        return values.astype(np.uint16)
    return values.astype(np.int32)


_Doc = TypeVar("_Doc")


_Array = TypeVar("_Array", bound=npt.NDArray[np.generic])


def _grown(array: _Array, size: int) -> _Array:
    """``array``, or a copy with room for ``size`` items (the new ones zero)."""
    if size <= len(array):
        return array
    out = np.zeros(max(size, 2 * len(array), 64), dtype=array.dtype)
    out[: len(array)] = array
    return out  # type: ignore[return-value]


class RelevanceIndex(Generic[_Doc]):
    """A relevance index kept between rankings, for documents keyed by integers.

    :meth:`sync` makes it hold exactly the given documents, tokenizing only the new ones (and
    the dropped ones, to take their stems out of the counts), so that re-ranking a conversation
    whose cut part grew by a turn costs that turn, not the whole cut part. :meth:`rank` gives
    what :func:`rank_by_relevance` gives for the same documents in key order (the same stems,
    counts and arithmetic), with keys instead of positions. No text is kept: each stem's
    postings are numpy arrays (in a few segments: one per large batch of documents, small ones
    merged as they come), so that a new question costs its stems' postings. Not thread-safe:
    its owner serialises access.
    """

    def __init__(self, text: Callable[[_Doc], str]) -> None:
        self._text = text
        self._tokenizer = _Tokenizer()
        # questions have a tokenizer of their own: after a large batch of documents, FTS5's
        # table of pending tokens stays large, and reading one question's stems walks it
        self._questions = _Tokenizer()
        self._docs: dict[int, _Doc] = {}
        self._reset()
        # the last ranking: its question, keys and scores
        self._ranked: tuple[str, _Ints, _Floats] | None = None

    def _reset(self) -> None:
        self._slot: dict[int, int] = {}  # key -> slot
        self._slots = 0
        self._keys: _Ints = np.zeros(0, dtype=np.int64)  # slot -> key
        self._lengths: _Floats = np.zeros(0, dtype=np.float64)  # slot -> tokens
        self._alive: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._vocab: dict[str, int] = {}  # stem -> id
        self._df: _Ints = np.zeros(0, dtype=np.int64)  # id -> documents held holding it
        self._segments: list[_Segment] = []
        self._tokens = 0  # in the documents held
        self._increasing = True  # keys increase with slots

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
        dead = self._slots - len(self._slot) + len(gone)
        if gone and dead > len(held) - len(gone):
            # more dropped than held, all told: index what stays again rather than keep the
            # dropped documents' postings
            for k in gone:
                del held[k]
            self._reset()
            new = list(held) + new
        elif gone:
            self._drop(gone)
        for k in new:
            held[k] = documents[k]
        keys: list[int] = []
        texts: list[str] = []
        chars = 0
        for k in new:
            keys.append(k)
            texts.append(self._text(held[k]))
            chars += len(texts[-1])
            if chars >= _BATCH_CHARS:
                self._add(keys, texts, final=True)
                keys, texts, chars = [], [], 0
        if keys:
            self._add(keys, texts, final=False)

    def _add(self, keys: list[int], texts: list[str], final: bool) -> None:
        postings = self._tokenizer.postings(texts)
        first = self._slots
        count = len(keys)
        self._slots += count
        self._keys = _grown(self._keys, self._slots)
        self._lengths = _grown(self._lengths, self._slots)
        self._alive = _grown(self._alive, self._slots)
        if self._increasing and (
            (first and keys[0] <= self._keys[first - 1])
            or any(b <= a for a, b in itertools.pairwise(keys))
        ):
            self._increasing = False
        self._keys[first : first + count] = keys
        self._lengths[first : first + count] = postings.lengths
        self._alive[first : first + count] = True
        self._slot.update(zip(keys, range(first, first + count), strict=True))
        self._tokens += int(postings.lengths.sum())
        if not postings.terms:
            return
        vocab = self._vocab
        ids = np.fromiter(
            (vocab.setdefault(t, len(vocab)) for t in postings.terms),
            dtype=np.int64,
            count=len(postings.terms),
        )
        self._df = _grown(self._df, len(vocab))
        term = ids[postings.term]
        np.add.at(self._df, term, 1)
        segment = _Segment.of(term, postings.doc + first, postings.tf)
        segment.final = final
        segments = self._segments
        segments.append(segment)
        while (
            len(segments) > 1
            and not segments[-2].final
            and segments[-2].size <= _MERGE_RATIO * segments[-1].size
        ):
            later = segments.pop()
            segments[-1] = segments[-1].merged(later)

    def _drop(self, keys: list[int]) -> None:
        texts = [self._text(self._docs.pop(k)) for k in keys]
        postings = self._tokenizer.postings(texts)
        ids = np.array([self._vocab[t] for t in postings.terms], dtype=np.int64)
        if len(ids):
            np.subtract.at(self._df, ids[postings.term], 1)
        for k in keys:
            slot = self._slot.pop(k)
            self._alive[slot] = False
        self._tokens -= int(postings.lengths.sum())

    def rank(self, query: str) -> list[tuple[int, float]]:
        """Keys of the documents matching ``query``, most relevant first (ties: later key), with
        their bm25 scores.
        """
        keys, scores = self._rank(query)
        return list(zip(keys.tolist(), scores.tolist(), strict=True))

    def ranked_keys(self, query: str) -> _Ints:
        """:meth:`rank`'s keys alone."""
        return self._rank(query)[0]

    def _rank(self, query: str) -> tuple[_Ints, _Floats]:
        """The same query on the same documents is answered from the last ranking."""
        if self._ranked is not None and self._ranked[0] == query:
            return self._ranked[1], self._ranked[2]
        held = len(self._docs)
        stems = self._questions.stems(query) if held else []
        get = self._vocab.get
        ids = np.array([get(s, -1) for s in stems], dtype=np.int64)
        counts = self._df.take(ids, mode="clip") if len(self._df) else np.zeros_like(ids)
        counts[ids < 0] = 0
        chosen = _rarest(counts)
        if not len(chosen):
            none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
            self._ranked = (query, *none)
            return none
        wanted = ids[chosen]
        idf = _idfs(held, counts[chosen])
        docs: list[_Small] = []
        tfs: list[_Small] = []
        idfs: list[_Floats] = []
        for segment in self._segments:
            # the wanted stems' postings in this segment, stem after stem (a document is in
            # one segment: its stems come in the wanted order)
            terms = segment.terms
            at = np.minimum(np.searchsorted(terms, wanted), len(terms) - 1)
            starts = segment.starts[at]
            found = np.where(terms[at] == wanted, segment.starts[at + 1] - starts, 0)
            if found.any():
                where = _runs(starts, found)
                docs.append(segment.slots[where])
                tfs.append(segment.tfs[where])
                idfs.append(np.repeat(idf, found))
        size = self._slots
        scores = _scores(
            np.concatenate(docs),
            np.concatenate(tfs),
            np.concatenate(idfs),
            self._lengths[:size],
            self._tokens / held,
        )
        if size > held:  # some documents were dropped: their postings are still there
            scores[~self._alive[:size]] = 0.0
        keys, values = _best_first(scores, self._keys[:size], self._increasing)
        self._ranked = (query, keys, values)
        return keys, values

    def close(self) -> None:
        self._tokenizer.close()
        self._questions.close()


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
    turns = held.turns
    order: _Ints
    if held.index is not None:
        order = held.positions(held.index.ranked_keys(query))
    else:
        ranked = rank_by_relevance([document(t) for t in turns], query)
        order = np.array([k for k, _ in ranked], dtype=np.int64)
    used = 0
    if held.counted:
        # every cost is known: the best turns whose whole costs add up to at most the room are
        # all taken whole; after them, the next turn that fits at least in its compact form
        # (never larger) is taken, whole if it fits, and so on
        costs = held.whole_costs()[order]
        start = int(np.searchsorted(np.cumsum(costs), room, side="right"))
        used = int(costs[:start].sum())
        rest, costs = order[start:], costs[start:]
        least = held.compact_costs(messages)[rest]
        whole: list[int] = []  # the turns taken whole after the first ``start``
        compact: list[int] = []  # and those taken in their compact form
        j = 0
        while j < len(rest):
            fits = np.flatnonzero(least[j:] <= room - used)
            if not len(fits):
                break
            j += int(fits[0])
            if costs[j] <= room - used:
                whole.append(int(rest[j]))
                used += int(costs[j])
            else:
                compact.append(int(rest[j]))
                used += int(least[j])
            j += 1
        at = held.positions_of(
            np.concatenate((order[:start], np.array(whole, dtype=np.int64))), compact
        )
        return _taken(messages, at), at, used

    # the cut turns were not counted: each is counted when its rank comes
    def cost_of(unit: Unit) -> int:
        return layout.unit_cost(unit, messages, counter)

    # (turn, its messages' positions) of the turns taken, whole or compact, in rank order
    chosen: list[tuple[int, list[int]]] = []
    firsts, totals = held.firsts, held.totals
    for k in order.tolist():
        left = room - used
        if left < 1:
            break
        first = firsts[k]
        if first < 0:
            first = firsts[k] = cost_of(held.turns[k][0])
        if first > left:
            continue  # neither the turn nor its compact form (which starts with it) fits
        cost = totals[k]
        if cost < 0:
            cost = totals[k] = first + sum(cost_of(u) for u in held.turns[k][1:])
        if cost <= left:
            chosen.append((k, held.whole(k)))
        else:
            cost, positions = held.compact(k, messages, cost_of)
            if cost > left:
                continue
            chosen.append((k, positions))
        used += cost
    chosen.sort()
    at = [i for _, positions in chosen for i in positions]
    return _taken(messages, at), at, used


def _taken(messages: Sequence[Message], at: list[int]) -> list[Message]:
    """``messages`` at the positions ``at``."""
    if len(at) > 1:
        return list(operator.itemgetter(*at)(messages))
    return [messages[i] for i in at]


class _CutTurns:
    """The whole turns of a cut, keyed by their first message's index, their questions' costs
    and (when kept between fits) the index that holds them.
    """

    def __init__(self, layout: Layout, cut: tuple[range, ...]) -> None:
        self.cut = cut
        self.turns = _cut_turns(layout, cut)
        self.keys = {t[0].indices[0]: k for k, t in enumerate(self.turns)}
        self.index: RelevanceIndex[list[Unit]] | None = None
        # each turn's question's cost and (not counted) its whole cost, once needed (-1: not
        # yet); the cut turns of a cold migration were not counted: counting them all would
        # cost what was spared (a turn is counted when its rank comes)
        self.counted = layout.counted_from == 0
        self.firsts = [t[0].cost for t in self.turns] if self.counted else [-1] * len(self.turns)
        self.totals = [-1] * len(self.turns)
        self._starts: _Ints | None = None
        self._positions: dict[int, list[int]] = {}
        self._whole_costs: _Ints | None = None
        self._compact_costs: _Ints | None = None
        self._compacts: dict[int, tuple[int, list[int]]] = {}
        # (counted) the positions of every turn's messages, then of every turn's compact form,
        # in one array, and where each of those runs starts (2 * turns + 1 offsets)
        self._flat: _Ints | None = None
        self._offsets: _Ints = np.zeros(1, dtype=np.int64)

    def whole_costs(self) -> _Ints:
        """Each turn's cost (the turns counted)."""
        if self._whole_costs is None:
            self._whole_costs = np.array(
                [sum(u.cost for u in turn) for turn in self.turns], dtype=np.int64
            )
        return self._whole_costs

    def positions_of(self, wholes: _Ints, compacts: list[int]) -> list[int]:
        """The positions of the messages of turns ``wholes`` (whole) and ``compacts`` (their
        compact forms, known from :meth:`compact_costs`), turn after turn.
        """
        if self._flat is None:
            # every turn's positions, then every turn's compact form's, one after another
            n = len(self.turns)
            lists = [_positions_in(turn) for turn in self.turns]
            lists += [self._compacts[k][1] for k in range(n)]
            self._offsets = np.zeros(2 * n + 1, dtype=np.int64)
            np.cumsum([len(p) for p in lists], out=self._offsets[1:])
            self._flat = np.fromiter(
                itertools.chain.from_iterable(lists), dtype=np.int64, count=int(self._offsets[-1])
            )
        offsets = self._offsets
        extra = np.array(compacts, dtype=np.int64)
        turns = np.concatenate((wholes, extra))
        runs = np.concatenate((wholes, extra + len(self.turns)))[np.argsort(turns, kind="stable")]
        starts = offsets[runs]
        at: list[int] = self._flat[_runs(starts, offsets[runs + 1] - starts)].tolist()
        return at

    def whole(self, k: int) -> list[int]:
        """The positions of turn ``k``'s messages."""
        at = self._positions.get(k)
        if at is None:
            at = self._positions[k] = _positions_in(self.turns[k])
        return at

    def compact(
        self, k: int, messages: Sequence[Message], cost_of: Callable[[Unit], int]
    ) -> tuple[int, list[int]]:
        """Turn ``k``'s compact form: its question and its last plain answer (if any), what it
        costs and its messages' positions.
        """
        found = self._compacts.get(k)
        if found is None:
            turn = self.turns[k]
            answer = next(
                (u for u in reversed(turn[1:]) if not messages[u.indices[0]].tool_calls), None
            )
            units = [turn[0]] + ([answer] if answer else [])
            cost = self.firsts[k] + (cost_of(answer) if answer else 0)
            found = self._compacts[k] = (cost, _positions_in(units))
        return found

    def compact_costs(self, messages: Sequence[Message]) -> _Ints:
        """Each turn's compact form's cost (the turns counted)."""
        if self._compact_costs is None:
            costs = [self.compact(k, messages, _counted)[0] for k in range(len(self.turns))]
            self._compact_costs = np.array(costs, dtype=np.int64)
        return self._compact_costs

    def positions(self, keys: _Ints) -> _Ints:
        """The turns (positions in :attr:`turns`) of the index's ``keys``."""
        if self._starts is None:
            self._starts = np.fromiter(self.keys, dtype=np.int64, count=len(self.keys))
        return np.searchsorted(self._starts, keys)


def _positions_in(units: list[Unit]) -> list[int]:
    """The positions of ``units``' messages, in order."""
    return [i for u in units for i in u.indices]


def _counted(unit: Unit) -> int:
    return unit.cost


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
