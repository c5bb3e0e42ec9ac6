"""Recall's second hop (pseudo-relevance feedback, as RM3 does): after a first ranking, the
question is searched again by the stems its best documents share and it does not, and the two
rankings are added up (see :data:`FEEDBACK_DOCS`). Used by both rankings of
:mod:`session_migrator.recall._bm25`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from session_migrator.recall._fts import _Floats, _Ints

__all__ = ["FEEDBACK_DOCS", "FEEDBACK_TERMS", "FEEDBACK_WEIGHT", "feedback_stems", "with_feedback"]

#: The second hop (pseudo-relevance feedback, as RM3 does): the question is searched again by
#: the :data:`FEEDBACK_TERMS` stems that its :data:`FEEDBACK_DOCS` best documents hold and it
#: does not (the people, places and things they name; each stem weighed by its idf and by how
#: short the documents holding it are), and the two rankings add up, the second's at
#: :data:`FEEDBACK_WEIGHT` (each scaled to its best score). A turn that answers the question in
#: words other than the question's, but names what the best turns name, so ranks higher.
FEEDBACK_DOCS = 5
FEEDBACK_TERMS = 10
FEEDBACK_WEIGHT = 0.5


def feedback_stems(
    top: Sequence[list[str]], holding: Callable[[list[str]], _Ints], documents: int, asked: set[str]
) -> list[str]:
    """The second hop's stems (see :data:`FEEDBACK_DOCS`): of the stems of the best documents
    (``top``, each document's distinct stems), those not ``asked`` and held by at least two of
    the ``documents`` (``holding``: how many hold each), by weight."""
    candidates = sorted({s for stems in top for s in stems if s not in asked})
    candidates = [s for s in candidates if not s.startswith("smday")]  # (days: see _when)
    if not candidates or documents < 2:
        return []
    held = dict(zip(candidates, holding(candidates).tolist(), strict=True))
    weight: dict[str, float] = {}
    for stems in top:
        share = 1.0 / max(len(stems), 1)
        for stem in stems:
            n = held.get(stem, 0)
            if n >= 2:
                weight[stem] = weight.get(stem, 0.0) + share * math.log(documents / n)
    best = sorted(weight.items(), key=lambda item: (-item[1], item[0]))
    # (in the order a question's stems come in, so that every ranking sums alike)
    return sorted(stem for stem, w in best[:FEEDBACK_TERMS] if w > 0.0)


def with_feedback(
    first: tuple[_Ints, _Floats], second: tuple[_Ints, _Floats]
) -> tuple[_Ints, _Floats]:
    """Two rankings (keys and scores, best first) added up, each scaled to its best score and
    the second weighed by :data:`FEEDBACK_WEIGHT`; best first (ties: the later key first)."""
    (k1, s1), (k2, s2) = first, second
    if not len(k2):
        return first
    keys = np.concatenate((k1, k2))
    values = np.concatenate((s1 / s1[0], FEEDBACK_WEIGHT * s2 / s2[0]))
    unique, at = np.unique(keys, return_inverse=True)
    total = np.bincount(at, weights=values, minlength=len(unique))
    order = np.lexsort((-unique, -total))
    return unique[order], total[order].astype(np.float64, copy=False)
