"""Searching all of a user's (or a workspace's) messages without loading their sessions.

Every backend keeps a search index as messages are appended, and drops a message's entries when
the message goes (deleted, replaced, erased, purged, its session deleted or expired), in the
same write:

- SQLite: a contentless FTS5 table (``porter unicode61``) filled and emptied by triggers on
  ``messages`` (migration ``0008_message_search``), ranked by FTS5's bm25;
- PostgreSQL: a stored ``tsvector`` column of ``sm_messages`` (``english``) with a GIN index
  (migration ``0008_message_search``), ranked by ``ts_rank``;
- Redis: per session, how many of its messages hold each word and each message's words, and
  per word the set of sessions holding it, kept by the append and delete scripts
  (:class:`~._redis_search.RedisSearch`): a search intersects the question's words' sets with
  the user's (or workspace's) set, then reads the best sessions' messages;
- ``memory://``: each stored message's words, kept beside it (:class:`MemorySearch`).

A word of the question too common to find anything by (:data:`COMMON_MESSAGES` in SQLite and
PostgreSQL, counted by the index up to that number; ``COMMON_SESSIONS`` in Redis) is left out
when the question has rarer words: ranking every message that holds it is what a search costs.

:meth:`NoSearch.search_messages` is the default of a store of one's own: it loads the scope's
sessions. A search is by the question's words (stop words dropped); hits are ``(session id,
message)`` pairs, best first; only sessions of the given user (or workspace) are searched.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, TypeVar

from session_migrator.messages._messages import Message
from session_migrator.store import _codec

__all__ = [
    "COMMON_MESSAGES",
    "SEARCH_LIMIT",
    "MemorySearch",
    "NoSearch",
    "SearchHit",
    "check_search",
    "rank_hits",
    "search_text",
    "search_words",
    "words_of",
]

#: How many hits a search returns unless told.
SEARCH_LIMIT = 100
#: A word of the question held by more stored messages than this is too common to find messages
#: by: it is left out of a backend's search when the question has rarer words (ranking every
#: message holding a common word is what a search costs).
COMMON_MESSAGES = 2_000

SearchHit = tuple[str, Message]
_T = TypeVar("_T")

_WORD = re.compile(r"\w{2,}", re.UNICODE)
_STOP = frozenset(
    """
    a an and are as at be but by can could did do does for from had has have how i if in into
    is it its me my no not of on or our please so than that the their them then there these
    they this to us was we were what when where which who why will with would you your yes ok
    okay about again also any just like more most some such tell know want need give get let
    """.split()
)


def words_of(text: str) -> set[str]:
    """The distinct searchable words of ``text``: lower case, two characters or more, stop
    words dropped."""
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


#: A message's text is indexed up to this many characters (a PostgreSQL tsvector holds 1 MB).
INDEXED_CHARS = 100_000


def search_text(body: str) -> str:
    """The indexed text of a stored message ``body``: its text (to :data:`INDEXED_CHARS`), less
    what a database cannot hold (NUL, lone surrogates)."""
    text = _codec.message_from_json(body).text[:INDEXED_CHARS].replace("\x00", " ")
    return text.encode("utf-8", "replace").decode("utf-8")


def search_words(query: str) -> list[str]:
    """:func:`words_of` ``query``, in order (for a backend's own query syntax)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        if word not in _STOP:
            seen.setdefault(word, None)
    return list(seen)


def check_search(user_id: str | None, workspace: str | None, limit: int) -> None:
    """A search names exactly one scope, and a limit of at least 0."""
    if (user_id is None) == (workspace is None):
        raise ValueError("search_messages needs exactly one of user_id= and workspace=")
    if limit < 0:
        raise ValueError("limit must not be negative")


def rank_hits(
    candidates: Iterable[tuple[str, _T, AbstractSet[str]]], terms: Sequence[str], limit: int
) -> list[tuple[str, _T]]:
    """The candidates (session id, message, its words) that share a word with ``terms``, best
    first: the sum of each shared word's idf (rarer words weigh more), the newest first on a
    tie."""
    wanted = set(terms)
    found: list[tuple[str, _T, AbstractSet[str]]] = []
    total = 0
    df: dict[str, int] = dict.fromkeys(wanted, 0)
    for sid, message, words in candidates:
        total += 1
        shared = words & wanted
        if shared:
            found.append((sid, message, shared))
            for w in shared:
                df[w] += 1
    idf = {w: math.log(1 + total / n) for w, n in df.items() if n}
    scored = sorted(enumerate(found), key=lambda kv: (-sum(idf[w] for w in kv[1][2]), -kv[0]))
    return [(sid, message) for _, (sid, message, _) in scored[:limit]]


class NoSearch:
    """The search of every store: :meth:`search_messages` checks the call and reads the
    question's words, then :meth:`_search` finds them. This default (a store of one's own, a
    subclass of ``BaseSessionStore``) keeps no index, so a search loads the scope's sessions;
    each backend finds them in the index it keeps."""

    def search_messages(
        self,
        query: str,
        *,
        user_id: str | None = None,
        workspace: str | None = None,
        limit: int = SEARCH_LIMIT,
    ) -> list[SearchHit]:
        """The messages of ``user_id``'s sessions (or ``workspace``'s) that share a word with
        ``query``, best first, as ``(session id, message)`` pairs (at most ``limit``)."""
        check_search(user_id, workspace, limit)
        terms = search_words(query)
        if not terms or not limit:
            return []
        common = self._common(terms)
        if common and len(common) < len(terms):
            terms = [t for t in terms if t not in common]
        return self._search(terms, user_id, workspace, limit)

    def _common(self, terms: list[str]) -> set[str]:
        """The terms held by more than :data:`COMMON_MESSAGES` stored messages (a backend
        whose index counts them cheaply says; by default none)."""
        return set()

    def _search(
        self, terms: list[str], user_id: str | None, workspace: str | None, limit: int
    ) -> list[SearchHit]:
        store: Any = self
        ids = store._ids_of_user(user_id) if user_id is not None else store._ids_in(workspace)
        candidates = ((sid, m, words_of(m.text)) for sid in sorted(ids) for m in store.load(sid))
        return rank_hits(candidates, terms, limit)

    async def asearch_messages(
        self,
        query: str,
        *,
        user_id: str | None = None,
        workspace: str | None = None,
        limit: int = SEARCH_LIMIT,
    ) -> list[SearchHit]:
        """:meth:`search_messages` in a worker thread."""
        hits: list[SearchHit] = await asyncio.to_thread(
            self.search_messages, query, user_id=user_id, workspace=workspace, limit=limit
        )
        return hits


class MemorySearch:
    """``memory://``'s search: each stored message's words, kept with it (so they go with it)."""

    _lock: Any
    _sessions: dict[str, Any]

    def _search(
        self, terms: list[str], user_id: str | None, workspace: str | None, limit: int
    ) -> list[SearchHit]:
        with self._lock:
            chosen = [
                (sid, s)
                for sid, s in self._sessions.items()
                if (s.user_id == user_id if user_id is not None else s.workspace == workspace)
            ]
            candidates = [
                (sid, stored, stored.words())
                for sid, session in chosen
                for stored in session.messages.values()
            ]
        # (ranked as stored entries: a message is decoded only when it is a hit)
        return [(sid, stored.message()) for sid, stored in rank_hits(candidates, terms, limit)]
