"""One property over every backend (issue 41): random appends, replaces, deletes, erasures and
fits with embeddings, then the raw tables and keys are read: no vector without its message,
none made from another text, nothing of an erased user anywhere."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from session_migrator import Embeddings, Message, ModelWindow, SessionFitter
from session_migrator.recall._embeddings import embedded_text, text_digest
from session_migrator.store import BaseSessionStore, open_store
from tests.store._raw import raw_vectors, traces

SESSIONS = ("s0", "s1", "s2")
USERS = (7, "u1")  # (an integer id, and a string one)
WORDS = ("car", "dog", "boat", "rain", "tea", "moon")


def _embed(texts: Sequence[str]) -> list[list[float]]:
    return [[1.0 + b / 64 for b in text_digest(t)[:4]] for t in texts]


MODEL = Embeddings(_embed, name="property")
WINDOW = ModelWindow("tiny", "example", 120, 120, 0, "o200k_base", "explicit")

op = st.one_of(
    st.tuples(st.just("append"), st.sampled_from(SESSIONS), st.integers(0, 5),
              st.lists(st.sampled_from(WORDS), min_size=3, max_size=12)),
    st.tuples(st.just("replace"), st.sampled_from(SESSIONS), st.integers(0, 5),
              st.lists(st.sampled_from(WORDS), min_size=3, max_size=12)),
    st.tuples(st.just("delete"), st.sampled_from(SESSIONS), st.integers(0, 5), st.just([])),
    st.tuples(st.just("erase"), st.sampled_from(SESSIONS), st.integers(0, 1), st.just([])),
    st.tuples(st.just("fit"), st.sampled_from(SESSIONS), st.integers(0, 5), st.just([])),
    st.tuples(st.just("fit"), st.sampled_from(SESSIONS), st.integers(0, 5), st.just([])),
)  # fmt: skip


def _text(mid: int, words: list[str]) -> str:
    return f"message {mid}: " + " ".join(words * 3)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(op, min_size=8, max_size=30))
def test_derived_data_follows_its_messages(store_url: str, ops: list[tuple]) -> None:  # type: ignore[type-arg]
    store = open_store(store_url)
    try:
        for info in store.list_sessions(None):  # (a clean store for each example)
            store.delete_session(info.id)
        _run(store, ops)
    finally:
        store.close()


def _run(store: BaseSessionStore, ops: list[tuple]) -> None:  # type: ignore[type-arg]
    user_of = {sid: USERS[k % 2] for k, sid in enumerate(SESSIONS)}
    fitters: dict[str, SessionFitter] = {}
    erased: set[str] = set()
    # (then every session fitted by the fitter that lived through it all)
    for kind, sid, n, words in [*ops, *(("fit", s, 0, []) for s in SESSIONS)]:
        if kind in ("append", "replace"):
            if kind == "replace":
                store.delete_messages(sid, [f"m{n}"])
            said = [Message("user", _text(n, words), id=f"m{n}")]
            said += [
                Message("assistant", f"noted {k}: " + " ".join(words[::-1] * 3)) for k in (1, 2)
            ]
            store.append(sid, said, metadata={"user_id": user_of[sid]})
            erased.discard(sid)
        elif kind == "delete":
            store.delete_messages(sid, [f"m{n}"])
        elif kind == "erase":
            user = USERS[n]
            gone = [s for s in SESSIONS if user_of[s] == user]
            store.erase_user(str(user) if n == 0 and isinstance(user, int) else user)
            erased.update(gone)
            for s in gone:
                fitters.pop(s, None)
        elif store.get_session(sid) is not None:  # a fit, by a fitter that lives on
            fitter = fitters.get(sid) or SessionFitter(
                sid, store=store, strategy="recall", embeddings=MODEL
            )
            fitters[sid] = fitter
            fitter.append([Message("user", f"what about the {WORDS[n % len(WORDS)]}?")])
            fitter.fit(WINDOW)
    for (sid, mid, _model), raw in raw_vectors(store).items():
        held = {m.id: m for m in store.load(sid)} if store.get_session(sid) else {}
        assert mid in held, f"a vector of {sid}/{mid} without its message"
        assert raw[:16] == text_digest(embedded_text(held[mid])), f"{sid}/{mid}: another text"
    for sid in erased:
        assert traces(store, sid) == [], sid
