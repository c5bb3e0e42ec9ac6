"""``read_context_tool(memory)``: a ``FunctionTool`` that pages back a message of the memory's
session (an offloaded tool output whole), for a ``SessionMigratorMemory`` and a ``FittedMemory``.
(The whole task, a FunctionAgent on the OpenAI emulator, is in
``tests/conformance/test_context_tools.py``.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core.llms import ChatMessage, MockLLM

from llamaindex_session_migrator import FittedMemory, SessionMigratorMemory, read_context_tool
from session_migrator.store import open_store

LOG = "\n".join(f"{n:05d} INFO heartbeat ok" for n in range(1_000))


def _memories() -> list[Any]:
    store = open_store("memory://", offload_threshold=200)
    return [
        SessionMigratorMemory.from_defaults(llm=MockLLM(), store=store),
        FittedMemory.from_defaults(llm=MockLLM(), store=store),
    ]


@pytest.mark.parametrize("index", [0, 1], ids=["SessionMigratorMemory", "FittedMemory"])
def test_the_tool_pages_the_original_back(index: int) -> None:
    memory = _memories()[index]
    memory.put_messages(
        [
            ChatMessage(role="user", content="Fetch the log."),
            ChatMessage(role="tool", content=LOG, additional_kwargs={"tool_call_id": "c0"}),
        ]
    )
    stored = memory.store.load(memory.session_id)
    assert stored[1].marker["kind"] == "offloaded"  # the store holds a preview inline
    tool = read_context_tool(memory)
    assert tool.metadata.name == "read_context"
    assert set(tool.metadata.get_parameters_dict()["properties"]) == {"id", "offset"}
    page = tool(id=stored[1].id, offset=250 * 24).content
    assert page.startswith("00250 INFO heartbeat ok")
    assert f'read_context(id="{stored[1].id}", offset=' in page
    assert asyncio.run(tool.acall(id=stored[1].id)).content.startswith("00000 INFO")
    assert "no message with id 'nope'" in tool(id="nope").content
    assert "offset must be >= 0" in tool(id=stored[1].id, offset=-1).content
    assert "ends before offset" in tool(id=stored[1].id, offset=10**6).content
