"""The agent's own scissors on a LlamaIndex ``FittedMemory`` (issue 44):
``placeholder_tools(memory)`` gives a ``FunctionAgent`` ``compress_context``,
``list_placeholders`` and ``restore_context``, and ``read_context_tool(memory)`` reads back;
every ``get`` of the memory honours the placeholders (a compressed output is sent as its
placeholder's line, a restored one whole).

Driven on the OpenAI emulator with a real ``OpenAI`` LLM, the model scripted to call the tools
as an agent would, on both kinds of ``FittedMemory``: on a session store (the placeholders kept
in the session) and on LlamaIndex's own ``SQLAlchemyChatStore`` (no ids, no session store: the
placeholders kept in the memory itself).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.conformance._http import Calls, Text
from tests.conformance._openai_api import OpenAIEmulator
from tests.conformance.conftest import assert_conforms

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

LOG_LINE = "INFO worker heartbeat ok, queue nominal"
NEEDLE = "ERROR disk quota exceeded on /var/build"
SUMMARY = "build log, 200 lines: line 0117 says ERROR disk quota exceeded"


def fetch_log(log: str) -> str:
    """Fetch a log by name."""
    return "\n".join(f"{n:04d} {NEEDLE if n == 117 else LOG_LINE}" for n in range(200))


def _tool_texts(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in body["messages"] if m["role"] == "tool"]


def _memory(kind: str, llm: Any) -> Any:
    from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

    from llamaindex_session_migrator import FittedMemory

    if kind == "session store":
        return FittedMemory.from_defaults(llm=llm, store="memory://")
    return FittedMemory.from_defaults(llm=llm, chat_store=SQLAlchemyChatStore(table_name="ops"))


@pytest.mark.parametrize("kind", ["session store", "LlamaIndex chat store"])
def test_a_function_agent_compresses_lists_restores_and_reads_back(
    openai_api: OpenAIEmulator, kind: str
) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai import OpenAI

    from llamaindex_session_migrator import placeholder_tools, read_context_tool

    llm = OpenAI(model="gpt-4", api_base=openai_api.base_url, api_key="test")
    memory = _memory(kind, llm)
    assert (memory.held_placeholders is None) == (kind == "session store")
    tools = [
        FunctionTool.from_defaults(fetch_log),
        *placeholder_tools(memory),
        read_context_tool(memory),
    ]
    agent = FunctionAgent(tools=tools, llm=llm)
    requests = openai_api.requests

    async def main() -> None:
        async def turn(question: str) -> str:
            return str(await agent.run(user_msg=question, memory=memory))

        openai_api.script(Calls.one("fetch_log", log="build"), Text("Fetched."))
        await turn("Fetch the build log.")
        log_id = next(m.id for m in await memory.acontext_messages() if m.role == "tool")

        openai_api.script(
            Calls.one("compress_context", tool="fetch_log", summary=SUMMARY), Text("Compressed.")
        )
        await turn("Free some room: compress that log.")
        assert "compressed as p1: 1 output(s) of fetch_log" in _tool_texts(requests[3].body)[-1]
        # the next request sends the log as its placeholder's line, not the log
        sent = _tool_texts(requests[3].body)[0]
        assert 'restore_context(id="p1")' in sent
        assert SUMMARY in sent
        assert LOG_LINE not in sent

        # the model reads the line back by the id the compress answer named
        openai_api.script(Calls.one("read_context", id=log_id, offset=117 * 45), Text("Read."))
        await turn("What does line 0117 say?")
        assert NEEDLE in _tool_texts(requests[-1].body)[-1]
        assert not any(LOG_LINE in t for t in _tool_texts(requests[-1].body)[:1])

        openai_api.script(Calls.one("list_placeholders"), Text("One placeholder."))
        await turn("What did you compress?")
        assert SUMMARY in _tool_texts(requests[-1].body)[-1]

        openai_api.script(
            Calls.one("restore_context", id="p9"),
            Calls.one("restore_context", id="p1"),
            Text("Restored."),
        )
        await turn("Bring the log back.")
        answers = _tool_texts(requests[-1].body)
        assert "no placeholder 'p9' in force (in force: p1)" in answers[-2]
        assert answers[-1].startswith("p1 restored")
        assert NEEDLE in answers[0]
        assert LOG_LINE in answers[0]
        kept = next(m for m in await memory.acontext_messages() if m.role == "tool")
        assert (kept.id, kept.text) == (log_id, fetch_log("build"))  # nothing was changed
        engine = getattr(memory.sql_store, "_async_engine", None)
        if engine is not None:  # (upstream's SQLite engine, closed in its loop)
            await engine.dispose()

    asyncio.run(main())
    assert_conforms(openai_api, at_least=11)


def test_the_placeholders_stay_with_the_session_for_every_reader() -> None:
    """A ``FittedMemory`` on a session store keeps them in the session: a
    ``SessionMigratorMemory`` on the same session sends the same line."""
    from llama_index.core.llms import ChatMessage, MockLLM

    from llamaindex_session_migrator import FittedMemory, SessionMigratorMemory, placeholder_tools
    from session_migrator.store import open_store

    store = open_store("memory://")
    fitted = FittedMemory.from_defaults(session_id="ops", llm=MockLLM(), store=store)
    turns = [
        ChatMessage(role="user" if i % 2 == 0 else "assistant", content=f"step {i}")
        for i in range(6)
    ]
    fitted.put_messages([*turns, ChatMessage(role="user", content="Now?")])
    ids = [m.id for m in store.load("ops")]
    compress, _, restore = placeholder_tools(fitted)
    compress(first_id=ids[0], last_id=ids[3], summary="steps 0-3 done")
    other = SessionMigratorMemory.from_defaults(llm=MockLLM(), chat_store_key="ops", store=store)
    for memory in (fitted, other):
        sent = [str(m.content) for m in memory.get()]
        assert len(sent) == 4
        assert "steps 0-3 done" in sent[0]
        assert 'restore_context(id="p1")' in sent[0]
    restore(id="p1")
    assert [str(m.content) for m in fitted.get()] == [*(f"step {i}" for i in range(6)), "Now?"]
