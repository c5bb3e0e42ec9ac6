"""Sub-agents for LangChain agents and LangGraph graphs: a tool that hands a task to another agent.

:func:`subagent_tool` wraps a sub-agent (a ``create_agent`` graph, a compiled LangGraph graph,
any runnable that takes and returns ``{"messages": [...]}``) as a tool of a parent agent. When
the parent calls it with a task:

- the sub-agent is sent a note of what the parent has done so far, made from the parent's
  messages in the graph state (:func:`session_migrator.context_tools.parent_summary`, within 15%
  of the sub-agent's window), then the task; it runs with its own model, window and middleware;
- the parent is answered with the sub-agent's final answer and one line on its work
  (:func:`session_migrator.context_tools.child_result`), not the sub-agent's transcript.
"""

from __future__ import annotations

from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool

from langchain_session_migrator._convert import messages_to_core
from langchain_session_migrator._models import window_for
from session_migrator import ModelWindow, lookup_model
from session_migrator.context_tools import child_result, parent_summary

__all__ = ["subagent_tool"]


def subagent_tool(
    agent: Runnable[Any, Any],
    *,
    name: str,
    description: str,
    model: Any = None,
) -> BaseTool:
    """A tool named ``name`` that runs ``agent`` on the task the parent gives it (see the module
    docstring). ``model``: the sub-agent's chat model, a model name or a ``ModelWindow``, whose
    window the parent's note is sized for (default: 8,192 tokens' worth, gpt-4's)."""
    window = _window(model)

    def _input(task: str, runtime: ToolRuntime) -> dict[str, Any]:
        state: Any = runtime.state
        parent: list[BaseMessage] = list(state.get("messages") or [])
        note = parent_summary(messages_to_core(parent), window)
        text = f"{note.text}\n\nYour task: {task}" if note is not None else task
        return {"messages": [HumanMessage(text)]}

    def _answer(out: Any) -> str:
        messages = out.get("messages") if isinstance(out, dict) else None
        return child_result(messages_to_core(list(messages or [])))

    def run(task: str, runtime: ToolRuntime) -> str:
        return _answer(agent.invoke(_input(task, runtime)))

    async def arun(task: str, runtime: ToolRuntime) -> str:
        return _answer(await agent.ainvoke(_input(task, runtime)))

    return StructuredTool.from_function(run, coroutine=arun, name=name, description=description)


def _window(model: Any) -> ModelWindow:
    if isinstance(model, ModelWindow):
        return model
    if isinstance(model, str):
        return lookup_model(model)
    return window_for(model) if model is not None else lookup_model("gpt-4")
