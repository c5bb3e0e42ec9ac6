"""The relevance ranking behind ``recall``: the kept index (numpy postings in segments) against a
fresh ranking, and both against SQLite FTS5's own bm25 as an independent oracle."""

from __future__ import annotations

import random
import sqlite3
import threading
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from session_migrator import Message, ModelWindow, migrate
from session_migrator.recall import _bm25, _feedback, _fts
from session_migrator.recall._bm25 import MAX_QUERY_TERMS, RelevanceIndex, rank_by_relevance

WORDS = "alpha beta gamma locker lockers code coding port ported server invoice flight".split()
RARE = "zeta theta kappa sigma omega".split()


def _doc(rng: random.Random, size: int) -> str:
    return " ".join(rng.choices(WORDS + RARE[: rng.randint(0, len(RARE))], k=size))


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_the_kept_index_over_many_segments_and_dropped_documents_ranks_as_a_fresh_one(
    seed: int,
) -> None:
    rng = random.Random(seed)
    docs = {5 * i: _doc(rng, rng.choice((1, 3, 12, 40, 300))) for i in range(60)}
    keys = sorted(docs)
    # tiny batches and merge limits: many segments, merged as they come, and rebuilds; the
    # fresh rankings indexed in one part or in two at once
    with (
        patch.object(_bm25, "_BATCH_CHARS", rng.choice((1, 200, 2000))),
        patch.object(_bm25, "_MERGE_RATIO", rng.choice((1, 2, 4))),
        patch.object(_bm25, "_PARALLEL_CHARS", rng.choice((1, 500, 10**9))),
    ):
        index: RelevanceIndex[int] = RelevanceIndex(docs.__getitem__)
        held: set[int] = set()
        for _ in range(10):
            roll = rng.random()
            if roll < 0.3:  # a few documents dropped (some come back later)
                held -= set(rng.sample(sorted(held), k=min(len(held), rng.randint(1, 4))))
            elif roll < 0.4:  # most dropped: the index is made again
                held = set(rng.sample(sorted(held), k=len(held) // 4))
            held |= set(rng.sample(keys, k=rng.randint(1, 8)))
            current = sorted(held)
            index.sync({k: k for k in current})
            assert index.keys() == current
            for query in (
                " ".join(rng.choices(WORDS + RARE, k=3)),
                " ".join(rng.sample(WORDS + RARE, k=MAX_QUERY_TERMS + 1)),
            ):
                fresh = rank_by_relevance([docs[k] for k in current], query)
                assert index.rank(query) == [(current[i], score) for i, score in fresh]
                # and with the second hop
                fresh = rank_by_relevance([docs[k] for k in current], query, hop=True)
                at, scores = index.ranked(query, hop=True)
                assert list(zip(at.tolist(), scores.tolist(), strict=True)) == [
                    (current[i], score) for i, score in fresh
                ]
        index.close()


def _workers() -> list[threading.Thread]:
    """Recall's worker threads still alive (other tests' threads may come and go meanwhile)."""
    return [t for t in threading.enumerate() if t.name.startswith("session-migrator-recall")]


def test_many_documents_are_indexed_in_two_halves_at_once_and_rank_as_in_one() -> None:
    rng = random.Random(3)
    docs = [_doc(rng, rng.choice((5, 80, 400))) for _ in range(400)]
    assert sum(map(len, docs)) > _bm25._PARALLEL_CHARS  # the default splits these
    assert _bm25._halfway(docs) > 0
    with patch.object(_bm25, "_Part", wraps=_bm25._Part) as parts:
        halves = rank_by_relevance(docs, "alpha " + " ".join(RARE[:5]))
    assert parts.call_count == 2
    assert not _workers()  # the worker is gone
    with patch.object(_bm25, "_PARALLEL_CHARS", 10**9):
        whole = rank_by_relevance(docs, "alpha " + " ".join(RARE[:5]))
    assert halves == whole
    assert len(whole) > 50
    # a small input or a single document stays in one part, and so does everything when
    # SQLite was built for a single thread
    assert _bm25._halfway(docs[:3]) == 0
    assert _bm25._halfway(["x" * (_bm25._PARALLEL_CHARS + 1)]) == 0
    with patch.object(_bm25.sqlite3, "threadsafety", 0):
        assert _bm25._halfway(docs) == 0


def test_a_failing_half_fails_the_ranking_and_leaves_no_worker() -> None:
    docs = ["alpha beta " * 20_000, "beta gamma " * 20_000]
    original = _bm25._Part.__init__

    def failing(self: object, con: sqlite3.Connection, documents: list[str], first: int) -> None:
        if first:
            raise sqlite3.OperationalError("disk I/O error")
        original(self, con, documents, first)  # type: ignore[arg-type]

    with (
        patch.object(_bm25._Part, "__init__", failing),
        pytest.raises(sqlite3.OperationalError, match="disk I/O"),
    ):
        rank_by_relevance(docs, "gamma")
    assert not _workers()
    assert [k for k, _ in rank_by_relevance(docs, "gamma")] == [1]  # and it works again


def test_long_documents_are_measured_exactly_and_a_shorter_one_ranks_first() -> None:
    # lengths past one and two bytes of FTS5's size varint (128 and 16,384 tokens)
    filler = "lorem ipsum dolor sit amet consectetur adipiscing elit sed eiusmod"
    docs = [
        "marigold " + " ".join([filler] * 20),
        "marigold " + " ".join([filler] * 2000),
        "marigold quartz",
        " ".join([filler] * 3),
    ]
    fresh = rank_by_relevance(docs, "marigold")
    assert [k for k, _ in fresh] == [2, 0, 1]  # same count, shorter document first
    index: RelevanceIndex[int] = RelevanceIndex(docs.__getitem__)
    index.sync({k: k for k in range(len(docs))})
    assert index.rank("marigold") == fresh
    index.close()


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("halves", [False, True])
def test_scores_are_fts5_bm25(seed: int, halves: bool) -> None:
    """For questions of plain words (one token each), FTS5's bm25 over the same documents
    gives the same scores: the same idf, saturation and length normalisation; also when the
    documents are indexed in two halves at once.
    """
    rng = random.Random(seed)
    docs = [_doc(rng, rng.randint(1, 60)) for _ in range(80)]
    query = " ".join(rng.sample(WORDS + RARE, k=6))
    with patch.object(_bm25, "_PARALLEL_CHARS", 1 if halves else 10**9):
        ours = dict(rank_by_relevance(docs, query))
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE d USING fts5(body, tokenize='porter unicode61')")
    con.executemany("INSERT INTO d(rowid, body) VALUES (?, ?)", enumerate(docs, 1))
    # the question's stems, in the order this project searches them (the index's order)
    stems = sorted({s for word in query.split() for s in _stems(con, word)})
    match = " OR ".join(f'"{s}"' for s in stems)
    theirs = dict(con.execute("SELECT rowid - 1, -bm25(d) FROM d WHERE d MATCH ?", (match,)))
    con.close()
    assert ours.keys() == theirs.keys()
    for k, score in ours.items():
        assert score == pytest.approx(theirs[k], rel=1e-12)


def _stems(con: sqlite3.Connection, word: str) -> list[str]:
    con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS w USING fts5(b, tokenize='porter unicode61')")
    con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS wv USING fts5vocab(w, 'row')")
    con.execute("DELETE FROM w")
    con.execute("INSERT INTO w(b) VALUES (?)", (word,))
    return [t for (t,) in con.execute("SELECT term FROM wv")]


def test_a_question_is_searched_by_its_stems_without_stop_words() -> None:
    docs = [
        "the and of what is",  # stop words only
        "a foo walked in",
        "bar none",
        "she runs quickly",
        "x marks the spot",  # one-character tokens are not searched
    ]
    found = {k for k, _ in rank_by_relevance(docs, "What is the running foo_bar x?")}
    # 'foo_bar' is two tokens (foo, bar), 'running' and 'runs' share a stem
    assert found == {1, 2, 3}
    assert rank_by_relevance(docs, "the and of") == []
    assert rank_by_relevance(docs, "") == []
    assert rank_by_relevance([], "foo") == []


def test_a_long_question_is_searched_by_its_rarest_stems() -> None:
    common = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho"
    docs = [common] * 20 + ["alpha sigma", "tau upsilon"]
    question = common + " sigma tau"  # 18 stems: the two rarest are in
    found = [k for k, _ in rank_by_relevance(docs, question)]
    # alpha (in 21 of 22 documents) is the commonest: left out; sigma and tau tie, the later first
    assert found[:2] == [21, 20]
    index: RelevanceIndex[int] = RelevanceIndex(docs.__getitem__)
    index.sync({k: k for k in range(len(docs))})
    assert index.rank(question) == rank_by_relevance(docs, question)
    index.close()


def _fts5_stems(tokenizer: _fts._Tokenizer, text: str) -> list[str]:
    """FTS5's own answer: the question's distinct stems read from the index."""
    stop = _fts._stop_stems or frozenset()
    return [s for s in tokenizer._distinct(text) if len(s) > 1 and s not in stop]


_WORDS = (
    "running runs ran caresses ponies ties generalization hopping connected electricity sky "
    "the a I x1 ABC it's e.g. 123 0x1F a_b CamelCase naïve Ünïcödé"
).split()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_WORDS), st.text(alphabet=st.characters(max_codepoint=127), max_size=4)
        ),
        max_size=30,
    )
)
def test_an_ascii_question_is_stemmed_from_the_memo_as_fts5_stems_it(parts: list[str]) -> None:
    # the memo path (ASCII words split here, each stem remembered) and FTS5's own path
    # agree on any text: every ASCII character is a separator or part of a word in both
    text = " ".join(parts) if len(parts) % 2 else "".join(parts)
    tokenizer = _fts._Tokenizer()
    try:
        assert tokenizer.stems(text) == _fts5_stems(tokenizer, text)
        assert tokenizer.stems(text) == _fts5_stems(tokenizer, text)  # from the memo now
    finally:
        tokenizer.close()


def test_every_ascii_character_separates_words_or_joins_them_as_fts5_does() -> None:
    tokenizer = _fts._Tokenizer()
    try:
        for code in range(128):
            c = chr(code)
            text = f"running{c}jumps{c}x{c}Cafe{c}the{c}ab{c}42abc{c}"
            assert tokenizer.stems(text) == _fts5_stems(tokenizer, text), repr(c)
    finally:
        tokenizer.close()


def test_the_stem_memo_is_emptied_when_full_and_keeps_answering() -> None:
    tokenizer = _fts._Tokenizer()
    try:
        with patch.object(_fts, "_STEM_MEMO_SIZE", 5):
            _fts._stem_memo.clear()
            first = tokenizer.stems("alpha beta gamma delta")
            assert len(_fts._stem_memo) == 4
            second = tokenizer.stems("epsilon zeta eta theta running")  # would hold 9: emptied
            assert set(_fts._stem_memo) == {"epsilon", "zeta", "eta", "theta", "running"}
        assert first == ["alpha", "beta", "delta", "gamma"]
        assert second == ["epsilon", "eta", "run", "theta", "zeta"]
    finally:
        tokenizer.close()
        _fts._stem_memo.clear()


def test_importing_the_core_does_not_import_numpy() -> None:
    """numpy is recall's alone: the CLI and a fit that does not recall start without it."""
    import subprocess
    import sys

    code = "import sys, session_migrator; assert 'numpy' not in sys.modules, 'numpy imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lone_surrogates_are_searched_around_not_refused() -> None:
    """UTF-8 cannot encode a lone surrogate (JSON can carry one): recall tokenizes it as a
    separator, and the recalled message is the original one.
    """
    docs = ["lockers \ud800 in the hall", "plain text", "more \udfff lockers here lockers"]
    fresh = rank_by_relevance(docs, "where are the lockers \udc80?")
    assert [k for k, _ in fresh] == [2, 0]
    index: RelevanceIndex[int] = RelevanceIndex(docs.__getitem__)
    index.sync({k: k for k in range(len(docs))})
    assert index.rank("where are the lockers \udc80?") == fresh
    index.sync({0: 0, 1: 1})  # dropping a document with a surrogate
    assert [k for k, _ in index.rank("lockers")] == [0]
    index.close()

    messages = [Message("system", "You are terse.", id="s")]
    for i in range(30):
        topic = "the lockers code is 4412 \ud800" if i == 3 else f"filler topic {i}"
        messages.append(Message("user", f"{topic} " + "word " * 40, id=f"u{i}"))
        messages.append(Message("assistant", "noted " * 40, id=f"a{i}"))
    messages.append(Message("user", "What is the lockers code?", id="q"))
    window = ModelWindow("w", "p", 1500, 1500, 0, "o200k_base", "explicit")
    result = migrate(messages, window, strategy="auto", reserve_output=0)
    assert "u3" in result.report.recalled_ids
    recalled = next(m for m in result.messages if m.id == "u3")
    assert recalled is messages[7]  # the original, surrogate and all


def test_a_cut_part_growing_a_turn_at_a_time_keeps_few_segments() -> None:
    rng = random.Random(7)
    docs = {k: _doc(rng, rng.randint(5, 80)) for k in range(1000)}
    index: RelevanceIndex[int] = RelevanceIndex(docs.__getitem__)
    for n in range(1, len(docs) + 1):  # one more turn cut at each fit
        index.sync({k: k for k in range(n)})
    # merged as they come: about the logarithm of their number, not one per turn
    assert len(index._segments) <= 12
    query = "zeta kappa locker"
    assert index.rank(query) == rank_by_relevance([docs[k] for k in range(len(docs))], query)
    index.close()


def test_the_second_hop_finds_a_turn_that_names_what_the_best_turn_names() -> None:
    # the question's words are in one turn only; the turn that says more of the same (the
    # sister's name, the town) shares none of them, and only the second hop brings it
    filler = [f"We spoke about the {w} plans for the week." for w in WORDS]
    docs = [
        *filler,
        "My sister Odalys moved north to Tromso last spring.",
        *filler,
        "Odalys wrote that the northern lights over Tromso are unreal.",
        "Tromso is far; Odalys flies home at Christmas.",
        *filler,
    ]
    best, later = len(filler), 2 * len(filler) + 1
    question = "Where does my sister live now?"
    plain = [k for k, _ in rank_by_relevance(docs, question)]
    assert plain[0] == best
    assert later not in plain
    hopped = [k for k, _ in rank_by_relevance(docs, question, hop=True)]
    assert hopped[0] == best
    assert later in hopped[1:3]
    assert set(hopped[3:]).isdisjoint({later, later + 1})
    index: RelevanceIndex[int] = RelevanceIndex(docs.__getitem__)
    index.sync({k: k for k in range(len(docs))})
    assert index.ranked(question, hop=True)[0].tolist() == hopped
    index.close()


def test_the_second_hop_adds_stems_held_by_two_documents_at_least_and_not_asked() -> None:
    stems = _feedback.feedback_stems(
        [["odaly", "tromso", "sister", "uniqu"]],
        lambda asked: np.array([{"odaly": 3, "tromso": 2, "uniqu": 1}.get(a, 9) for a in asked]),
        documents=10,
        asked={"sister"},
    )
    assert stems == ["odaly", "tromso"]  # ("uniqu" is in this turn alone)


def test_the_second_hop_over_turns_of_thousands_of_words_ranks_them_all() -> None:
    # the best turns are long (a pasted log): their stems are asked of SQLite in parts (an
    # older SQLite takes 999 parameters a statement; this one may take more)
    words = [f"w{k}x" for k in range(40_000)]
    docs = [" ".join(["ledger", *words[k::3]]) for k in range(3)] + ["ledger alone"] * 3
    ranked = rank_by_relevance(docs, "the ledger", hop=True)
    assert sorted(k for k, _ in ranked) == list(range(6))
