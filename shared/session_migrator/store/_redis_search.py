"""Redis's search index (see :mod:`._search`): an index plain Redis serves, kept by the append
and delete scripts (:mod:`._redis_scripts`) in the same atomic write as the messages.

- ``P s:D:words``: each message's searchable words (what its deletion takes back);
- ``P s:D:wordcounts``: per word, how many of the session's messages hold it;
- ``P w:<word>``: the sessions holding the word (a session leaves it when its count drops to 0,
  or when the session is deleted).

A word is kept as :func:`word_key` (12 hex digits of its BLAKE2b digest), never as the text:
keys are digests, as every key of the store is, and the index holds no word in clear.

A search intersects each of the question's words' sets with the user's (or workspace's) set
of sessions (``SINTER``, one round trip for all words), ranks those sessions by the rarity of
the words they hold, reads the words of the best :data:`SEARCHED_SESSIONS` sessions' messages,
ranks the messages, and reads the bodies of the hits only. A session whose keys expired (a
TTL) is skipped, and taken out of the sets of the words searched (the sets of other words keep
its digest until a search of them: a digest, not its words).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from session_migrator.store import _codec
from session_migrator.store._backend import Record
from session_migrator.store._codec import decode_key as dk
from session_migrator.store._search import (
    SearchHit,
    rank_hits,
    words_of,
)

__all__ = [
    "COMMON_SESSIONS",
    "SEARCHED_SESSIONS",
    "RedisSearch",
    "index_stored",
    "record_words",
    "word_key",
]

#: The most sessions whose messages' words a search reads (the best by their words).
SEARCHED_SESSIONS = 64
#: A word of the question held by more of the scope's sessions than this is too common to find
#: sessions by: it is left out when the question has rarer words (as
#: :data:`~._search.COMMON_MESSAGES` in SQLite and PostgreSQL).
COMMON_SESSIONS = 200


def word_key(word: str) -> str:
    """How the index keeps ``word``: 12 hex digits of its BLAKE2b digest."""
    return hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def _keys_of(text: str) -> list[str]:
    return sorted({word_key(w) for w in words_of(text)})


def record_words(record: Record) -> str:
    """The searchable words of a record's message as :func:`word_key`, space-separated (as the
    scripts split them)."""
    return " ".join(_keys_of(_codec.message_from_json(record.body).text))


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


class RedisSearch:
    """The Redis store's search (its keys are above)."""

    _client: Any
    prefix: str

    def _user_key(self, user_id: str) -> str:
        raise NotImplementedError

    def _workspace_key(self, workspace: str) -> str:
        raise NotImplementedError

    @property
    def _word_prefix(self) -> str:
        return f"{self.prefix}w:"

    def _search(
        self, terms: list[str], user_id: str | None, workspace: str | None, limit: int
    ) -> list[SearchHit]:
        terms = [word_key(w) for w in terms]
        scope = self._user_key(user_id) if user_id is not None else None
        if scope is None:
            assert workspace is not None
            scope = self._workspace_key(workspace)
        pipe = self._client.pipeline(transaction=False)
        for term in terms:
            pipe.sinter(self._word_prefix + term, scope)
        pipe.scard(scope)
        *found, total = pipe.execute()
        # a word most sessions hold finds nothing: left out when the question has rarer ones
        rare = [len(held) <= COMMON_SESSIONS for held in found]
        if any(rare) and not all(rare):
            kept = [(t, held) for t, held, r in zip(terms, found, rare, strict=True) if r]
            terms, found = [t for t, _ in kept], [held for _, held in kept]
        idf = {t: math.log(1 + int(total) / len(s)) for t, s in zip(terms, found, strict=True) if s}
        held: dict[str, float] = {}
        for term, digests in zip(terms, found, strict=True):
            for digest in digests:
                held[_text(digest)] = held.get(_text(digest), 0.0) + idf[term]
        best = sorted(held, key=lambda d: (-held[d], d))[:SEARCHED_SESSIONS]
        if not best:
            return []
        pipe = self._client.pipeline(transaction=False)
        for digest in best:
            pipe.hget(f"{self.prefix}s:{digest}:meta", "id")
            pipe.hgetall(f"{self.prefix}s:{digest}:words")
        replies = pipe.execute()
        candidates: list[tuple[str, tuple[str, str], set[str]]] = []
        gone = self._client.pipeline(transaction=False)
        for digest, sid, words in zip(best, replies[::2], replies[1::2], strict=True):
            if sid is None:  # (its keys expired: its entries of the words asked go too)
                for term in terms:
                    gone.srem(self._word_prefix + term, digest)
                continue
            for mid, text in words.items():
                candidates.append((digest, (dk(_text(sid)), _text(mid)), set(_text(text).split())))
        gone.execute()
        hits = rank_hits(candidates, terms, limit)
        pipe = self._client.pipeline(transaction=False)
        for digest, (_, mid) in hits:
            pipe.hget(f"{self.prefix}s:{digest}:bodies", mid)
        bodies = pipe.execute()
        return [
            (sid, _codec.message_from_json(_text(body)))
            for (_, (sid, _)), body in zip(hits, bodies, strict=True)
            if body is not None
        ]


def index_stored(client: Any, prefix: str) -> None:
    """Index every stored message (the upgrade of the data from schema 3, which had no
    index); safe to repeat."""
    for raw in client.smembers(f"{prefix}sessions"):
        digest = _text(raw)
        base = f"{prefix}s:{digest}:"
        client.delete(base + "words", base + "wordcounts")
        counts: dict[str, int] = {}
        pipe = client.pipeline(transaction=False)
        for mid, body in client.hgetall(base + "bodies").items():
            words = _keys_of(_codec.message_from_json(_text(body)).text)
            if words:
                pipe.hset(base + "words", mid, " ".join(words))
            for word in words:
                counts[word] = counts.get(word, 0) + 1
        for word, n in counts.items():
            pipe.hset(base + "wordcounts", word, n)
            pipe.sadd(f"{prefix}w:{word}", digest)
        pipe.execute()
