"""The agent's own scissors in ``create_agent``: ``FitToModelMiddleware(placeholder_tools=True)``
gives the model ``compress_context``, ``list_placeholders`` and ``restore_context``, kept in the
graph's state (checkpointed with the thread); driven on the OpenAI emulator with a real
``ChatOpenAI``, the model scripted to call them as an agent would.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from langchain_session_migrator import FitToModelMiddleware
from tests.conformance._http import Calls, Text
from tests.conformance._openai_api import OpenAIEmulator
from tests.conformance.conftest import assert_conforms

LOG_LINE = "INFO worker heartbeat ok, queue nominal"
NEEDLE = "ERROR disk quota exceeded on /var/build"


@tool
def fetch_log(log: str) -> str:
    """Fetch a log by name."""
    return "\n".join(f"{n:04d} {NEEDLE if n == 117 else LOG_LINE}" for n in range(200))


def _tool_texts(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in body["messages"] if m["role"] == "tool"]


def test_the_agent_compresses_lists_and_restores_its_own_context(
    openai_api: OpenAIEmulator,
) -> None:
    middleware = FitToModelMiddleware(placeholder_tools=True)
    assert [t.name for t in middleware.tools] == [
        "read_context",
        "compress_context",
        "list_placeholders",
        "restore_context",
    ]
    agent = create_agent(
        ChatOpenAI(model="gpt-4", base_url=openai_api.base_url, api_key="test"),  # type: ignore[arg-type]
        [fetch_log],
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "scissors"}}
    summary = "build log, 200 lines: line 0117 says ERROR disk quota exceeded"
    openai_api.script(
        Calls.one("fetch_log", log="build"),
        Text("Fetched."),
        Calls.one("compress_context", tool="fetch_log", summary=summary),
        Text("Compressed."),
        Calls.one("list_placeholders"),
        Text("One placeholder."),
        Calls.one("restore_context", id="p1"),
        Text("Restored."),
    )

    def turn(question: str) -> dict[str, Any]:
        state: dict[str, Any] = agent.invoke({"messages": [HumanMessage(question)]}, config)
        return state

    turn("Fetch the build log.")
    state = turn("Free some room: compress that log.")
    assert state["session_migrator_placeholders"][0]["id"] == "p1"
    assert "compressed as p1" in str(state["messages"][-2].content)
    # the next request sends the log as the placeholder's line, not the log
    after = _tool_texts(openai_api.requests[3].body)
    assert any('restore_context(id="p1")' in t and summary in t for t in after)
    assert not any(LOG_LINE in t for t in after)
    state = turn("What did you compress?")
    assert summary in str(state["messages"][-2].content)
    state = turn("Bring the log back.")
    assert state["session_migrator_placeholders"][0]["restored"]
    assert any(NEEDLE in t for t in _tool_texts(openai_api.requests[-1].body))
    # the state's own messages were never changed
    assert any(NEEDLE in str(m.content) for m in state["messages"])
    assert_conforms(openai_api, at_least=8)


def test_a_call_that_cannot_be_done_says_what_to_do(openai_api: OpenAIEmulator) -> None:
    agent = create_agent(
        ChatOpenAI(model="gpt-4", base_url=openai_api.base_url, api_key="test"),  # type: ignore[arg-type]
        [fetch_log],
        middleware=[FitToModelMiddleware(placeholder_tools=True)],
    )
    openai_api.script(Calls.one("restore_context", id="p9"), Text("None to restore."))
    state = agent.invoke({"messages": [HumanMessage("Restore p9.")]})
    answer = str(state["messages"][-2].content)
    assert "no placeholder 'p9' in force" in answer
    assert (
        "session_migrator_placeholders" not in state or not state["session_migrator_placeholders"]
    )
    assert_conforms(openai_api, at_least=2)
