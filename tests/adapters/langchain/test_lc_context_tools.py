"""The ``read_context`` tool on the LangChain surfaces: ``FitToModelMiddleware.tools`` (reading the
agent's state) and ``FittedChatMessageHistory.context_tools()`` (reading the store).

The id a fit's marker names is the one the tool finds: a message's own id, or the id derived
from its position when it has none. (The whole task, with a real provider class, is in
``tests/conformance/test_context_tools.py``.)
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from langchain_session_migrator import (
    FittedChatMessageHistory,
    FitToModelMiddleware,
    messages_to_core,
)
from session_migrator import ModelWindow, migrate
from session_migrator.store import open_store

MARKER = re.compile(r'read_context\(id="([^"]+)"\)')


def _log(tag: str, lines: int = 400) -> str:
    return "\n".join(f"{tag} {k:04d} GET /api/item/{k} 200 ok" for k in range(lines))


def _session(ids: bool) -> list[BaseMessage]:
    """Five tool rounds with long outputs (ids given, or none)."""
    out: list[BaseMessage] = []
    for i in range(5):
        out += [
            HumanMessage(f"Check service {i}.", id=f"u{i}" if ids else None),
            AIMessage(
                "",
                tool_calls=[{"name": "read_log", "args": {"s": i}, "id": f"c{i}"}],
                id=f"a{i}" if ids else None,
            ),
            ToolMessage(_log(f"s{i}"), tool_call_id=f"c{i}", id=f"t{i}" if ids else None),
            AIMessage(f"Service {i} is fine.", id=f"r{i}" if ids else None),
        ]
    return out


def _window(budget: int) -> ModelWindow:
    return ModelWindow("t", "test", budget, budget, 0, "o200k_base", "explicit")


def _read(tool: Any, state: list[BaseMessage], **args: Any) -> str:
    return str(tool.invoke({**args, "state_messages": state}))


def test_the_middleware_offers_read_context_unless_told_not_to() -> None:
    (tool,) = FitToModelMiddleware().tools
    schema = convert_to_openai_tool(tool)["function"]
    assert schema["name"] == "read_context"
    assert set(schema["parameters"]["properties"]) == {"id", "offset"}  # (state is injected)
    assert schema["parameters"]["required"] == ["id"]
    assert len(schema["description"]) < 160
    assert FitToModelMiddleware(context_tools=False).tools == []


def test_the_id_a_marker_names_is_the_one_the_tool_reads() -> None:
    (tool,) = FitToModelMiddleware().tools
    for ids in (True, False):
        state = _session(ids)
        core = messages_to_core(state)  # as the middleware converts a request's messages
        fitted = migrate(core, _window(2_500), strategy="trim", reserve_output=0)
        named = {i for m in fitted.messages for i in MARKER.findall(m.text)}
        assert named, "the fit shrank old tool outputs"
        originals = {m.id: m.text for m in core}
        for message_id in named:
            page = _read(tool, state, id=message_id)
            assert page.startswith(originals[message_id][:200])
            assert f'read_context(id="{message_id}", offset=4000)' in page
            rest = _read(tool, state, id=message_id, offset=4000)
            assert originals[message_id][4000:4100] in rest


def test_a_wrong_id_or_offset_is_told_not_raised() -> None:
    (tool,) = FitToModelMiddleware().tools
    state = _session(True)
    assert "no message with id 'nope'" in _read(tool, state, id="nope")
    assert "offset must be >= 0" in _read(tool, state, id="t0", offset=-5)
    assert "ends before offset 99999" in _read(tool, state, id="t0", offset=99_999)


def test_an_agent_without_tools_binds_none() -> None:
    # a model without bind_tools (GenericFakeChatModel) runs a tool-less agent as before
    model = GenericFakeChatModel(
        messages=iter([AIMessage("Hi.")]), profile={"max_input_tokens": 4_000}
    )
    agent = create_agent(model, middleware=[FitToModelMiddleware()])
    state = agent.invoke({"messages": [HumanMessage("Hello")]})
    assert state["messages"][-1].content == "Hi."


def test_the_history_tool_reads_the_store_offloaded_outputs_whole() -> None:
    store = open_store("memory://", offload_threshold=200)
    history = FittedChatMessageHistory("ctx", model=_window(2_500), store=store)
    history.add_messages(_session(True))
    named = {i for m in history.messages for i in MARKER.findall(str(m.content))}
    assert "t0" in named
    (tool,) = history.context_tools(placeholders=False)
    assert tool.name == "read_context"
    whole = _log("s0")
    assert str(tool.invoke({"id": "t0"})).startswith(whole[:4000])
    assert whole[-200:] in str(tool.invoke({"id": "t0", "offset": len(whole) - 200}))
    assert "no message with id" in str(tool.invoke({"id": "nope"}))


# -- the middleware's own tools give way first (issue 44) ----------------------------------------


def _giving_way(names_in_fit: str) -> tuple[Any, Any]:
    """A middleware whose fit refuses while any of its own tools is in the request, and a
    request with a tool of the agent's and the middleware's four; the fit's messages say
    ``names_in_fit``."""
    from langchain.agents.middleware.types import ModelRequest
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool

    from langchain_session_migrator import FitToModelMiddleware
    from session_migrator import BudgetError

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    middleware = FitToModelMiddleware(placeholder_tools=True)
    ours = {id(t) for t in middleware.tools}

    def fit_with(request: Any, tools: Any) -> Any:
        if any(id(t) in ours for t in tools):
            raise BudgetError("over", budget=10, needed=20)
        return request.override(messages=[HumanMessage(names_in_fit)])

    middleware._fit_with = fit_with  # type: ignore[method-assign]
    model = GenericFakeChatModel(messages=iter([]))
    request = ModelRequest(
        model=model, messages=[HumanMessage("hi")], tools=[lookup, *middleware.tools]
    )
    return middleware, request


def test_its_own_tools_give_way_when_nothing_names_them() -> None:
    middleware, request = _giving_way("nothing cut here")
    fitted = middleware.fit_request(request)
    assert [t.name for t in fitted.tools] == ["lookup"]


@pytest.mark.parametrize(
    "said", ['read it back with read_context(id="t1")', 'restore_context(id="p1") brings them']
)
def test_the_refusal_stands_when_the_fit_names_a_tool_left_out(said: str) -> None:
    from session_migrator import BudgetError

    middleware, request = _giving_way(said)
    with pytest.raises(BudgetError):
        middleware.fit_request(request)
