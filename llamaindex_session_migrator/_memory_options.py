"""What the memory classes take besides LlamaIndex's own arguments, checked where it is given.

Both memories (:class:`SessionMigratorMemory`, the ``ChatMemoryBuffer``; :class:`FittedMemory`,
the ``Memory``) open their store, check their strategy, reserves and LLM, and refuse keywords they
do not know, here: a mistake fails when the memory is made, not at the first chat.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from llama_index.core.llms import LLM

from llamaindex_session_migrator._fact_extractor import LlamaIndexFactExtractor
from llamaindex_session_migrator._summarizer import LlamaIndexSummarizer
from session_migrator import (
    DEFAULT_SLACK,
    Compressor,
    Embeddings,
    ModelWindow,
    SessionMigratorError,
    StoreError,
    Summarizer,
    UnknownModelError,
    check_slack,
    check_strategy,
    open_store,
)
from session_migrator.store import BaseSessionStore

__all__ = [
    "DEFAULT_RESERVE_CAP",
    "DEFAULT_RESERVE_SHARE",
    "FIT_OPTIONS",
    "FitOptions",
    "UnexpectedArgumentsError",
    "check_llm",
    "embeddings_for",
    "from_settings",
    "new_session_id",
    "open_memory_store",
    "refuse_unknown",
]

#: Unless ``reserve_input`` is given, this share of the window (at most
#: :data:`DEFAULT_RESERVE_CAP` tokens) is kept free for what the engine sends besides the history.
DEFAULT_RESERVE_SHARE = 0.25
DEFAULT_RESERVE_CAP = 4096

#: The keywords both memory classes take besides LlamaIndex's own.
FIT_OPTIONS = (
    "embeddings",
    "fact_extractor",
    "gap_note",
    "llm",
    "metadata",
    "model",
    "recall_scope",
    "reserve_input",
    "reserve_output",
    "slack",
    "store",
    "strategy",
    "summarizer",
    "user_facts",
    "workspace",
)


class UnexpectedArgumentsError(SessionMigratorError, TypeError, ValueError):
    """A memory was given keywords it does not take (a ``TypeError``, as Python's own; also a
    ``ValueError``, as LlamaIndex's ``from_defaults`` raises for unexpected kwargs)."""

    def __init__(self, owner: str, unknown: Iterable[str], accepted: Iterable[str]) -> None:
        self.unknown = tuple(sorted(unknown))
        self.accepted = tuple(sorted(accepted))
        hint = ""
        if "session_id" in self.unknown:
            hint = (
                " (session_id is the Memory API's name: SessionMigratorMemory takes "
                "chat_store_key=, and FittedMemory takes session_id=)"
            )
        super().__init__(
            f"Unexpected kwargs: {owner} does not take {', '.join(self.unknown)}{hint}; "
            f"it takes {', '.join(self.accepted)}"
        )


def refuse_unknown(owner: str, given: Mapping[str, Any], accepted: Iterable[str]) -> None:
    """Raise :class:`UnexpectedArgumentsError` if ``given`` has a keyword not in ``accepted``."""
    known = set(accepted)
    unknown = [k for k in given if k not in known]
    if unknown:
        raise UnexpectedArgumentsError(owner, unknown, known)


def new_session_id() -> str:
    """A new private session id: a memory made without one shares no conversation."""
    return f"llamaindex-{uuid.uuid4().hex}"


@dataclass(frozen=True)
class FitOptions:
    """How a memory fits its history (checked by :meth:`checked`)."""

    strategy: str | Compressor = "auto"
    summarizer: Summarizer | None = None
    reserve_output: int | None = None
    reserve_input: int | float | None = None
    workspace: str = "default"
    slack: float = DEFAULT_SLACK
    #: the embedding model recall fuses with bm25 (``None``: bm25 alone)
    embeddings: Embeddings | None = None
    #: the note of the gap before the newest user message (``False``: none; a ``timedelta``:
    #: the threshold; see ``session_migrator.migrate``)
    gap_note: bool | timedelta = True
    #: recall from the other sessions of the user (``"user"``, by the ``user_id`` of the
    #: session's ``metadata``) or of the workspace too (see ``SessionFitter``)
    recall_scope: str = "session"
    #: send the facts the user stated in earlier sessions (see ``SessionFitter``)
    user_facts: bool = False
    #: reads the user's facts in the background (an LLM, or a ``FactExtractor``)
    fact_extractor: Any = None
    #: the session's metadata (``{"user_id": ...}`` for the user scope and the user's facts)
    metadata: dict[str, Any] | None = None

    @classmethod
    def checked(
        cls,
        *,
        strategy: str | Compressor = "auto",
        summarizer: Summarizer | LLM | None = None,
        reserve_output: int | None = None,
        reserve_input: int | float | None = None,
        workspace: str = "default",
        slack: float = DEFAULT_SLACK,
        embeddings: Any = None,
        gap_note: Any = True,
        recall_scope: Any = "session",
        user_facts: Any = False,
        metadata: Any = None,
        fact_extractor: Any = None,
    ) -> FitOptions:
        """The options, or a ``ValueError``/``TypeError`` saying which one is wrong."""
        check_strategy(strategy)
        if not isinstance(gap_note, bool | timedelta):
            raise TypeError(
                "gap_note must be True, False or a timedelta (the threshold), got "
                f"{type(gap_note).__name__}"
            )
        if recall_scope not in ("session", "user", "workspace"):
            raise ValueError(
                f"recall_scope must be 'session', 'user' or 'workspace', got {recall_scope!r}"
            )
        if not isinstance(user_facts, bool):
            raise TypeError(f"user_facts must be True or False, got {type(user_facts).__name__}")
        if metadata is not None and not isinstance(metadata, dict):
            raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}")
        given_input: Any = reserve_input  # (checked as the caller may pass anything)
        given_output: Any = reserve_output
        if given_input is not None and (
            isinstance(given_input, bool)
            or not isinstance(given_input, int | float)
            or given_input < 0
            or (isinstance(given_input, float) and given_input >= 1)
        ):
            raise ValueError(
                "reserve_input is a number of tokens, or a share of the window below 1"
            )
        if given_output is not None and (
            not isinstance(given_output, int) or isinstance(given_output, bool) or given_output < 0
        ):
            raise ValueError("reserve_output is a number of tokens (0 or more)")
        given_workspace: Any = workspace
        if not isinstance(given_workspace, str) or not given_workspace:
            raise ValueError("workspace is a non-empty string")
        return cls(
            strategy=strategy,
            summarizer=(
                LlamaIndexSummarizer(summarizer) if isinstance(summarizer, LLM) else summarizer
            ),
            reserve_output=reserve_output,
            reserve_input=reserve_input,
            workspace=workspace,
            slack=check_slack(slack),
            embeddings=embeddings_for(embeddings),
            gap_note=gap_note,
            recall_scope=recall_scope,
            user_facts=user_facts,
            metadata=metadata,
            fact_extractor=(
                LlamaIndexFactExtractor(fact_extractor)
                if isinstance(fact_extractor, LLM)
                else fact_extractor
            ),
        )

    def fitter_settings(self) -> dict[str, Any]:
        """What a ``SessionFitter`` of a memory is made with."""
        return {
            "strategy": self.strategy,
            "summarizer": self.summarizer,
            "reserve_output": self.reserve_output,
            "workspace": self.workspace,
            "slack": self.slack,
            "embeddings": self.embeddings,
            "gap_note": self.gap_note,
            "recall_scope": self.recall_scope,
            "user_facts": self.user_facts,
            "fact_extractor": self.fact_extractor,
            "metadata": self.metadata,
        }

    def input_reserve(self, window: ModelWindow) -> int:
        """The input tokens kept free beside the history for ``window``."""
        reserve = self.reserve_input
        if reserve is None:
            return min(int(window.context_window * DEFAULT_RESERVE_SHARE), DEFAULT_RESERVE_CAP)
        if isinstance(reserve, float):
            return int(window.context_window * reserve)
        return reserve


def embeddings_for(embeddings: Any) -> Embeddings | None:
    """The embedding model recall uses: ``embeddings`` (a ``BaseEmbedding``, a LangChain
    ``Embeddings`` or a callable); ``None``: ``Settings.embed_model`` where the user set one
    (its private slot is read: reading ``Settings.embed_model`` would build OpenAI's default);
    ``False``: none."""
    if embeddings is False:
        return None
    if embeddings is None:
        from llama_index.core import Settings

        embeddings = getattr(Settings, "_embed_model", None)
        if embeddings is None:
            return None
    return Embeddings.of(embeddings)


def from_settings(embeddings: Embeddings) -> bool:
    """Whether ``embeddings`` wraps ``Settings.embed_model`` (a reopened memory finds it again)."""
    from llama_index.core import Settings

    return embeddings.source is getattr(Settings, "_embed_model", None)


def open_memory_store(spec: BaseSessionStore | str | None) -> tuple[BaseSessionStore, bool]:
    """The store a memory uses, opened now, and whether the memory owns it (closes it).

    ``None`` is the embedded default (its folder is made). A ``sqlite:///`` URL must name a
    file in a folder that exists: a typo in a path is an error, not a new empty conversation
    in a folder made for it.
    """
    if isinstance(spec, BaseSessionStore):
        return spec, False
    if spec is not None and not isinstance(spec, str):
        raise TypeError(
            f"store is a store URL or a session_migrator.store.BaseSessionStore, not "
            f"{type(spec).__name__}"
        )
    if spec is not None and spec.strip().lower().startswith("sqlite:///"):
        raw = spec.strip()[len("sqlite:///") :]
        folder = Path(raw).expanduser().parent if raw not in ("", ":memory:") else None
        if folder is not None and not folder.is_dir():
            raise StoreError(
                f"cannot open the SQLite store {spec!r}: its folder {str(folder)!r} does not "
                "exist; create it first, or fix the path"
            )
    return open_store(spec), True


def check_llm(llm: LLM | None) -> None:
    """Refuse an LLM whose metadata gives no usable window, naming the fix."""
    if llm is None:
        return
    metadata = llm.metadata
    window: Any = metadata.context_window
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        return
    name = metadata.model_name or type(llm).__name__
    raise UnknownModelError(
        name,
        reason=(
            f"The LLM {name!r} reports context_window={window!r}: no context window is known "
            "for it."
        ),
        remedy=(
            "Give the LLM its real window (e.g. context_window=8192 where it is made), or "
            "pin the window on the memory: model='gpt-4o-mini' (a known name) or "
            "model=session_migrator.ModelWindow(...)."
        ),
    )
