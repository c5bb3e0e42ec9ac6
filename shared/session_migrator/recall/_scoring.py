"""bm25's arithmetic, shared by the one-shot ranking and the kept index of
:mod:`session_migrator.recall._bm25`: which of a question's stems to search by, their idf
(FTS5's), each document's score from the stems' postings, and the ranking of the scored ones.
"""

from __future__ import annotations

import math

import numpy as np

from session_migrator.recall._fts import _Floats, _Ints, _Small

__all__ = ["MAX_QUERY_TERMS"]

#: A long question is searched by this many of its stems, the rarest in the documents: bm25
#: gives common stems little weight anyway, and each stem's postings cost time.
MAX_QUERY_TERMS = 16
_K1 = 1.2
_B = 0.75


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
