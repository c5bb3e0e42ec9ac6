"""The LangChain surfaces of :mod:`benchmarks.agent_progress`: ``create_agent`` with
``FitToModelMiddleware`` on an ``InMemorySaver`` thread, and a LangGraph ``ToolNode`` loop whose
model is ``FitToModel``, each run with the fake model of :mod:`benchmarks._agent_brain`."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from benchmarks._agent_brain import (
    ROUNDS,
    SYSTEM_PROMPT,
    TURNS,
    Tally,
    decide,
    lookup_result,
    question,
    question_of,
)
from langchain_session_migrator import FitToModel, FitToModelMiddleware, messages_to_core
from session_migrator import BudgetError, TiktokenCounter

COUNTER = TiktokenCounter("o200k_base")
RECURSION_LIMIT = 40


class AgentChatModel(BaseChatModel):
    """A chat model that calls the lookups whose results it cannot see (see the brain)."""

    model_name: str = "agent-bench"
    tally: Tally = Field(default_factory=Tally)
    #: at the start of each turn, compress the outputs of earlier turns' lookups (when it has
    #: the ``compress_context`` tool and sees any): an agent freeing room for its new work
    compresses: bool = False
    #: the rounds of lookups each question needs (the length of the task)
    rounds: int = ROUNDS
    _ids: Any = itertools.count()

    @property
    def _llm_type(self) -> str:
        return "agent-bench"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        core = messages_to_core(messages)
        self.tally.request(COUNTER.count_messages(core))
        self._check_reader(core, kwargs.get("tools") or [])
        tools = kwargs.get("tools") or []
        if self.compresses and _compresses_now(core, tools):
            call = {"tool": "lookup", "summary": "earlier questions' figures: all settled"}
            return _calling("compress_context", call, f"call-compress-{next(self._ids)}")
        steps = _finished_steps(core, tools) if self.compresses else None
        if steps is not None:
            first, last, found = steps
            summary = "; ".join(f"RESULT {k}: all settled" for k in found)
            call = {"first_id": first, "last_id": last, "summary": summary}
            return _calling("compress_context", call, f"call-compress-{next(self._ids)}")
        decision = decide(((m.role, m.text) for m in core), self.rounds)
        if decision.calls:
            message = AIMessage(
                "",
                tool_calls=[
                    {"name": "lookup", "args": {"key": k}, "id": f"call-{k}-{next(self._ids)}"}
                    for k in decision.calls
                ],
            )
        else:
            message = AIMessage(decision.answer)
        return ChatResult(generations=[ChatGeneration(message=message)])

    #: the agent is given a ``read_context`` tool (``create_agent`` with the middleware's)
    reads_back: bool = False

    def _check_reader(self, core: list[Any], tools: list[Any]) -> None:
        names = {t.get("function", {}).get("name") for t in tools if isinstance(t, dict)}
        if not self.reads_back or "read_context" in names:
            return
        self.tally.without_reader += 1
        if any("read_context(" in m.text for m in core):
            self.tally.naming_missing_reader += 1

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[LanguageModelInput, Any]:
        kwargs.pop("tool_choice", None)
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


def _calling(name: str, args: dict[str, Any], call_id: str) -> ChatResult:
    message = AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])
    return ChatResult(generations=[ChatGeneration(message=message)])


#: The finished rounds of lookups a compressing model lets pile up in its turn before it
#: compresses them (with what they found) into one placeholder.
STEPS_BEFORE_COMPRESSING = 2
_KEY = re.compile(r"RESULT (t\d+-r\d+-\d+):")


def _finished_steps(core: list[Any], tools: list[Any]) -> tuple[str, str, list[str]] | None:
    """``(first id, last id, keys found)`` of the current turn's finished steps since its
    question or its newest placeholder, when :data:`STEPS_BEFORE_COMPRESSING` rounds of
    lookups piled up there and the model has the tool (a round just came back); else ``None``.
    It reads the ids off the messages it is sent (a real model has them from the markers,
    ``list_placeholders`` and the answers of ``compress_context``)."""
    names = {t.get("function", {}).get("name") for t in tools if isinstance(t, dict)}
    if "compress_context" not in names or not core or core[-1].role != "tool":
        return None
    start = max((k for k, m in enumerate(core) if m.role == "user"), default=None)
    if start is None or question_of(core[start].text) is None:
        return None
    for k in range(start + 1, len(core)):
        if "compressed by the agent" in core[k].text:
            start = k
    span = core[start + 1 :]
    rounds = [m for m in span if any(c.name == "lookup" for c in m.tool_calls)]
    if len(rounds) < STEPS_BEFORE_COMPRESSING:
        return None
    found = list(dict.fromkeys(k for m in span for k in _KEY.findall(m.text)))
    return span[0].id, span[-1].id, found


def _compresses_now(core: list[Any], tools: list[Any]) -> bool:
    """At a turn's start, with the tool, and an earlier turn's lookup output in sight."""
    names = {t.get("function", {}).get("name") for t in tools if isinstance(t, dict)}
    if "compress_context" not in names or not core or core[-1].role != "user":
        return False
    asked = question_of(core[-1].text)
    return asked is not None and any(
        m.role == "tool"
        and m.text.startswith("RESULT t")
        and not m.text.startswith(f"RESULT t{asked}-")
        for m in core
    )


@tool
def lookup(key: str) -> str:
    """Look up the figures filed under ``key``."""
    return lookup_result(key)


@tool("lookup")
def lookup_blocks(key: str) -> list[dict[str, str]]:
    """Look up the figures filed under ``key``."""
    # as an MCP tool's result reaches LangChain: content blocks, one a line group
    head, rest = lookup_result(key).split("\n", 1)
    return [{"type": "text", "text": head}, {"type": "text", "text": rest}]


def _turns(invoke: Any, model: AgentChatModel, turns: int = TURNS) -> Tally:
    tally = model.tally
    for turn in range(turns):
        before = len(tally.sent)
        try:
            answer = invoke(turn)
            if f"question {turn} " not in answer:
                tally.failed.append(f"turn {turn}: answered {answer[:60]!r}")
        except BudgetError as exc:
            tally.errors.append(f"turn {turn}: {str(exc).splitlines()[0]}")
        except Exception as exc:  # the recursion limit: the turn never finishes
            tally.failed.append(f"turn {turn}: {type(exc).__name__}")
        tally.calls_per_turn.append(len(tally.sent) - before)
    return tally


def create_agent_run(
    name: str,
    guarded: bool,
    mode: str = "invoke",
    blocks: bool = False,
    compresses: bool = False,
    rounds: int = ROUNDS,
    turns: int = TURNS,
) -> Tally:
    """8 turns of ``create_agent`` on one thread, each run with ``mode``: ``invoke``,
    ``ainvoke`` or ``astream`` (the graph's values, streamed); ``blocks``: the tool returns
    content blocks, as MCP tools do; ``compresses``: the middleware's placeholder tools, and a
    model that compresses its earlier lookups' outputs at each turn's start and its turn's
    finished steps as they pile up; ``rounds``, ``turns``: each question's rounds of lookups
    and how many questions."""
    import asyncio

    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    model = AgentChatModel(
        model_name=name, compresses=compresses, reads_back=guarded, rounds=rounds
    )
    agent = create_agent(
        model,
        [lookup_blocks if blocks else lookup],
        system_prompt=SYSTEM_PROMPT,
        middleware=[FitToModelMiddleware(placeholder_tools=compresses)] if guarded else [],
        checkpointer=InMemorySaver(),
    )
    # (a longer task takes more steps: a model call and a tool step a round, a compress call
    # every other round)
    limit = max(RECURSION_LIMIT, 4 * rounds + 20)
    config = {"configurable": {"thread_id": "agent"}, "recursion_limit": limit}

    async def streamed(inputs: Any) -> Any:
        states = [state async for state in agent.astream(inputs, config, stream_mode="values")]
        return states[-1]

    def invoke(turn: int) -> str:
        inputs: Any = {"messages": [("user", question(turn))]}
        if mode == "ainvoke":
            state = asyncio.run(agent.ainvoke(inputs, config))
        elif mode == "astream":
            state = asyncio.run(streamed(inputs))
        else:
            state = agent.invoke(inputs, config)
        return str(state["messages"][-1].content)

    return _turns(invoke, model, turns)


def tool_node_run(name: str, guarded: bool, mode: str = "invoke") -> Tally:
    """8 turns of a LangGraph loop (a model node on ``FitToModel``, a ``ToolNode``) on one
    thread, run with ``mode``: ``invoke`` or ``astream`` (the model node async, the graph's
    values streamed)."""
    import asyncio

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    model = AgentChatModel(model_name=name)
    llm: Any = FitToModel(model) if guarded else model
    bound = llm.bind_tools([lookup])

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke([SystemMessage(SYSTEM_PROMPT), *state["messages"]])]}

    async def acall_model(state: MessagesState) -> dict[str, Any]:
        reply = await bound.ainvoke([SystemMessage(SYSTEM_PROMPT), *state["messages"]])
        return {"messages": [reply]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", acall_model if mode == "astream" else call_model)
    graph.add_node("tools", ToolNode([lookup]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    app = graph.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "loop"}, "recursion_limit": RECURSION_LIMIT}

    async def streamed(inputs: Any) -> Any:
        states = [state async for state in app.astream(inputs, config, stream_mode="values")]
        return states[-1]

    def invoke(turn: int) -> str:
        inputs: Any = {"messages": [("user", question(turn))]}
        state = asyncio.run(streamed(inputs)) if mode == "astream" else app.invoke(inputs, config)
        return str(state["messages"][-1].content)

    return _turns(invoke, model)
