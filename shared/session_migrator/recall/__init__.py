"""The recall layer: bringing back what the question needs. The relevance index (``_bm25`` over
``_fts`` stems, its arithmetic in ``_scoring``, its second hop in ``_feedback``), the recall of
cut turns (``_recall``), the dates things were said (``_when``), the exchanges of a user's
other sessions (``_related``), and hybrid recall with the user's embedding model
(``_embeddings``: the model behind one interface; ``_hybrid``: bm25 and cosine similarity
fused; ``_local``: the optional local model, all-MiniLM-L6-v2 run in numpy by ``_minilm``).

It imports the fitting layer and those under it only.
"""
