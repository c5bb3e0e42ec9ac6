"""Sub-agents for LlamaIndex agents and workflows: a tool that hands a task to another agent.

:func:`subagent_tool` wraps a sub-agent (a ``FunctionAgent``, ``ReActAgent`` or
``AgentWorkflow``: anything whose ``run(user_msg=...)`` gives a handler to await) as a
``FunctionTool`` of a parent agent. When the parent calls it with a task:

- the sub-agent is sent a note of what the parent has done so far, made from the parent's memory
  in the workflow's context (:func:`session_migrator.context_tools.parent_summary`, within 15% of
  the sub-agent's window), then the task; it runs with its own LLM, memory and guard;
- the parent is answered with the sub-agent's final answer and one line on its work
  (:func:`session_migrator.context_tools.child_result`), not the sub-agent's transcript.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context

from llamaindex_session_migrator._convert import from_chat_messages
from llamaindex_session_migrator._models import window_for
from session_migrator import Message, ModelWindow, lookup_model
from session_migrator.context_tools import child_result, parent_summary

__all__ = ["subagent_tool"]


def subagent_tool(agent: Any, *, name: str, description: str, llm: Any = None) -> FunctionTool:
    """A tool named ``name`` that runs ``agent`` on the task the parent gives it (see the module
    docstring). ``llm``: the sub-agent's LLM, a model name or a ``ModelWindow``, whose window the
    parent's note is sized for (default: the agent's own ``llm``)."""
    window = _window(llm if llm is not None else getattr(agent, "llm", None))

    async def run(ctx: Context, task: str) -> str:
        parent = await _messages(ctx)
        note = parent_summary(parent, window)
        text = f"{note.text}\n\nYour task: {task}" if note is not None else task
        handler = agent.run(user_msg=text)
        result = await handler
        child = await _messages(handler.ctx)
        if not any(m.role == "assistant" and not m.tool_calls for m in child):
            child.append(Message("assistant", str(getattr(result, "response", result))))
        return child_result(child)

    # (the annotations as objects: LlamaIndex finds the Context parameter by its type)
    run.__annotations__ = {"ctx": Context, "task": str, "return": str}
    return FunctionTool.from_defaults(async_fn=run, name=name, description=description)


async def _messages(ctx: Any) -> list[Message]:
    """The messages of the memory a workflow context holds (none: no memory yet)."""
    memory = await ctx.store.get("memory", default=None) if ctx is not None else None
    if memory is None:
        return []
    return from_chat_messages(await memory.aget_all())


def _window(llm: Any) -> ModelWindow:
    if isinstance(llm, ModelWindow):
        return llm
    if isinstance(llm, str):
        return lookup_model(llm)
    return window_for(llm) if llm is not None else lookup_model("gpt-4")
