"""Full-text relevance ranking (bm25) over stems from :mod:`session_migrator.recall._fts`, scored
with numpy.

A question is searched by its distinct stems, less stop words (by at most
:data:`MAX_QUERY_TERMS`, its rarest); a document's score is the sum, over those stems, of the
classic bm25 weight (k1 = 1.2, b = 0.75, FTS5's idf). :func:`rank_by_relevance` ranks a list
once from an FTS5 index and the postings of the question's stems alone; a
:class:`RelevanceIndex` holds every stem's postings in numpy arrays, so that a new question over
a cut part that grows costs its own stems and postings, not a pass over the cut part.
"""

from __future__ import annotations

import bisect
import itertools
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from session_migrator.recall._feedback import FEEDBACK_DOCS, feedback_stems, with_feedback
from session_migrator.recall._fts import (
    _connection,
    _Floats,
    _Ints,
    _Part,
    _Small,
    _Tokenizer,
)
from session_migrator.recall._scoring import (
    MAX_QUERY_TERMS,
    _best_first,
    _idfs,
    _rarest,
    _runs,
    _scores,
)

__all__ = ["MAX_QUERY_TERMS", "RelevanceIndex", "rank_by_relevance"]

#: The kept index tokenizes new documents this many characters at a time (bounding the memory
#: the tokenizer's scratch index and its output take), each batch one segment of postings; a
#: full batch's segment is final (merging it would take as much memory again) ...
_BATCH_CHARS = 2_000_000
#: ... and the others are merged into the one before while that one has at most this many
#: times their postings, so that a cut part growing a turn at a time keeps a few segments (about
#: the logarithm of their number), each posting sorted again a logarithmic number of times.
_MERGE_RATIO = 2


def rank_by_relevance(
    documents: Sequence[str], query: str, hop: bool = False
) -> list[tuple[int, float]]:
    """Indices of ``documents`` matching ``query``, most relevant first, with bm25 scores.

    Scores are higher the better; ties go to the later document. Documents with none of the
    query's stems are left out. Porter stemming and Unicode folding apply. A question of more
    than :data:`MAX_QUERY_TERMS` stems is searched by its rarest ones. With ``hop``, a second
    hop (see :data:`FEEDBACK_DOCS`) is added in (the scores are then each ranking's share of
    its best, added up).

    Many documents are indexed in two halves at once, in a worker thread and this one (SQLite
    tokenizes without holding the GIL): the index is most of a cold migration's time beside
    tokenizing.
    """
    if not documents:
        return []
    tokenizer = _Tokenizer()
    parts: list[_Part] = []
    n = len(documents)
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
        lengths = np.zeros(n, dtype=np.float64)
        for part in parts:
            part.lengths(lengths)

        def holding(searched: list[str]) -> _Ints:
            counts = np.zeros(len(searched), dtype=np.int64)
            for part in parts:
                counts += part.holding(searched)
            return counts

        def ranking(searched: list[str]) -> tuple[_Ints, _Floats]:
            counts = holding(searched)
            chosen = _rarest(counts)
            if not len(chosen):
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
            picked = [searched[k] for k in chosen.tolist()]
            docs: list[_Small] = []
            tfs: list[_Small] = []
            terms: list[_Ints] = []
            where = {stem: k for k, stem in enumerate(picked)}
            for part in parts:
                postings = part.postings(picked)
                ids = np.array([where[t] for t in postings.terms], dtype=np.int64)
                terms.append(ids[postings.term])
                docs.append(postings.doc.astype(np.int64) + part.first)
                tfs.append(postings.tf)
            # each document is in one part, its postings in stem order: its sum is taken in
            # that order
            idf = _idfs(n, counts[chosen])[np.concatenate(terms)]
            scores = _scores(
                np.concatenate(docs), np.concatenate(tfs), idf, lengths, float(lengths.sum()) / n
            )
            return _best_first(scores, np.arange(n, dtype=np.int64), True)

        found = ranking(stems)
        if hop and len(found[0]):
            top = [tokenizer.stems(documents[k]) for k in found[0][:FEEDBACK_DOCS].tolist()]
            more = feedback_stems(top, holding, n, set(stems))
            if more:
                found = with_feedback(found, ranking(more))
    finally:
        for part in parts[1:]:
            part.con.close()
        tokenizer.close()
    keys, values = found
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
        # the last ranking: its question, keys and scores (and with the second hop)
        self._ranked: tuple[str, _Ints, _Floats] | None = None
        self._hopped: tuple[str, _Ints, _Floats] | None = None

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
        self._ranked = self._hopped = None
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

    def ranked(self, query: str, hop: bool = False) -> tuple[_Ints, _Floats]:
        """:meth:`rank` as arrays: the keys and their scores, best first; with ``hop``, with
        the second hop added in, as :func:`rank_by_relevance` adds it."""
        if not hop:
            return self._rank(query)
        if self._hopped is not None and self._hopped[0] == query:
            return self._hopped[1], self._hopped[2]
        found = self._rank(query)
        if len(found[0]):
            questions = self._questions
            top = [
                questions.stems(self._text(self._docs[k]))
                for k in found[0][:FEEDBACK_DOCS].tolist()
            ]
            asked = set(questions.stems(query))
            more = feedback_stems(top, self._holding, len(self._docs), asked)
            if more:
                found = with_feedback(found, self._scored(more))
        self._hopped = (query, *found)
        return found

    def _holding(self, stems: list[str]) -> _Ints:
        """How many of the documents held hold each of ``stems``."""
        get = self._vocab.get
        ids = np.array([get(s, -1) for s in stems], dtype=np.int64)
        counts = self._df.take(ids, mode="clip") if len(self._df) else np.zeros_like(ids)
        counts[ids < 0] = 0
        return counts

    def ranked_keys(self, query: str) -> _Ints:
        """:meth:`rank`'s keys alone."""
        return self._rank(query)[0]

    def _rank(self, query: str) -> tuple[_Ints, _Floats]:
        """The same query on the same documents is answered from the last ranking."""
        if self._ranked is not None and self._ranked[0] == query:
            return self._ranked[1], self._ranked[2]
        stems = self._questions.stems(query) if self._docs else []
        found = self._scored(stems)
        self._ranked = (query, *found)
        return found

    def _scored(self, stems: list[str]) -> tuple[_Ints, _Floats]:
        """The documents holding any of ``stems`` (the rarest :data:`MAX_QUERY_TERMS`), best
        first, and their scores."""
        held = len(self._docs)
        get = self._vocab.get
        ids = np.array([get(s, -1) for s in stems], dtype=np.int64)
        counts = self._df.take(ids, mode="clip") if len(self._df) else np.zeros_like(ids)
        counts[ids < 0] = 0
        chosen = _rarest(counts)
        if not len(chosen):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
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
        return _best_first(scores, self._keys[:size], self._increasing)

    def close(self) -> None:
        self._tokenizer.close()
        self._questions.close()
