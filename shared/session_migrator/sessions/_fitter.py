"""A store-backed, cached, fitted view of one session: what the framework adapters read.

:class:`SessionFitter` keeps the full log in a session store and answers "the conversation
fitted to model X" cheaply:

- reading again with nothing new returns the cached result (no tokenization, no store scan);
- a new message (appended here or by another process) is picked up with one ``load(after=...)``
  and costs its own tokenization; the per-message counts and the split into units are kept in a
  :class:`~session_migrator.fitting._fit.Ledger` that grows with the log, so the re-fit walks only
  the messages it keeps;
- token counts are persisted in the store, so a reopened session is not re-tokenized; rolling
  summaries are read from and written to it (revision-checked), and every change of target
  model is logged in its migration log; the placeholders the agent put are honoured.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Hashable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from session_migrator._errors import SessionNotFoundError
from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._fits import PendingToolCalls, check_pending
from session_migrator.fitting._units import DEFAULT_SLACK, Ledger, check_slack
from session_migrator.messages._messages import Message
from session_migrator.messages._storage_ids import storage_ids
from session_migrator.migration._gap import check_gap_note
from session_migrator.migration._migrate import default_counter, fit_messages, resolve_target
from session_migrator.migration._options import FitOptions
from session_migrator.migration._report import MigrationResult
from session_migrator.migration._strategies import Compressor, check_strategy
from session_migrator.models._windows import ModelWindow
from session_migrator.recall._embeddings import as_embeddings, session_vectors
from session_migrator.recall._related import RecallScope, RelatedSessions, check_scope
from session_migrator.sessions._compactor import Compactor
from session_migrator.sessions._counts import StoredCounts
from session_migrator.sessions._facts import FACTS_SHARE, check_extractor, learn_facts, with_facts
from session_migrator.sessions._keys import (
    FitKey,
    log_migration,
    related_key,
    save_summary,
    stored_summary,
)
from session_migrator.sessions._lease import StoreLease, new_owner
from session_migrator.sessions._parent import session_notes
from session_migrator.sessions._placeholder_view import PlaceholderView
from session_migrator.summaries._ahead import Ahead
from session_migrator.summaries._fact_extractors import FactExtractor
from session_migrator.summaries._summarizers import Summarizer

if TYPE_CHECKING:
    from session_migrator.store import BaseSessionStore

__all__ = ["DEFAULT_SLACK", "FACTS_SHARE", "SessionFitter"]


class SessionFitter:
    """The fitted view of ``session_id`` in ``store`` (see the module docstring).

    ``store`` is a store object or URL (``None``: the embedded SQLite default). ``strategy`` is
    ``auto``, ``trim``, ``summarize``, ``recall`` or a compressor; ``summarizer`` is used by
    ``summarize``/``auto``/``recall``. Thread-safe.

    ``slack``: when the conversation no longer fits, the cut leaves this share of the room for
    the newest turns free, and later fits keep that cut (the same summary, the same head of the
    prompt, which keeps a provider's prompt cache warm) while the new messages fit in it; the
    recalled turns follow each new question. A re-fit after a message then reads only the kept
    messages' counts. ``0`` cuts afresh at every fit, exactly as :func:`migrate` would.

    ``recall_scope``: ``"user"`` or ``"workspace"`` also recalls from the other sessions of
    the session's user (its metadata ``user_id``) or workspace
    (:func:`~session_migrator.store.related_sessions`, read again at each fit: the sessions
    unchanged since are not loaded again); ``"session"`` (the default) recalls within it only.
    ``embeddings``: an embedding model for hybrid recall; each message's vector is kept in the
    store (:mod:`session_migrator.recall._hybrid`).

    ``compactor``: a :class:`~session_migrator.Compactor` (``True``: the process's shared one)
    writes the summaries of the cut part in the background, a step before the cut moves, so
    that no fit waits for the summarizer (:mod:`session_migrator.sessions._compactor`);
    :meth:`compact` writes the one asked for now, for a scheduler. One compaction of a session
    runs at a time across processes (a lease in the store, :mod:`.sessions._lease`).

    ``user_facts``: when the session has a ``user_id`` (in ``metadata`` or in the store), the
    plain facts the user states ("I'm vegetarian", "my daughter is allergic to peanuts", "I
    prefer ...") are read from each appended user message and kept per user
    (:func:`~session_migrator.store.user_facts`), and every fit of any of that user's sessions
    sends them in a note after the system prompt, within :data:`FACTS_SHARE` of the window's
    input (the newest facts first when not all fit). Off by default (``False``).
    ``fact_extractor`` (a model's, e.g. :class:`~session_migrator.OpenAIFactExtractor`) also
    reads them in the background (:mod:`.sessions._fact_learner`): no append or fit waits.

    ``gap_note``: a note of the gap before the newest user message when it is 30 minutes or
    more ("The user returns after 9 days (last message 2026-11-26)."), within the budget, cut or
    not; ``False`` sends none, a ``timedelta`` sets the threshold (as for :func:`migrate`).

    >>> from session_migrator import Message
    >>> fitter = SessionFitter("demo", store="memory://")
    >>> fitter.append([Message("user", "hello")])
    >>> [m.text for m in fitter.fit("gpt-4o").messages]
    ['hello']
    """

    def __init__(
        self,
        session_id: str,
        *,
        store: BaseSessionStore | str | None = None,
        strategy: str | Compressor = "auto",
        summarizer: Summarizer | None = None,
        reserve_output: int | None = None,
        workspace: str = "default",
        metadata: dict[str, Any] | None = None,
        slack: float = DEFAULT_SLACK,
        recall_scope: RecallScope = "session",
        embeddings: Any = None,
        compactor: Compactor | bool | None = None,
        user_facts: bool = False,
        fact_extractor: FactExtractor | None = None,
        gap_note: bool | timedelta = True,
    ) -> None:
        self.session_id = session_id
        # a URL is opened at first use, so that constructing a fitter does no I/O (an async
        # caller builds one on its event loop, and reads it in a worker thread)
        self._store: BaseSessionStore | None = (
            None if store is None or isinstance(store, str) else store
        )
        self._store_url = store if store is None or isinstance(store, str) else None
        check_strategy(strategy)  # (now, not at the first fit)
        self.strategy = strategy
        self.summarizer = summarizer
        self.reserve_output = reserve_output
        self.workspace = workspace
        self.metadata = metadata
        self.slack = check_slack(slack)
        self.recall_scope = check_scope(recall_scope)
        self.embeddings = None if embeddings is None else as_embeddings(embeddings)
        if compactor is not None and not isinstance(compactor, (bool, Compactor)):
            raise TypeError(
                "compactor must be a Compactor, True (the process's shared one) or None, got "
                f"{type(compactor).__name__}"
            )
        self.compactor: Compactor | None = (
            Compactor.default() if compactor is True else compactor or None
        )
        self._related: RelatedSessions | None = None
        self.user_facts = user_facts
        self.fact_extractor = check_extractor(fact_extractor, user_facts)
        check_gap_note(gap_note)
        self.gap_note = gap_note
        self._lock = threading.RLock()
        self._messages: list[Message] = []
        self._said: dict[str, datetime] = {}  # (when the messages appended here were stored)
        self._ids: set[str] = set()
        self._loaded = False
        self._cache: tuple[Hashable, MigrationResult] | None = None
        self._ledger: tuple[TokenCounter, Ledger] | None = None
        # per counter name (of the counter that caches): how many leading messages have their
        # count in the store
        self._counts = StoredCounts(lambda: self.store, session_id)
        self._last_target: str | None = None
        self._last_target_loaded = False
        # the summaries written ahead (with a compactor, or once compact() was called)
        self._ahead: Ahead | None = Ahead() if self.compactor is not None else None
        self._lease_owner = new_owner()  # (its compaction lease's owner, see ._lease)
        self._view = PlaceholderView()  # (the placeholders the agent put, store._placeholders)

    @property
    def store(self) -> BaseSessionStore:
        """The session store (a store given as a URL is opened here, at first use)."""
        store = self._store
        if store is None:
            from session_migrator.store import open_store

            with self._lock:
                store = self._store
                if store is None:
                    store = self._store = open_store(self._store_url)
        return store

    @property
    def store_is_open(self) -> bool:
        """Whether :attr:`store` was opened (or given)."""
        return self._store is not None

    # -- the full log ----------------------------------------------------------------------

    def refresh(self) -> list[Message]:
        """Pick up what changed in the store since the last read (by anyone: messages
        appended, or deleted, erased or purged); returns the full log.
        """
        from session_migrator.store import MessageNotFoundError

        with self._lock:
            if not self._loaded:
                self._messages = list(self.store.load(self.session_id))
                self._said = {}  # (the store's messages have their times)
                self._ids = {m.id for m in self._messages}
                self._loaded = True
                self._ledger = None
                self._counts.restart()
                return self._messages
            after = self._messages[-1].id if self._messages else None
            try:
                new, count = self.store.load_since(self.session_id, after)
            except MessageNotFoundError:
                count = -1  # the newest message held here was deleted
            else:
                for m in new:
                    if m.id not in self._ids:
                        self._ids.add(m.id)
                        self._messages.append(m)
            if count != len(self._messages):
                # someone deleted messages under us: start again from the store
                self._loaded = False
                self._cache = None
                return self.refresh()
            return self._messages

    @property
    def messages(self) -> list[Message]:
        """The full log (a copy), oldest first."""
        return list(self.refresh())

    def append(self, messages: Sequence[Message]) -> None:
        """Append to the store (idempotent by id) and to the cached log, as the store keeps
        them (an offloaded tool output as its preview, as every other reader sees it)."""
        if not messages:
            return
        messages = storage_ids(messages)  # the ids the store keeps (a derived one is not)
        with self._lock:
            self.refresh()
            said = self.store.now()  # (the time the store gives a message without one)
            self.store.append(
                self.session_id, messages, workspace=self.workspace, metadata=self.metadata
            )
            stored_form = self.store.stored_form
            for m in messages:
                if m.id not in self._ids:
                    self._ids.add(m.id)
                    self._messages.append(stored_form(m))
                    if m.timestamp is None:  # (kept as given; its time for the gap note)
                        self._said[m.id] = said
            user = self._user_id() if self.user_facts else None
            if user is not None and any(m.role == "user" for m in messages):
                learn_facts(self.store, user, messages, self.fact_extractor, said, self._lock)

    def clear(self) -> None:
        """Delete the session from the store and forget the cache."""
        with self._lock:
            self.store.delete_session(self.session_id)
            self._messages = []
            self._ids = set()
            self._cache = None
            self._ledger = None
            self._counts.restart()
            self._last_target = None
            self._last_target_loaded = True

    # -- the fitted view -------------------------------------------------------------------

    def fit(
        self,
        target: str | ModelWindow,
        *,
        query: str | None = None,
        extra_reserved: int = 0,
        counter: TokenCounter | None = None,
        budget_cap: int | None = None,
        pending_tool_calls: PendingToolCalls = "drop",
    ) -> MigrationResult:
        """The conversation fitted to ``target`` (cached until the log or the target changes).

        ``extra_reserved`` tokens are held back from the target's budget (e.g. for a retrieved
        context); ``budget_cap`` caps the budget (e.g. a framework's own history limit);
        ``pending_tool_calls`` as for :func:`~session_migrator.migrate` (``"keep"``: the newest
        tool call stays while its results have not come, for a caller appending them next).
        """
        window = resolve_target(target)
        with self._lock:
            messages = self._view.view(self.store, self.session_id, self.refresh())
            strategy_name = self.strategy if isinstance(self.strategy, str) else self.strategy.name
            counter = counter or default_counter(window)
            related = self._related_sessions(query or messages)
            notes = session_notes(
                self.store, self.session_id, self.metadata, self.user_facts, window, counter
            )
            notes_cost = [counter.count_message(n) for n in notes]
            key = FitKey(
                len(messages),
                messages[-1].id if messages else None,
                window,
                strategy_name,
                self.reserve_output,
                extra_reserved,
                query,
                counter.name,
                budget_cap,
                check_pending(pending_tool_calls),
                related_key(related),
                self._ahead.written if self._ahead is not None else 0,
                tuple(n.text for n in notes),
                self._view.key,
            )
            if self._cache is not None and self._cache[0] == key:
                return self._cache[1]
            ledger = self._ledger_for(messages, counter)
            previous = stored_summary(self.store, self.session_id)
            options = FitOptions(
                strategy=self.strategy,
                query=query,
                summarizer=self.summarizer,
                reserve_output=self.reserve_output,
                counter=counter,
                previous_summary=previous[0] if previous else None,
                extra_reserved=extra_reserved + sum(notes_cost),
                source_model=self._previous_target(),
                pending_tool_calls=pending_tool_calls,
                related=related,
                budget_cap=budget_cap,
                embeddings=session_vectors(self),
                gap_note=self.gap_note,
                times=self._said,
            )
            result = fit_messages(ledger.messages, window, options, ledger)
            for note, cost in zip(notes, notes_cost, strict=True):
                result = with_facts(result, note, cost)
            try:
                self._counts.persist(self._messages, counter)
                if result.summary is not None:
                    save_summary(
                        self.store,
                        self.session_id,
                        result.summary,
                        window.name,
                        strategy_name,
                        previous,
                    )
                self._log(window.name, result)
            except SessionNotFoundError:
                # another process deleted the session since it was read: this fit is of what
                # was read (as if it came first); the next read starts again from the store
                self._loaded = False
                self._cache = None
                return result
            self._cache = (key, result)
            if self.compactor is not None and self._ahead is not None and self.summarizer:
                lease = StoreLease(self.store, self.session_id, owner=self._lease_owner)
                self.compactor.submit(self._ahead, self.summarizer, counter, lease)
            return result

    def compact(self, target: str | ModelWindow) -> bool:
        """Write now, in this thread, the summary the next cut for ``target`` will need (a
        scheduler's call, with or without a compactor); whether one was written. The next fit
        takes it. While another process compacts the session (holds its ``compaction`` lease
        in the store) nothing is written: ``False``, and :attr:`compaction` says ``waiting``."""
        if self.summarizer is None:
            return False
        with self._lock:
            if self._ahead is None:
                self._ahead = Ahead()
                self._ledger = None
                self._cache = None
            self.fit(target)
            ahead, held = self._ahead, self._ledger
        if held is None:
            return False
        compactor = self.compactor or Compactor.default()
        lease = StoreLease(self.store, self.session_id, owner=self._lease_owner)
        return compactor.run_now(ahead, self.summarizer, held[0], lease)

    @property
    def compaction(self) -> dict[str, Any]:
        """Background compaction here: ``state`` (``off``, ``idle``, ``pending``, ``ready``,
        ``failed: ...``, ``cancelled``, ``waiting: another process is compacting``),
        ``written`` ahead, the last one's ``seconds``."""
        ahead = self._ahead
        return {"state": "off", "written": 0, "seconds": 0.0} if ahead is None else ahead.status()

    async def afit(
        self,
        target: str | ModelWindow,
        *,
        query: str | None = None,
        extra_reserved: int = 0,
        budget_cap: int | None = None,
        pending_tool_calls: PendingToolCalls = "drop",
    ) -> MigrationResult:
        """:meth:`fit` in a worker thread."""
        return await asyncio.to_thread(
            self.fit,
            target,
            query=query,
            extra_reserved=extra_reserved,
            budget_cap=budget_cap,
            pending_tool_calls=pending_tool_calls,
        )

    # -- store bookkeeping -----------------------------------------------------------------

    def _related_sessions(self, query: str | list[Message]) -> RelatedSessions | None:
        """The other sessions recall draws on (``None``: the session scope), found first."""
        if self.recall_scope == "session":
            return None
        from session_migrator.store import related_sessions

        self._related = related_sessions(
            self.store, self.session_id, self.recall_scope, previous=self._related, query=query
        )
        return self._related

    def _user_id(self) -> str | None:
        """The session's user: its ``metadata``'s ``user_id``, else the store's."""
        user = (self.metadata or {}).get("user_id")
        if user is None:
            info = self.store.get_session(self.session_id)
            user = info.metadata.get("user_id") if info is not None else None
        return user if isinstance(user, str) and user else None

    def _ledger_for(self, messages: list[Message], counter: TokenCounter) -> Ledger:
        """The ledger of ``messages`` by ``counter``, brought up to date (only the messages new
        since the last fit are counted, their counts read from the store when it has them)."""
        held = self._ledger
        if (
            held is None
            or held[0] is not counter
            or len(held[1]) > len(messages)
            or (len(held[1]) and held[1].messages[-1] is not messages[len(held[1]) - 1])
            or held[1].cache.get("placeholders", ()) != self._view.key  # (the agent's, changed)
        ):
            held = (counter, Ledger(counter.count_message, slack=self.slack))
            self._ledger = held
            held[1].cache["placeholders"] = self._view.key
            if self._ahead is not None:
                # (the summaries written ahead are of these messages: a new ledger, a new start)
                self._ahead = Ahead()
                held[1].cache["ahead"] = self._ahead
        ledger = held[1]
        new = messages[len(ledger) :]
        if new:
            self._counts.prime(new, counter)
            ledger.extend(new)
        return ledger

    def _previous_target(self) -> str | None:
        if not self._last_target_loaded:
            records = self.store.migrations(self.session_id)
            self._last_target = records[-1].to_model if records else None
            self._last_target_loaded = True
        return self._last_target

    def _log(self, model: str, result: MigrationResult) -> None:
        previous = self._previous_target()
        if previous == model or not self._messages:
            return  # nothing moved (an empty session has nothing to log either)
        log_migration(self.store, self.session_id, previous, model, result.report)
        self._last_target = model
