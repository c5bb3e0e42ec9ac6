"""The ``read_context`` tool for LlamaIndex agents: the model reads back what a fit cut.

When a memory's fit shrinks an old tool output, the marker it leaves names the message to read
back: ``read it back with read_context(id="<message id>")``. :func:`read_context_tool` is a
``FunctionTool`` of that name that answers with a page of the original text from the memory's
session store (an offloaded tool output read back whole), as
:func:`session_migrator.context_tools.read_context` pages it. A wrong id or offset is answered
with a short error text, not raised, so the agent goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from llama_index.core.async_utils import asyncio_run
from llama_index.core.tools import FunctionTool

from llamaindex_session_migrator._fitted_placeholders import HeldPlaceholders
from session_migrator import Message
from session_migrator.context_tools import (
    COMPRESS_DESCRIPTION,
    LIST_DESCRIPTION,
    RESTORE_DESCRIPTION,
    compress_text,
    placeholders_text,
    read_context,
    restore_text,
)

__all__ = ["READ_CONTEXT_DESCRIPTION", "placeholder_tools", "read_context_tool"]

#: What the model is told the tool does (kept short: it is sent with every request).
READ_CONTEXT_DESCRIPTION = (
    "Read back text cut to fit the context: the id named by a read_context(...) marker; "
    "offset reads on from that character."
)


def _page(messages: Sequence[Message], id: str, offset: int) -> str:
    try:
        page = read_context(messages, id, offset)
    except KeyError:  # (the core's message points at list_placeholders, not a tool here)
        return f"read_context: no message with id {id!r}; pass the id a marker names"
    except ValueError as exc:
        return f"read_context: {exc}"
    return page or f"read_context: the text of {id!r} ends before offset {offset}"


def read_context_tool(memory: Any) -> FunctionTool:
    """The ``read_context`` tool over ``memory``'s session (a :class:`SessionMigratorMemory`, a
    :class:`FittedMemory`, or anything with ``store`` and ``session_id``), for
    ``FunctionAgent(tools=[..., read_context_tool(memory)])`` run with ``memory=memory``. A
    ``FittedMemory`` on a LlamaIndex chat store is read through the memory itself.

    >>> from llama_index.core.llms import MockLLM
    >>> from llamaindex_session_migrator import SessionMigratorMemory
    >>> memory = SessionMigratorMemory.from_defaults(llm=MockLLM(), store="memory://")
    >>> read_context_tool(memory).metadata.name
    'read_context'
    """
    log: Callable[[], Awaitable[list[Message]]] | None = getattr(memory, "acontext_messages", None)
    if log is not None:  # (a FittedMemory: its own ids, on any chat store)

        async def aread(id: str, offset: int = 0) -> str:
            return _page(await log(), id, offset)

        def read(id: str, offset: int = 0) -> str:
            page: str = asyncio_run(aread(id, offset))
            return page

    else:
        store, session_id = memory.store, memory.session_id

        def read(id: str, offset: int = 0) -> str:
            return _page(store.load(session_id, full=True), id, offset)

        async def aread(id: str, offset: int = 0) -> str:
            return await asyncio.to_thread(read, id, offset)

    return FunctionTool.from_defaults(
        fn=read, async_fn=aread, name="read_context", description=READ_CONTEXT_DESCRIPTION
    )


def placeholder_tools(memory: Any) -> list[FunctionTool]:
    """``compress_context``, ``list_placeholders`` and ``restore_context`` over ``memory``'s
    session (anything with ``store`` and ``session_id``): the model compresses a range of its
    own context (or every output of one tool) into a summary placeholder, lists those in force
    and restores one. The memory's fits honour them: a :class:`SessionMigratorMemory` and a
    :class:`FittedMemory` on a session store keep them in the session (every reader of it
    honours them); a ``FittedMemory`` on a LlamaIndex chat store keeps them in itself. Each
    answer is text within 2,000 characters; a call that cannot be done is answered with what
    to do.

    >>> from llama_index.core.llms import MockLLM
    >>> from llamaindex_session_migrator import SessionMigratorMemory
    >>> memory = SessionMigratorMemory.from_defaults(llm=MockLLM(), store="memory://")
    >>> [t.metadata.name for t in placeholder_tools(memory)]
    ['compress_context', 'list_placeholders', 'restore_context']
    """
    held: HeldPlaceholders | None = getattr(memory, "held_placeholders", None)
    if held is not None:
        return _held_tools(memory, held)
    store, session_id = memory.store, memory.session_id

    def compress_context(
        first_id: str | None = None,
        last_id: str | None = None,
        summary: str | None = None,
        tool: str | None = None,
    ) -> str:
        return compress_text(store, session_id, first_id, last_id, summary, tool)

    async def acompress_context(
        first_id: str | None = None,
        last_id: str | None = None,
        summary: str | None = None,
        tool: str | None = None,
    ) -> str:
        return await asyncio.to_thread(compress_context, first_id, last_id, summary, tool)

    def list_placeholders() -> str:
        return placeholders_text(store, session_id)

    async def alist_placeholders() -> str:
        return await asyncio.to_thread(list_placeholders)

    def restore_context(id: str) -> str:
        return restore_text(store, session_id, id)

    async def arestore_context(id: str) -> str:
        return await asyncio.to_thread(restore_context, id)

    return _three(
        (compress_context, acompress_context),
        (list_placeholders, alist_placeholders),
        (restore_context, arestore_context),
    )


def _three(compress: Any, listed: Any, restore: Any) -> list[FunctionTool]:
    return [
        FunctionTool.from_defaults(fn=fn, async_fn=afn, name=name, description=description)
        for (fn, afn), name, description in (
            (compress, "compress_context", COMPRESS_DESCRIPTION),
            (listed, "list_placeholders", LIST_DESCRIPTION),
            (restore, "restore_context", RESTORE_DESCRIPTION),
        )
    ]


def _held_tools(memory: Any, held: HeldPlaceholders) -> list[FunctionTool]:
    """The three tools over placeholders ``held`` in ``memory`` itself (a ``FittedMemory`` on
    a LlamaIndex chat store): compressed over the memory's whole conversation, by the ids its
    fits name."""

    async def acompress_context(
        first_id: str | None = None,
        last_id: str | None = None,
        summary: str | None = None,
        tool: str | None = None,
    ) -> str:
        messages = await memory.acontext_messages()
        return held.compress(messages, first_id, last_id, summary, tool)

    def compress_context(
        first_id: str | None = None,
        last_id: str | None = None,
        summary: str | None = None,
        tool: str | None = None,
    ) -> str:
        said: str = asyncio_run(acompress_context(first_id, last_id, summary, tool))
        return said

    def list_placeholders() -> str:
        return held.listing()

    async def alist_placeholders() -> str:
        return held.listing()

    def restore_context(id: str) -> str:
        return held.restore(id)

    async def arestore_context(id: str) -> str:
        return held.restore(id)

    return _three(
        (compress_context, acompress_context),
        (list_placeholders, alist_placeholders),
        (restore_context, arestore_context),
    )
