"""Where a :class:`FittedMemory` keeps its queue, chosen when it is made, as a user of
LlamaIndex's ``Memory`` expects:

- ``sql_store=`` (``from_defaults``: ``chat_store=``), any ``AsyncDBChatStore``: used as is, as
  upstream's ``Memory`` uses it (messages go there; flushed ones are archived through it);
- ``from_defaults``'s SQL arguments (``table_name``, ``async_database_uri``, ``async_engine``,
  ``db_schema``): upstream's ``SQLAlchemyChatStore`` built from them, as upstream builds it;
- ``store=``, a session store (URL or object): a :class:`SessionChatStore` on it. The whole
  conversation stays in the store: flushed messages are archived in place, never deleted;
- none of these: the store ``SESSION_MIGRATOR_STORE`` names when it is set, else a ``memory://``
  store of the memory's own. Two memories made without a store share nothing, even with the same
  ``session_id``, as upstream's default (an in-memory SQLite database per memory).
"""

from __future__ import annotations

import os
from typing import Any

from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore

from llamaindex_session_migrator._chat_store import SessionChatStore
from llamaindex_session_migrator._memory_options import open_memory_store
from session_migrator import StoreError
from session_migrator.store import BaseSessionStore

__all__ = [
    "PRIVATE_STORE",
    "chat_store_for",
    "private_chat_store",
    "session_store_of",
    "sql_chat_store",
]

#: The store of a memory made without one (unless ``SESSION_MIGRATOR_STORE`` is set).
PRIVATE_STORE = "memory://"

#: ``Memory.from_defaults``'s default table, used when other SQL arguments are given without it.
DEFAULT_TABLE = "llama_index_memory"

_BOTH = (
    "FittedMemory takes one place for its messages: store= (a session store) or a LlamaIndex "
    "chat store (sql_store=; from_defaults: chat_store= or the SQL arguments), not both"
)


def _default_spec() -> str:
    return os.environ.get("SESSION_MIGRATOR_STORE") or PRIVATE_STORE


def private_chat_store() -> SessionChatStore:
    """The chat store of a memory made without any (see the module docstring)."""
    return SessionChatStore.on(open_memory_store(_default_spec())[0])


def sql_chat_store(
    table_name: str | None,
    async_database_uri: str | None,
    async_engine: Any,
    db_schema: str | None,
) -> AsyncDBChatStore | None:
    """Upstream's ``SQLAlchemyChatStore`` from ``from_defaults``'s SQL arguments, built as
    upstream builds it; ``None`` when none of them is given."""
    if all(v is None for v in (table_name, async_database_uri, async_engine, db_schema)):
        return None
    from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

    return SQLAlchemyChatStore(
        table_name=table_name or DEFAULT_TABLE,
        async_database_uri=async_database_uri,
        async_engine=async_engine,
        db_schema=db_schema,
    )


def chat_store_for(
    *,
    store: BaseSessionStore | str | None,
    sql_store: Any,
    workspace: str,
) -> tuple[AsyncDBChatStore, bool]:
    """The chat store a memory uses and whether the memory owns (closes) its session store."""
    if sql_store is not None:
        if store is not None:
            raise ValueError(_BOTH)
        if not isinstance(sql_store, AsyncDBChatStore):
            raise TypeError(
                f"sql_store is a LlamaIndex AsyncDBChatStore, not {type(sql_store).__name__}"
            )
        return sql_store, False
    opened, owns = open_memory_store(store if store is not None else _default_spec())
    return SessionChatStore.on(opened, workspace), owns


def session_store_of(chats: AsyncDBChatStore) -> BaseSessionStore:
    """The session store under ``chats``, or a :class:`StoreError` naming where the messages
    are instead."""
    if isinstance(chats, SessionChatStore):
        return chats.store
    raise StoreError(
        f"this FittedMemory keeps its messages in the LlamaIndex chat store it was given "
        f"({type(chats).__name__}, its sql_store), not in a session store; pass store= "
        "(a session store URL or object) for a memory on a session store"
    )
