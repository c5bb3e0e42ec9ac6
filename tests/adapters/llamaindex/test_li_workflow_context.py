"""A workflow Context holding the memory serializes and restores it as a reference to its store
and session (llama-index-workflows' own Context.to_dict / from_dict, JSON in between)."""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from workflows import Context, Workflow, step
from workflows.events import StartEvent, StopEvent

from llamaindex_session_migrator import FittedMemory, SessionMigratorMemory, _memory_reference

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20:inspect"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211:inspect"),
]


class _Chat(Workflow):
    """Appends the user's message to the memory it keeps in ``ctx.store`` (made on first use)."""

    def __init__(self, store: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.store_url = store

    @step
    async def chat(self, ctx: Context, ev: StartEvent) -> StopEvent:
        memory = await ctx.store.get("memory", default=None)
        if memory is None:
            memory = SessionMigratorMemory(chat_store_key="wf-user", store=self.store_url)
            await ctx.store.set("memory", memory)
        await memory.aput(ChatMessage(role="user", content=ev.get("text")))
        return StopEvent(result=len(await memory.aget_all()))


@pytest.fixture
def another_process(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Forget the memories alive in this process, as a process that restores a context would."""
    return lambda: monkeypatch.setattr(_memory_reference, "_live", weakref.WeakValueDictionary())


def _round_trip(ctx: Context, workflow: Workflow) -> Context:
    data = json.loads(json.dumps(ctx.to_dict()))  # what a user persists
    return Context.from_dict(workflow, data)


async def test_a_restored_context_continues_the_stored_conversation(
    tmp_path: Path, another_process: Callable[[], None]
) -> None:
    url = f"sqlite:///{tmp_path / 'wf.db'}"
    workflow = _Chat(store=url)
    ctx = Context(workflow)
    assert await workflow.run(ctx=ctx, text="my card ends 4242") == 1
    data = json.dumps(ctx.to_dict())
    assert "4242" not in data  # a reference: the conversation stays in the store

    # in this process, the very memory comes back
    memory = await ctx.store.get("memory")
    same = _round_trip(ctx, workflow)
    assert await same.store.get("memory") is memory

    # in another process (the memory is gone): a new one on the same store and session
    elsewhere = json.loads(data)
    memory.close()
    another_process()
    restored = Context.from_dict(workflow, elsewhere)
    reopened = await restored.store.get("memory")
    assert isinstance(reopened, SessionMigratorMemory)
    assert reopened is not memory
    assert reopened.session_id == "wf-user"
    assert await workflow.run(ctx=restored, text="and the new turn?") == 2
    assert [m.content for m in reopened.get_all()] == ["my card ends 4242", "and the new turn?"]
    reopened.close()


async def test_a_memory_that_cannot_be_reopened_fails_loudly_on_restore(
    another_process: Callable[[], None],
) -> None:
    workflow = _Chat(store="memory://")
    ctx = Context(workflow)
    await workflow.run(ctx=ctx, text="hello")
    data = json.loads(json.dumps(ctx.to_dict()))
    another_process()
    restored = Context.from_dict(workflow, data)  # (the state is decoded when first read)
    with pytest.raises(ValueError, match=r"memory:// store lives only in the process"):
        await restored.store.get("memory")


async def test_a_function_agent_resumes_from_a_serialized_context(
    tmp_path: Path, make_llm: Callable[..., Any], another_process: Callable[[], None]
) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    llm = make_llm(context_window=8_000)
    agent = FunctionAgent(tools=[], llm=llm)
    memory = SessionMigratorMemory.from_defaults(chat_store_key="agent", store=url, llm=llm)
    ctx = Context(agent)
    await agent.run(user_msg="first question", memory=memory, ctx=ctx)
    data = json.loads(json.dumps(ctx.to_dict()))
    memory.close()
    another_process()
    restored = Context.from_dict(agent, data)
    await agent.run(user_msg="second question", ctx=restored)
    check = SessionMigratorMemory(chat_store_key="agent", store=url)
    contents = [m.content for m in check.get_all()]
    check.close()
    assert contents[0] == "first question"
    assert "second question" in contents  # the new turn reached the store
    assert len(contents) == 4
    reopened = await restored.store.get("memory")
    assert isinstance(reopened, SessionMigratorMemory)
    assert reopened is not memory
    reopened.close()


class _FittedChat(Workflow):
    """As ``_Chat``, with a FittedMemory (the Memory API)."""

    def __init__(self, store: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.store_url = store

    @step
    async def chat(self, ctx: Context, ev: StartEvent) -> StopEvent:
        memory = await ctx.store.get("memory", default=None)
        if memory is None:
            memory = FittedMemory(session_id="fm", token_limit=3000, store=self.store_url)
            await ctx.store.set("memory", memory)
        await memory.aput(ChatMessage(role="user", content=ev.get("text")))
        return StopEvent(result=len(await memory.aget_all()))


async def test_a_fitted_memory_round_trips_through_a_context(
    tmp_path: Path, another_process: Callable[[], None]
) -> None:
    url = f"sqlite:///{tmp_path / 'fm.db'}"
    workflow = _FittedChat(store=url)
    ctx = Context(workflow)
    assert await workflow.run(ctx=ctx, text="first") == 1
    data = json.loads(json.dumps(ctx.to_dict()))
    memory = await ctx.store.get("memory")
    assert await Context.from_dict(workflow, data).store.get("memory") is memory
    memory.close()
    another_process()
    restored = Context.from_dict(workflow, data)
    reopened = await restored.store.get("memory")
    assert isinstance(reopened, FittedMemory)
    assert reopened is not memory
    assert (reopened.session_id, reopened.token_limit) == ("fm", 3000)
    assert await workflow.run(ctx=restored, text="second") == 2
    reopened.close()
    on_memory = _FittedChat(store="memory://")
    ctx = Context(on_memory)
    await on_memory.run(ctx=ctx, text="hi")
    data = json.loads(json.dumps(ctx.to_dict()))
    another_process()
    restored = Context.from_dict(on_memory, data)
    with pytest.raises(ValueError, match="lives only in the process"):
        await restored.store.get("memory")
