"""Recall across sessions: the exchanges of a user's (or a workspace's) other sessions that bear
on the question, sent as dated excerpts inside one library message.

:func:`~session_migrator.store.related_sessions` collects the other sessions from a store;
``migrate(..., related=...)`` (and ``SessionFitter(recall_scope=...)``) sends the most relevant
of their exchanges (a user message and the assistant's replies to it; tool messages are left
out) ranked by bm25 against the question (the newest user message, or ``query=``). With an
embedding model (``embeddings=``), a question's exchanges are ranked by it too, bm25 takes its
second hop as recall within a session does (alone, it would double a fit's time at 1,000
sessions for 0.01 of LoCoMo's evidence), and the rankings are fused (see
:mod:`session_migrator.recall._hybrid`): a question that shares no word with what was said
("What should I cook tonight?" after "I'm vegetarian") finds it; under a
:class:`~session_migrator.SessionFitter` each message's vector is kept in the store under its
own session, so it is embedded once. They go in one system message after the system prompt and
the lead note (``{"kind": "related"}`` in its marker), so the conversation keeps every chat
rule; each message is shown as it was said (at most :data:`EXCERPT_CHARS` characters).

Room: the current session is fitted first. When it fits whole, the excerpts take the room it
leaves: all of it when the newest message asks something (a question mark, or a question's
first word), as recall within a session fills the budget by rank for a question; otherwise at
most :data:`RELATED_SHARE` of the budget (at most :data:`MAX_EXCERPTS` exchanges), so a remark
does not pull in the past. When the session is cut anyway and the question is about the past
("what hotel did we pick last week?", a date), the room the relevant excerpts take (at most
:data:`PAST_SHARE` of the budget) is held back from the fit, as for a retrieved context; for
other questions the excerpts take only what the fit leaves. Without an embedding model,
nothing is added when no exchange shares a word with the question (a bm25 score of 0).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._units import stable_id
from session_migrator.messages._messages import MARKER_KEY, Message
from session_migrator.recall._when import about_the_past, asks, day_token, day_tokens

__all__ = [
    "MAX_EXCERPTS",
    "PAST_SHARE",
    "RELATED_SHARE",
    "SCOPES",
    "Placed",
    "RecallScope",
    "RelatedExcerpts",
    "RelatedSession",
    "RelatedSessions",
    "check_scope",
]

RecallScope = Literal["session", "user", "workspace"]
SCOPES: tuple[RecallScope, ...] = ("session", "user", "workspace")
#: The most of the budget the excerpts of other sessions take.
RELATED_SHARE = 0.25
#: ... and for a question about the past while the session is cut, what is held back for them.
PAST_SHARE = 0.5
#: The most exchanges of other sessions sent at once for a message that asks nothing.
MAX_EXCERPTS = 6
#: A message of an excerpt shows at most this many characters.
EXCERPT_CHARS = 600
#: An exchange scoring under this share of the best one's is not sent (a word in passing), for a
#: message that asks nothing; a question takes every exchange that shares a word with it.
MIN_SCORE_SHARE = 0.25
#: How many of the best-ranked exchanges are tried for the room.
_TRIED = 64
#: After this many exchanges that did not fit, no more are tried (the room is all but full).
_MISSES = 16
#: Words that say when, not what: a question is not searched by them ("what hotel did we pick
#: last week?" is not about weeks); the days it names are searched by their day tokens.
_WHEN_WORDS = re.compile(
    r"\b(?:(?:last|this|next|past)\s+(?:week(?:end)?|month|year|night|time)|yesterday|today|"
    r"tonight|ago|earlier|recently|this morning)\b",
    re.I,
)


def check_scope(scope: object) -> RecallScope:
    """``scope`` if it is one of :data:`SCOPES`, else a :class:`ValueError` naming them."""
    for known in SCOPES:
        if scope == known:
            return known
    raise ValueError(f"unknown recall scope {scope!r}; choose one of {', '.join(SCOPES)}")


@dataclass(frozen=True)
class RelatedSession:
    """Another session's messages, for recall across sessions.

    ``title`` is how the excerpts name the session (default: its id); ``updated_at`` and
    ``message_count`` (as the store lists them) let a later collection reuse these messages.
    """

    id: str
    messages: Sequence[Message]
    workspace: str = "default"
    title: str | None = None
    updated_at: datetime | None = None
    message_count: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", tuple(self.messages))


@dataclass(frozen=True)
class RelatedSessions:
    """The other sessions recall may draw on (see
    :func:`~session_migrator.store.related_sessions`): the ``scope`` they were collected by,
    the sessions (most recently active first) and what the report should say about them."""

    scope: RecallScope
    sessions: tuple[RelatedSession, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        check_scope(self.scope)
        object.__setattr__(self, "sessions", tuple(self.sessions))
        object.__setattr__(self, "notes", tuple(self.notes))


@dataclass
class _Exchange:
    session: RelatedSession
    messages: list[Message]

    @property
    def when(self) -> datetime | None:
        return self.messages[0].timestamp

    def lines(self) -> list[str]:
        return [f"{m.role}: {_short(m.text)}" for m in self.messages]


def _short(text: str) -> str:
    """``text`` as an excerpt shows it: as said (its lines kept), at most
    :data:`EXCERPT_CHARS` characters."""
    text = text.strip()
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 3].rstrip() + "..."


def _group(e: _Exchange) -> tuple[str, str]:
    """The session and day an excerpt is dated under (one line heads each)."""
    return e.session.id, f"{e.when:%Y-%m-%d}" if e.when else ""


def _name(session: RelatedSession) -> str:
    """How the excerpts name a session: its title (else its id) on one line, at most 80
    characters."""
    name = " ".join((session.title or session.id).split()) or session.id
    return name if len(name) <= 80 else name[:77] + "..."


def _exchanges(session: RelatedSession) -> list[_Exchange]:
    """A session's exchanges: each user message with the assistant text replies after it (the
    assistant's words before the first user message are one too; tool messages and the
    library's own notes are left out)."""
    out: list[_Exchange] = []
    current: _Exchange | None = None
    for m in session.messages:
        if m.marker is not None or not m.text.strip():
            continue
        if m.role == "user":
            current = _Exchange(session, [m])
            out.append(current)
        elif m.role == "assistant":
            if current is None:
                current = _Exchange(session, [])
                out.append(current)
            current.messages.append(m)
    return out


@dataclass(frozen=True, slots=True)
class Placed:
    """What the excerpts of other sessions add to a fit: the messages with them (``None``: none
    fit), their tokens, the ids shown by session, and the notes for the report."""

    messages: list[Message] | None
    tokens: int
    ids: dict[str, list[str]]
    notes: list[str]
    fallbacks: list[str] = field(default_factory=list)


class RelatedExcerpts:
    """The exchanges of ``related`` ranked against the question, ready to be fitted to a room
    (one ranking, however many rooms are tried)."""

    def __init__(
        self,
        related: RelatedSessions | Sequence[RelatedSession],
        messages: Sequence[Message],
        query: str,
        embeddings: Any = None,
    ) -> None:
        if isinstance(related, RelatedSessions):
            self.scope: RecallScope | None = related.scope
            sessions, self.notes = related.sessions, list(related.notes)
        else:
            self.scope, sessions, self.notes = None, tuple(related), []
        for s in sessions:
            if not isinstance(s, RelatedSession):
                raise TypeError(
                    "related must be a RelatedSessions (from related_sessions) or a list of "
                    f"RelatedSession, got an item of type {type(s).__name__}"
                )
        self.sessions = sessions
        self.query = query
        self.embeddings = embeddings
        self.fallbacks: list[str] = []  # (why the embedding model was not used, when it failed)
        self.dense_notes: list[str] = []
        self.now = next((m.timestamp for m in reversed(messages) if m.timestamp), None)
        self.days = day_tokens(query, self.now)
        self.asks = asks(query)
        # the oldest sessions first: on a tie, bm25 ranks the later document first
        self.exchanges = [e for s in reversed(sessions) for e in _exchanges(s)]
        self.ranked: list[int] = []
        if self.exchanges and query.strip():
            self.ranked = self._rank(" ".join([_WHEN_WORDS.sub(" ", query), *self.days]))

    def _rank(self, search: str) -> list[int]:
        """The exchanges that bear on ``search``, best first: those scoring at least
        :data:`MIN_SCORE_SHARE` of the best, each with its neighbours in the same conversation
        (as recall within a session ranks them: the answer is often the next exchange)."""
        # imported here: ranking brings numpy in, which a fit without it does not need
        import numpy as np

        from session_migrator.recall._bm25 import rank_by_relevance
        from session_migrator.recall._recall import SAME_CONVERSATION, _with_neighbours

        documents = [
            "\n".join(e.lines() + ([day_token(e.when)] if e.when else [])) for e in self.exchanges
        ]
        # (the second hop only beside a model: alone it doubles a fit's time at 1,000 sessions)
        ranked = rank_by_relevance(documents, search, hop=self.embeddings is not None)
        best = ranked[0][1] if ranked else 0.0
        least = 0.0 if self.asks else best * MIN_SCORE_SHARE
        ranked = [(k, score) for k, score in ranked if score > 0 and score >= least]
        found = np.array([k for k, _ in ranked], dtype=np.int64)
        scores = np.array([v for _, v in ranked], dtype=np.float64)
        sims = self._similarities(search) if self.asks else None
        if sims is not None:
            from session_migrator.recall._hybrid import fuse

            found, scores = fuse(found, sims)
        together = np.zeros(max(len(self.exchanges) - 1, 0), dtype=bool)
        for k, (a, b) in enumerate(itertools.pairwise(self.exchanges)):
            together[k] = (
                a.session is b.session
                and a.when is not None
                and b.when is not None
                and abs(b.when - a.when) < SAME_CONVERSATION
            )
        order: list[int] = _with_neighbours(found, scores, together).tolist()
        return order

    def _similarities(self, search: str) -> Any:
        """Each exchange's cosine similarity to ``search`` by the embedding model (its best
        message's), or ``None`` without one or when it failed (then :attr:`fallbacks` says
        why). A :class:`~session_migrator.recall._embeddings.StoredVectors` of a store (a
        ``SessionFitter``'s) reads and writes each other session's vectors under that
        session, so a message is embedded once whichever session's fit needs it; all the
        model's calls share one deadline."""
        if self.embeddings is None or not self.exchanges:
            return None
        import numpy as np

        from session_migrator.recall._embeddings import StoredVectors, as_embeddings
        from session_migrator.recall._hybrid import HybridRecall

        given = self.embeddings
        if isinstance(given, StoredVectors):
            model, store = given.embeddings, given.store
        else:
            model, store = as_embeddings(given), None
        by_session: dict[str, list[int]] = {}
        for k, e in enumerate(self.exchanges):
            by_session.setdefault(e.session.id, []).append(k)
        sims = np.full(len(self.exchanges), -1.0)
        unstored = StoredVectors(model, None, None)
        deadline = None
        embedded = 0
        for sid, at in by_session.items():
            hybrid = HybridRecall(StoredVectors(model, store, sid) if store else unstored)
            hybrid.deadline = deadline
            found = hybrid.similarities([self.exchanges[k].messages for k in at], search)
            deadline, embedded = hybrid.deadline, embedded + hybrid.embedded
            if found is None:
                self.fallbacks.append(
                    hybrid.fallbacks[-1].replace("the cut turns", "the other sessions' exchanges")
                    if hybrid.fallbacks
                    else f"embeddings {model.key}: no vectors; recall across sessions by bm25"
                )
                return None
            sims[at] = found
        self.dense_notes.append(
            f"recall across sessions ranked {len(self.exchanges)} exchange(s) by bm25 and "
            f"{model.key} embeddings (reciprocal-rank fusion); {embedded} message(s) embedded"
        )
        return sims

    @property
    def asks_about_the_past(self) -> bool:
        return bool(self.days) or about_the_past(self.query)

    def pick(self, room: int, counter: TokenCounter) -> tuple[Message | None, list[int]]:
        """The library message carrying the best exchanges that fit in ``room`` tokens (at
        most :data:`MAX_EXCERPTS` for a message that asks nothing), and which exchanges it
        holds."""
        if not self.ranked or room <= 0:
            return None, []
        left = room - counter.count_message(Message("system", self._header()))
        taken: list[int] = []
        headed: set[tuple[str, str]] = set()  # (the message dates each session's day once)
        most, tried = (len(self.ranked), None) if self.asks else (MAX_EXCERPTS, _TRIED)
        misses = 0
        for k in self.ranked[:tried]:
            if len(taken) >= most or left <= 0 or misses >= _MISSES:
                break
            e = self.exchanges[k]
            group = _group(e)
            cost = counter.count_text(self._block(e, group not in headed)) + 1
            if cost <= left:
                taken.append(k)
                headed.add(group)
                left -= cost
            else:
                misses += 1
        while taken:
            message = self._message(taken)
            if counter.count_message(message) <= room:
                return message, taken
            taken.pop()  # (counted apart, the pieces came to less than the whole)
        return None, []

    def reserve(self, budget: int, counter: TokenCounter) -> int:
        """What to hold back from a fit that cuts the session: the cost of the excerpts, when
        the question is about the past (else 0)."""
        if not self.ranked or not self.asks_about_the_past:
            return 0
        message, _ = self.pick(int(budget * PAST_SHARE), counter)
        return counter.count_message(message) if message is not None else 0

    def placed(
        self,
        sent: Sequence[Message],
        tokens: int,
        budget: int,
        counter: TokenCounter,
        *,
        cut: bool = False,
    ) -> Placed:
        """Where the excerpts that fit in what ``sent`` (``tokens`` of ``budget``) leaves go (at
        most :data:`RELATED_SHARE` of the budget), after its leading system messages, and the
        notes that say what was recalled from where: all the room ``sent`` leaves for a
        question (at most :data:`PAST_SHARE` of the budget when the session was ``cut``), else
        at most :data:`RELATED_SHARE` of the budget)."""
        share = (PAST_SHARE if cut else 1.0) if self.asks else RELATED_SHARE
        room = min(budget - tokens, int(budget * share))
        message, taken = self.pick(room, counter) if any(m.role != "system" for m in sent) else (
            None, []
        )  # fmt: skip
        notes = [*self.notes, *self.dense_notes]
        if message is not None:
            at = next((i for i, m in enumerate(sent) if m.role != "system"), len(sent))
            out = [*sent[:at], message, *sent[at:]]
            total = counter.count_messages(out)
            if total <= budget:
                ids: dict[str, list[str]] = {}
                for k in self._shown(taken):
                    e = self.exchanges[k]
                    ids.setdefault(e.session.id, []).extend(m.id for m in e.messages)
                notes.append(self._recalled_note(taken))
                return Placed(out, total, ids, notes, self.fallbacks)
        if self.ranked:
            notes.append(
                f"{len(self.ranked)} exchange(s) of other sessions matched the question; none "
                f"fit the {max(room, 0):,} tokens left"
            )
        elif self.sessions:
            notes.append(
                f"no exchange of the {len(self.sessions)} other session(s) searched matched "
                "the question"
            )
        return Placed(None, tokens, {}, notes, self.fallbacks)

    # -- the message -------------------------------------------------------------------------

    def _shown(self, taken: list[int]) -> list[int]:
        """``taken`` as the message shows them: session by session (the one whose first
        exchange shown was said first, first; undated ones before), each in its order."""
        firsts: dict[str, tuple[str, int]] = {}
        for k in sorted(taken):
            when = self.exchanges[k].when
            firsts.setdefault(self.exchanges[k].session.id, (when.isoformat() if when else "", k))
        return sorted(taken, key=lambda k: (firsts[self.exchanges[k].session.id], k))

    def _header(self) -> str:
        whose = {"user": " of this user", "workspace": " of this workspace"}.get(self.scope or "")
        return (
            f"[session-migrator: from other sessions{whose or ''}, the earlier exchanges most "
            "relevant to the question, dated]"
        )

    def _dated(self, e: _Exchange) -> str:
        name = _name(e.session)
        whose = "your session" if self.scope == "user" else "session"
        line = f'From {whose} "{name}"'
        if e.when is not None:
            line += f" on {e.when:%Y-%m-%d}"
            if self.now is not None and self.now >= e.when:
                days = (self.now.date() - e.when.date()).days
                ago = {0: "today", 1: "yesterday"}.get(days, f"{days} days ago")
                line += f" ({ago})"
        return line + ":"

    def _block(self, e: _Exchange, dated: bool) -> str:
        return "\n".join(([self._dated(e)] if dated else []) + e.lines())

    def _message(self, taken: list[int]) -> Message:
        parts = [self._header()]
        previous: tuple[str, str] | None = None
        for k in self._shown(taken):
            e = self.exchanges[k]
            group = _group(e)
            parts.append(self._block(e, group != previous))
            previous = group
        ids = [m.id for k in self._shown(taken) for m in self.exchanges[k].messages]
        sessions = sorted({self.exchanges[k].session.id for k in taken})
        return Message(
            "system",
            "\n".join(parts),
            id=stable_id("sm-related", ids),
            extra={
                MARKER_KEY: {
                    "kind": "related",
                    "scope": self.scope,
                    "sessions": sessions,
                    "exchanges": len(taken),
                }
            },
        )

    def _recalled_note(self, taken: list[int]) -> str:
        days: dict[str, list[str]] = {}
        names: dict[str, str] = {}
        for k in self._shown(taken):
            e = self.exchanges[k]
            names[e.session.id] = repr(_name(e.session))
            shown = days.setdefault(e.session.id, [])
            day = f"{e.when:%Y-%m-%d}" if e.when else "undated"
            if day not in shown:
                shown.append(day)
        whose = {"user": " of the same user", "workspace": " of the same workspace"}
        where = "; ".join(f"{names[sid]} ({', '.join(d)})" for sid, d in days.items())
        return (
            f"recalled {len(taken)} exchange(s) from {len(days)} other session(s)"
            f"{whose.get(self.scope or '', '')}: {where}"
        )
