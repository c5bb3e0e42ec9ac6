"""Hybrid recall: the cut turns ranked by bm25 and by an embedding model, fused.

With ``embeddings=`` (see :mod:`session_migrator.recall._embeddings`),
:func:`~session_migrator.recall._recall.recall_turns` asks the fit's :class:`HybridRecall` for
each cut turn's cosine similarity to the question (a turn's: its best message's), ranks the
turns by it, and fuses that ranking with bm25's by reciprocal rank (:func:`fuse`, ``k`` =
:data:`RRF_K`); the neighbour bonus then applies to the fused scores as it does to bm25's. A
turn that shares no word with the question (a paraphrase) can so be recalled.

Each message is embedded once: its unit vector is kept in the model's memory (by id and text)
and, under a :class:`~session_migrator.SessionFitter`, in its store (by id and model key, see
``get_vectors`` / ``put_vectors``), so a re-fit embeds only the newly cut messages and the
question, and a reopened store embeds nothing twice.

Every call to the model in a fit shares one deadline (``Embeddings.timeout``): a model that
raises, or has not answered when it passes, leaves recall to bm25 alone for that fit, and the
report says so (``report.fallbacks``). A late answer is kept for the next fit.

The fit is told of its :class:`HybridRecall` through a context variable
(:func:`~session_migrator.recall._embeddings.recalling`), so the strategies' signatures are
those they had.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from session_migrator._deadline import Deadline, DeadlinePassed, Pending
from session_migrator._redact import redact_secrets
from session_migrator.messages._messages import Message
from session_migrator.recall._embeddings import (
    DIGEST_BYTES,
    StoredVectors,
    as_embeddings,
    embedded_text,
    text_digest,
)

__all__ = [
    "DIGEST_BYTES",
    "RRF_K",
    "HybridRecall",
    "best_first",
    "embedded_text",
    "fuse",
    "hybrid_for",
    "stored_vector",
    "text_digest",
]  # (embedded_text, text_digest and DIGEST_BYTES are ._embeddings', named here too)

#: The reciprocal-rank fusion constant (Cormack et al. 2009; the LoCoMo benchmark's yardstick).
RRF_K = 60
_DAY_TOKENS = re.compile(r"\bsmday\d{4}\b")
_Floats = npt.NDArray[np.float64]
_Ints = npt.NDArray[np.int64]


def stored_vector(raw: bytes, digest: bytes) -> npt.NDArray[np.float32] | None:
    """The vector a store kept (``raw``: the digest of its text, then float32 numbers), or
    ``None`` when it was made from another text (a message stored again under its id), is of
    an older layout, or holds a number that is not finite."""
    if len(raw) <= DIGEST_BYTES or (len(raw) - DIGEST_BYTES) % 4 or raw[:DIGEST_BYTES] != digest:
        return None
    vector = np.frombuffer(raw, dtype=np.float32, offset=DIGEST_BYTES)
    return vector if bool(np.isfinite(vector).all()) else None


class HybridRecall:
    """One fit's dense ranking (see the module docstring)."""

    def __init__(self, vectors: StoredVectors) -> None:
        self.vectors = vectors
        self.embeddings = vectors.embeddings
        self.deadline: Deadline | None = None
        self.failed: str | None = None
        self.used = False
        self.embedded = 0
        self.fallbacks: list[str] = []
        self._sims: tuple[str, npt.NDArray[np.float32]] | None = None
        self._asking: tuple[str, Pending] | None = None  # (the question being embedded)

    # -- what recall asks -------------------------------------------------------------------

    def similarities(self, turns: Sequence[Sequence[Message]], query: str) -> _Floats | None:
        """Each turn's cosine similarity to ``query`` (its best message's), or ``None`` when
        the model failed (then bm25 ranks alone, and :attr:`fallbacks` says why)."""
        if not turns:
            return None
        return self._turn_similarities(
            [m for turn in turns for m in turn], [len(t) for t in turns], query
        )

    def _turn_similarities(
        self, flat: Sequence[Message], sizes: Sequence[int], query: str
    ) -> _Floats | None:
        """:meth:`similarities` of turns given as their messages in a row (``flat``) and each
        turn's count of them (``sizes``)."""
        if not sizes:
            return None
        rows = self.rows(flat)
        if rows is None:
            return None
        return self.similarities_at(rows, np.asarray(sizes, dtype=np.int64), query)

    def rows(self, messages: Sequence[Message]) -> _Ints | None:
        """The rows of ``messages``' vectors in the session's table (those not there yet
        embedded or read first), or ``None`` when the model failed. A row stays a message's
        for as long as its :class:`StoredVectors` lives (see :meth:`table_key`)."""
        if self.failed is not None:
            return None
        try:
            return self._rows_of(messages)
        except Exception as exc:
            self._fail(exc)
            return None

    def table_key(self) -> object:
        """What the rows :meth:`rows` gives are rows of: the same object while they hold."""
        return self.vectors

    def similarities_at(self, rows: _Ints, sizes: _Ints, query: str) -> _Floats | None:
        """Each turn's cosine similarity to ``query`` (its best message's), given its messages'
        rows one turn after another (``rows``) and each turn's count of them (``sizes``); or
        ``None`` when the model failed."""
        if self.failed is not None or not len(sizes):
            return None
        question = _DAY_TOKENS.sub(" ", query).strip() or query
        try:
            by_row = self._by_row(question)
        except Exception as exc:
            self._fail(exc)
            return None
        sims = by_row[rows] if len(rows) else np.zeros(0)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        out = np.full(len(sizes), -1.0)
        nonempty = sizes > 0
        if nonempty.any():
            out[nonempty] = np.maximum.reduceat(sims, starts[nonempty])
        self.used = True
        return out

    def _by_row(self, question: str) -> npt.NDArray[np.float32]:
        """Every stored row's similarity to ``question``, computed once a fit for it (and again
        when rows were added since)."""
        table, n = self.vectors.table, len(self.vectors.rows)
        held = self._sims
        if held is not None and held[0] == question and len(held[1]) == n:
            return held[1]
        q = self._query_vector(question)
        if table is None or n == 0:
            by_row: npt.NDArray[np.float32] = np.zeros(0, dtype=np.float32)
        else:
            if table.shape[1] != len(q):
                raise ValueError(
                    f"embedding model {self.embeddings.key!r} gave the question a vector of "
                    f"{len(q)} numbers and the messages {table.shape[1]}"
                )
            by_row = table[:n] @ q  # (float32: the turns' best are taken as float64)
        self._sims = (question, by_row)
        return by_row

    def asks_about_the_past(
        self,
        messages: Sequence[Message],
        layout: Any,
        query: str,
        counter: Any,
        recent_room: int,
    ) -> bool:
        """Whether the question is about what was said long ago: the earlier turn most like it
        (the current one left out) is older than the newest turns ``recent_room`` tokens hold.
        Then recall gets the room a question about the past gets (a question that says so in
        its words, "what did we ...", gets it without a model). Every turn's messages are
        embedded for it (each once, as always)."""
        units = layout.units
        starts = [k for k, u in enumerate(units) if u.starts_turn]
        if len(starts) < 3:
            return False
        # the earlier turns' messages in a row, and how many each turn has (one pass)
        counts = list(itertools.accumulate((len(u.indices) for u in units), initial=0))
        sizes = [counts[b] - counts[a] for a, b in itertools.pairwise(starts)]
        flat = [messages[i] for u in units[starts[0] : starts[-1]] for i in u.indices]
        sims = self._turn_similarities(flat, sizes, query)
        if sims is None or not len(sims):
            return False
        best = len(sims) - 1 - int(np.argmax(sims[::-1]))  # (ties: the newest)
        used = 0
        for k in range(len(sizes) - 1, -1, -1):
            used += sum(
                layout.unit_cost(u, messages, counter) for u in units[starts[k] : starts[k + 1]]
            )
            if used > recent_room:
                return best <= k
        return False

    def reported(self, report: Any) -> None:
        """Add what this fit's ranking did to a ``MigrationReport``."""
        report.fallbacks = [*report.fallbacks, *self.fallbacks]
        if self.used:
            report.notes = [
                *report.notes,
                f"recall ranked the cut turns by bm25 and {self.embeddings.key} embeddings "
                f"(reciprocal-rank fusion); {self.embedded} message(s) embedded",
            ]

    # -- vectors ----------------------------------------------------------------------------

    def _rows_of(self, messages: Sequence[Message]) -> _Ints:
        """The rows of ``messages``' vectors in the session's table (those not yet in it read
        from the model's memory, the store or the model)."""
        held, rows = self.vectors, self.vectors.rows
        keys = [self._key(m) for m in messages]
        fresh = {k: m for k, m in zip(keys, messages, strict=True) if k not in rows}
        new = list(fresh.values())
        if new:
            vectors = self._vectors_of(new, list(fresh))
            table = held.table
            if table is not None and vectors.shape[1] != table.shape[1]:
                raise ValueError(
                    f"embedding model {self.embeddings.key!r} gave vectors of "
                    f"{vectors.shape[1]} numbers, and {table.shape[1]} before"
                )
            n = len(rows)
            if table is None or n + len(new) > len(table):
                grown = np.zeros((max(2 * (n + len(new)), 64), vectors.shape[1]), np.float32)
                if table is not None:
                    grown[:n] = table[:n]
                held.table = table = grown
            table[n : n + len(new)] = vectors
            for k, key in enumerate(fresh):
                rows[key] = n + k
        return np.fromiter((rows[k] for k in keys), dtype=np.int64, count=len(messages))

    def _key(self, message: Message) -> tuple[str, bytes]:
        """``message``'s id and the digest of its embedded text (memoised for the very message
        object, so a re-fit over the same messages digests none again)."""
        memo = self.vectors.digests
        held = memo.get(message.id)
        if held is not None and held[0] is message:
            return message.id, held[1]
        digest = text_digest(embedded_text(message))
        memo[message.id] = (message, digest)
        return message.id, digest

    def _vectors_of(
        self, messages: Sequence[Message], keys: list[tuple[str, bytes]]
    ) -> npt.NDArray[np.float32]:
        e, held = self.embeddings, self.vectors
        memory = e.memory
        missing = [k for k in dict.fromkeys(keys) if k not in memory]
        from_store: set[tuple[str, bytes]] = set()
        if missing and held.store is not None and held.session_id is not None:
            ask = [k for k in missing if k not in held._asked]
            if ask:
                found = held.store.get_vectors(held.session_id, e.key, [mid for mid, _ in ask])
                held._asked.update(ask)
                with e.lock:
                    for mid, digest in ask:
                        raw = found.get(mid)
                        vector = None if raw is None else stored_vector(raw, digest)
                        if vector is not None:
                            memory[(mid, digest)] = vector
                            from_store.add((mid, digest))
                missing = [k for k in missing if k not in memory]
        dims = self._dims()
        if dims is not None:  # (a stored vector of another size: made again)
            missing += [k for k in from_store if memory[k].shape[0] != dims]
        self._make(messages, keys, missing)
        # (vectors stored by the model under this key before, at another size: made again)
        self._make(messages, keys, _other_size(memory, keys, from_store))
        self._save()
        sizes = {memory[k].shape[0] for k in dict.fromkeys(keys)}
        if len(sizes) > 1:
            raise ValueError(f"embedding model {e.key!r} gave vectors of sizes {sorted(sizes)}")
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([memory[k] for k in keys])

    def _make(
        self,
        messages: Sequence[Message],
        keys: list[tuple[str, bytes]],
        missing: list[tuple[str, bytes]],
    ) -> None:
        """Embed the ``missing`` of ``messages`` (by their ``keys``), to be stored."""
        if not missing:
            return
        memory = self.embeddings.memory
        for k in missing:
            memory.pop(k, None)
        text_of = {k: embedded_text(m) for k, m in zip(keys, messages, strict=True)}
        self._embed([text_of[k] for k in missing], missing)
        self.embedded += len(missing)
        if self.vectors.store is not None:
            self.vectors._unsaved.update(missing)

    def _dims(self) -> int | None:
        """The size of this session's vectors, when some are in its table already."""
        table = self.vectors.table
        return None if table is None or not self.vectors.rows else int(table.shape[1])

    def _embed(self, texts: list[str], keys: list[tuple[str, bytes]]) -> None:
        """Embed ``texts`` in batches within the fit's deadline; each batch's vectors go to the
        model's memory as it comes (also when it comes after the deadline)."""
        e = self.embeddings

        def attempt(batch: list[str], where: list[tuple[str, bytes]], _left: float) -> None:
            found = _unit(np.asarray(e.embed_documents(batch), dtype=np.float32), e.key)
            with e.lock:
                if len(e.memory) + len(where) > e.max_cached:
                    e.memory.clear()  # (a crude bound: the store keeps them all)
                for k, v in zip(where, found, strict=True):
                    e.memory[k] = v

        for start in range(0, len(texts), e.batch_size):
            stop = start + e.batch_size
            self._call(attempt, texts[start:stop], keys[start:stop])

    def ask(self, query: str) -> None:
        """Begin embedding the question ``query`` (the fit ranks by bm25 meanwhile); the
        ranking by similarity waits for it, within the fit's deadline."""
        question = _DAY_TOKENS.sub(" ", query).strip() or query
        if self.failed is not None or self._asking is not None:
            return
        if ("\x00query", question) in self.embeddings.memory:
            return
        try:
            self._asking = (question, self._start(self._query_attempt, question))
        except DeadlinePassed as exc:
            self._fail(exc)

    def _query_attempt(self, text: str, _left: float) -> Any:
        vector = np.asarray([self.embeddings.embed_query(text)], dtype=np.float32)
        return _unit(vector, self.embeddings.key)[0]

    def _query_vector(self, question: str) -> npt.NDArray[np.float32]:
        e = self.embeddings
        key = ("\x00query", question)
        found = e.memory.get(key)
        if found is None:
            asking, self._asking = self._asking, None
            if asking is not None and asking[0] == question:
                found = asking[1].result()
            else:
                found = self._call(self._query_attempt, question)
            with e.lock:
                e.memory[key] = found
        return np.asarray(found, dtype=np.float32)

    def _call(self, attempt: Any, *args: Any) -> Any:
        return self._start(attempt, *args).result()

    def _start(self, attempt: Any, *args: Any) -> Pending:
        if self.deadline is None:
            self.deadline = Deadline(self.embeddings.timeout)
        return self.deadline.start(attempt, *args)

    def _save(self) -> None:
        held = self.vectors
        if not held._unsaved or held.store is None or held.session_id is None:
            return
        memory = self.embeddings.memory
        ready = {k: memory[k] for k in held._unsaved if k in memory}
        if not ready:
            return
        held.store.put_vectors(
            held.session_id,
            self.embeddings.key,
            {mid: digest + v.tobytes() for (mid, digest), v in ready.items()},
        )
        held._unsaved.difference_update(ready)

    def _fail(self, exc: BaseException) -> None:
        if isinstance(exc, DeadlinePassed):
            why = f"no answer within its {self.embeddings.timeout:g} s deadline (timeout=)"
        else:
            why = redact_secrets(f"{type(exc).__name__}: {exc}")
        self.failed = why
        self.fallbacks.append(
            f"embeddings {self.embeddings.key}: {why}; recall ranked the cut turns by bm25 alone"
        )


def _other_size(
    memory: Any, keys: Sequence[tuple[str, bytes]], from_store: set[tuple[str, bytes]]
) -> list[tuple[str, bytes]]:
    """The vectors read from the store whose size is not the model's (that of those it made
    now; all of them when their sizes differ and it made none)."""
    if not from_store:
        return []
    made = [k for k in keys if k not in from_store and k in memory]
    if made:
        dims = memory[made[0]].shape[0]
        return [k for k in from_store if memory[k].shape[0] != dims]
    if len({memory[k].shape[0] for k in from_store}) > 1:
        return list(from_store)
    return []


def _unit(vectors: npt.NDArray[np.float32], key: str) -> npt.NDArray[np.float32]:
    if vectors.ndim != 2:
        raise ValueError(f"vectors must be a list of lists of numbers, got shape {vectors.shape}")
    if not bool(np.isfinite(vectors).all()):  # (never kept: the model is asked again next fit)
        raise ValueError(f"embedding model {key!r} gave a vector holding NaN or an infinite number")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def fuse(found: _Ints, similarities: _Floats, k: int = RRF_K) -> tuple[_Ints, _Floats]:
    """Reciprocal-rank fusion of the bm25 ranking (``found``: turns, best first) and the dense
    one (every turn by ``similarities``, best first; ties: the later turn): each turn's score is
    the sum of ``1 / (k + rank)`` over the rankings it is in (ranks from 1). Returns every
    turn, in order, and its fused score (the neighbour bonus ranks them after, see
    :func:`~session_migrator.recall._recall.recall_turns`)."""
    n = len(similarities)
    score = np.zeros(n, dtype=np.float64)
    if len(found):
        score[found] += 1.0 / (k + np.arange(1, len(found) + 1))
    dense = best_first(similarities)
    score[dense] += 1.0 / (k + np.arange(1, n + 1))
    return np.arange(n, dtype=np.int64), score


def best_first(values: _Floats) -> _Ints:
    """The positions of ``values``, highest first, ties the later position first. (A stable
    sort of many values costs five times a quick one: the quick one is taken, and the few runs
    of equal values it leaves, as dense similarities have, put in order; many, as bm25 scores
    have, take the stable sort.)"""
    at = np.argsort(-values)
    ranked = values[at]
    same = np.flatnonzero(ranked[1:] == ranked[:-1])
    if len(same) > _FEW_TIES:
        return np.arange(len(values) - 1, -1, -1)[np.argsort(-values[::-1], kind="stable")]
    if len(same):
        # each run of equal values: from a position in ``same`` not following another
        firsts = same[np.concatenate(([True], same[1:] != same[:-1] + 1))]
        for first in firsts.tolist():
            last = first + 1
            while last + 1 < len(ranked) and ranked[last + 1] == ranked[first]:
                last += 1
            at[first : last + 1] = np.sort(at[first : last + 1])[::-1]
    out: _Ints = at.astype(np.int64, copy=False)
    return out


#: More ties than this among the values :func:`best_first` ranks: a stable sort.
_FEW_TIES = 32


def hybrid_for(embeddings: Any) -> HybridRecall | None:
    """A fit's :class:`HybridRecall` for ``embeddings`` (a model, an :class:`Embeddings`, or
    a session's :class:`StoredVectors`); ``None`` for ``None``."""
    if embeddings is None:
        return None
    if isinstance(embeddings, StoredVectors):
        return HybridRecall(embeddings)
    return HybridRecall(StoredVectors(as_embeddings(embeddings), None, None))
