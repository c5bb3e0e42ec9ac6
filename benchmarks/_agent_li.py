"""The LlamaIndex surfaces of :mod:`benchmarks.agent_progress`: FunctionAgent, ReActAgent,
CodeActAgent and an AgentWorkflow with a handoff, on ``FitToModelLLM`` with this library's
memories (or LlamaIndex's own), each run with the fake model of :mod:`benchmarks._agent_brain`."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    LLMMetadata,
    MessageRole,
    ToolCallBlock,
)
from llama_index.core.llms.mock import MockFunctionCallingLLM
from pydantic import PrivateAttr

from benchmarks._agent_brain import SYSTEM_PROMPT, TURNS, Tally, decide, lookup_result, question
from llamaindex_session_migrator import (
    FittedMemory,
    FitToModelLLM,
    SessionMigratorMemory,
    from_chat_messages,
)
from session_migrator import BudgetError, TiktokenCounter

COUNTER = TiktokenCounter("o200k_base")
_KEY = re.compile(r"lookup\(['\"]([^'\"]+)['\"]\)")


class AgentLLM(MockFunctionCallingLLM):
    """A function-calling LLM that calls the lookups whose results it cannot see.

    ``style``: ``"function"`` (tool calls), ``"react"`` (ReAct text, one action a step) or
    ``"codeact"`` (an ``<execute>`` block calling the lookups)."""

    model_name: str = "agent-bench"
    context_window: int = 4096
    num_output: int = 512
    style: str = "function"
    _tally: Tally = PrivateAttr(default_factory=Tally)
    _ids: Any = PrivateAttr(default_factory=itertools.count)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        self.response_generator = self._respond

    @property
    def tally(self) -> Tally:
        return self._tally

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.num_output,
            model_name=self.model_name,
            is_chat_model=True,
            is_function_calling_model=self.style == "function",
        )

    def _respond(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        core = from_chat_messages(list(messages))
        self._tally.request(COUNTER.count_messages(core))
        names = {
            getattr(getattr(t, "metadata", None), "name", None) for t in kwargs.get("tools") or []
        }
        if self.style == "function" and "lookup" not in names and "handoff" in names:
            block = ToolCallBlock(
                tool_call_id=f"handoff-{next(self._ids)}",
                tool_name="handoff",
                tool_kwargs={"to_agent": "researcher", "reason": "the lookups"},
            )
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])
        decision = decide((m.role, m.text) for m in core)
        if self.style == "react":
            if decision.calls:
                key = decision.calls[0]
                text = (
                    f"Thought: I need the figures of {key}.\nAction: lookup\n"
                    f'Action Input: {{"key": "{key}"}}'
                )
            else:
                text = (
                    "Thought: I can answer without using any more tools.\n"
                    f"Answer: {decision.answer}"
                )
            return ChatMessage(role=MessageRole.ASSISTANT, content=text)
        if self.style == "codeact":
            if decision.calls:
                code = "\n".join(f"print(lookup({k!r}))" for k in decision.calls)
                return ChatMessage(
                    role=MessageRole.ASSISTANT, content=f"<execute>\n{code}\n</execute>"
                )
            return ChatMessage(role=MessageRole.ASSISTANT, content=decision.answer)
        if decision.calls:
            blocks = [
                ToolCallBlock(
                    tool_call_id=f"call-{k}-{next(self._ids)}",
                    tool_name="lookup",
                    tool_kwargs={"key": k},
                )
                for k in decision.calls
            ]
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks)
        return ChatMessage(role=MessageRole.ASSISTANT, content=decision.answer)


def lookup(key: str) -> str:
    """Look up the figures filed under ``key``."""
    return lookup_result(key)


def execute(code: str) -> str:
    """Run the code (the lookups it calls)."""
    return "\n".join(lookup_result(k) for k in _KEY.findall(code))


def _memory(kind: str, llm: Any, session: str) -> Any:
    if kind == "session":
        return SessionMigratorMemory.from_defaults(
            llm=llm, chat_store_key=session, store="memory://"
        )
    if kind == "fitted":
        return FittedMemory.from_defaults(session_id=session, llm=llm, store="memory://")
    from llama_index.core.memory import Memory

    return Memory.from_defaults(session_id=session)


def _agent(style: str, llm: Any) -> Any:
    from llama_index.core.agent.workflow import (
        AgentWorkflow,
        CodeActAgent,
        FunctionAgent,
        ReActAgent,
    )

    if style == "react":
        return ReActAgent(tools=[lookup], llm=llm, system_prompt=SYSTEM_PROMPT)
    if style == "codeact":
        return CodeActAgent(
            code_execute_fn=execute, tools=[lookup], llm=llm, system_prompt=SYSTEM_PROMPT
        )
    if style == "handoff":
        router = FunctionAgent(
            name="router",
            description="Sends each question to the researcher.",
            tools=[],
            llm=llm,
            system_prompt="You route questions.",
            can_handoff_to=["researcher"],
        )
        researcher = FunctionAgent(
            name="researcher",
            description="Looks figures up.",
            tools=[lookup],
            llm=llm,
            system_prompt=SYSTEM_PROMPT,
            can_handoff_to=[],
        )
        return AgentWorkflow(agents=[router, researcher], root_agent="router")
    return FunctionAgent(tools=[lookup], llm=llm, system_prompt=SYSTEM_PROMPT)


def li_run(
    style: str, memory: str, name: str, window: int, guarded: bool, streaming: bool = True
) -> Tally:
    """8 turns of ``style``'s agent on one ``memory`` (``session``, ``fitted``, ``default``),
    the model's replies streamed or not."""
    model = AgentLLM(
        model_name=name,
        context_window=window,
        style="function" if style == "handoff" else style,
    )
    llm: Any = FitToModelLLM(model) if guarded else model
    agent = _agent(style, llm)
    from llama_index.core.agent.workflow import AgentWorkflow

    for each in agent.agents.values() if isinstance(agent, AgentWorkflow) else [agent]:
        each.streaming = streaming
    mem = _memory(memory, llm, f"{style}-{memory}")
    tally = model.tally

    async def main() -> None:
        for turn in range(TURNS):
            before = len(tally.sent)
            try:
                answer = str(await agent.run(user_msg=question(turn), memory=mem))
                if f"question {turn} " not in answer:
                    tally.failed.append(f"turn {turn}: answered {answer[:60]!r}")
            except BudgetError as exc:
                tally.errors.append(f"turn {turn}: {str(exc).splitlines()[0]}")
            except Exception as exc:  # max_iterations: the run never finishes
                cause = exc.__cause__ if isinstance(exc.__cause__, BudgetError) else None
                if cause is not None:
                    tally.errors.append(f"turn {turn}: {str(cause).splitlines()[0]}")
                else:
                    tally.failed.append(f"turn {turn}: {type(exc).__name__}: {str(exc)[:80]}")
            tally.calls_per_turn.append(len(tally.sent) - before)
        # LlamaIndex's own Memory keeps an in-memory SQLite engine: disposed here, not left to
        # the garbage collector
        engine = getattr(getattr(mem, "sql_store", None), "_async_engine", None)
        if engine is not None:
            await engine.dispose()

    asyncio.run(main())
    return tally


SURFACES: dict[str, Callable[[str, int, bool], Tally]] = {
    "FunctionAgent + SessionMigratorMemory": lambda n, w, g: li_run("function", "session", n, w, g),
    "FunctionAgent + FittedMemory": lambda n, w, g: li_run("function", "fitted", n, w, g),
    "ReActAgent + FittedMemory": lambda n, w, g: li_run("react", "fitted", n, w, g),
    "CodeActAgent + SessionMigratorMemory": lambda n, w, g: li_run("codeact", "session", n, w, g),
    "AgentWorkflow (handoff) + SessionMigratorMemory": lambda n, w, g: li_run(
        "handoff", "session", n, w, g
    ),
    "FunctionAgent + LlamaIndex Memory": lambda n, w, g: li_run("function", "default", n, w, g),
}
