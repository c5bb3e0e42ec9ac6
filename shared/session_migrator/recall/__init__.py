"""The recall layer: bringing back what the question needs. The relevance index (``_bm25`` over
``_fts`` stems), the recall of cut turns (``_recall``), the dates things were said (``_when``)
and the exchanges of a user's other sessions (``_related``).

It imports the fitting layer and those under it only.
"""
