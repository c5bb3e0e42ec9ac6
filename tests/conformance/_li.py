"""LlamaIndex side of the matrix: the provider LLMs as users build them, memories, a retriever,
and the surfaces a cell runs (engines, agents, workflows, structured_predict, complete).

What llama-index-llms-openai's ``OpenAI`` sends, as recorded in ``test_li_surfaces.py``:
``max_tokens`` unset sends no ``max_tokens`` at all (its metadata says ``num_output=-1``);
``max_tokens=512`` sends ``max_tokens: 512``; ``temperature: 0.1`` always; ``stream_chat`` adds
``stream: true`` without ``stream_options``. llama-index-llms-anthropic's ``Anthropic`` always
sends ``max_tokens`` (512 unless set) and the system prompt as the top-level ``system``.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from llama_index.core import Document, MockEmbedding, VectorStoreIndex
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent, ReActAgent
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.chat_engine import (
    CondensePlusContextChatEngine,
    ContextChatEngine,
    SimpleChatEngine,
)
from llama_index.core.llms import LLM, ChatMessage
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.prompts import PromptTemplate
from llama_index.llms.anthropic import Anthropic
from llama_index.llms.openai import OpenAI
from pydantic import BaseModel

from llamaindex_session_migrator import FittedMemory, FitToModelLLM, SessionMigratorMemory
from tests.conformance._http import Calls, Reply, Text
from tests.conformance._threads import QUESTION

SYSTEM = "You are Forge, a senior engineering agent on the ledgerd billing service."
_keys = itertools.count()


def lookup(order: str) -> str:
    """Look an order of the ledgerd billing service up: its invoice, status and amount."""
    return f"Order {order}: invoice INV-2291, paid, 412.00 EUR."


class Verdict(BaseModel):
    """The answer about the invoice fix."""

    next_step: str
    owner: str


VERDICT = {"next_step": "Backfill the rounding fix.", "owner": "Priya"}

# name -> build(emulator URL) -> the provider LLM as a user writes it
LLMS: dict[str, tuple[str, Callable[[str], LLM]]] = {
    "openai gpt-4 defaults": (
        "openai",
        lambda url: OpenAI(model="gpt-4", api_base=url, api_key="test"),
    ),
    "openai gpt-4 max_tokens=512": (
        "openai",
        lambda url: OpenAI(model="gpt-4", api_base=url, api_key="test", max_tokens=512),
    ),
    "openai gpt-3.5-turbo-0613 defaults": (
        "openai",
        lambda url: OpenAI(model="gpt-3.5-turbo-0613", api_base=url, api_key="test"),
    ),
    "anthropic claude-3-7 defaults": (
        "anthropic",
        lambda url: Anthropic(model="claude-3-7-sonnet-20250219", base_url=url, api_key="test"),
    ),
}


def chat_messages(turns: Sequence[tuple[str, str]]) -> list[ChatMessage]:
    return [ChatMessage(role=r, content=t) for r, t in turns]


def fitted_memory(llm: LLM, turns: Sequence[tuple[str, str]]) -> SessionMigratorMemory:
    memory = SessionMigratorMemory.from_defaults(
        llm=llm, chat_store_key=f"conformance-{next(_keys)}", store="memory://"
    )
    memory.set(chat_messages(turns))
    return memory


async def fitted_memory_api(llm: LLM, turns: Sequence[tuple[str, str]]) -> FittedMemory:
    """A ``FittedMemory`` holding the thread (filled with ``aput_messages``, on the loop that
    uses it)."""
    memory = FittedMemory.from_defaults(
        session_id=f"conformance-{next(_keys)}", llm=llm, store="memory://"
    )
    await memory.aput_messages(chat_messages(turns))
    return memory


def whole_memory(llm: LLM, turns: Sequence[tuple[str, str]]) -> ChatMemoryBuffer:
    """A memory that hands the whole thread out (for the unguarded half of a cell)."""
    return ChatMemoryBuffer.from_defaults(chat_history=chat_messages(turns), token_limit=10**8)


def retriever() -> BaseRetriever:
    docs = [
        Document(text="Invoice INV-2291 was double-credited by the rounding bug in credits.py."),
        Document(text="The PostgreSQL cut-over is planned for Thursday, 06:00 UTC."),
        Document(text="Priya owns the invoice fix; Tomas reviews it."),
    ]
    index = VectorStoreIndex.from_documents(docs, embed_model=MockEmbedding(embed_dim=8))
    return index.as_retriever(similarity_top_k=2)


# -- the surfaces: run(llm, memory, turns) -> the text the user gets ----------------------------
Surface = tuple[Callable[[LLM, Any, Sequence[tuple[str, str]]], str], tuple[Reply, ...], bool]


def _simple(llm: LLM, memory: Any, turns: Any) -> str:
    return SimpleChatEngine.from_defaults(llm=llm, memory=memory).chat(QUESTION).response


def _simple_stream(llm: LLM, memory: Any, turns: Any) -> str:
    response = SimpleChatEngine.from_defaults(llm=llm, memory=memory).stream_chat(QUESTION)
    return "".join(response.response_gen)


def _simple_async(llm: LLM, memory: Any, turns: Any) -> str:
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    return asyncio.run(engine.achat(QUESTION)).response


def _context(llm: LLM, memory: Any, turns: Any) -> str:
    engine = ContextChatEngine.from_defaults(retriever(), llm=llm, memory=memory)
    return engine.chat(QUESTION).response


def _condense(llm: LLM, memory: Any, turns: Any) -> str:
    engine = CondensePlusContextChatEngine.from_defaults(retriever(), llm=llm, memory=memory)
    return engine.chat(QUESTION).response


def _function_agent(llm: LLM, memory: Any, turns: Any) -> str:
    agent = FunctionAgent(tools=[lookup], llm=llm, system_prompt=SYSTEM)
    return str(asyncio.run(_run(agent, memory)))


def _react_agent(llm: LLM, memory: Any, turns: Any) -> str:
    agent = ReActAgent(tools=[lookup], llm=llm)
    return str(asyncio.run(_run(agent, memory)))


def _workflow(llm: LLM, memory: Any, turns: Any) -> str:
    planner = FunctionAgent(
        name="planner",
        description="Plans.",
        system_prompt="You plan.",
        llm=llm,
        tools=[lookup],
        can_handoff_to=["clerk"],
    )
    clerk = FunctionAgent(
        name="clerk",
        description="Does the paperwork.",
        system_prompt=SYSTEM,
        llm=llm,
        tools=[lookup],
    )
    workflow = AgentWorkflow(agents=[planner, clerk], root_agent="planner")
    return str(asyncio.run(_run(workflow, memory)))


async def _run(agent: Any, memory: Any) -> Any:
    return await agent.run(user_msg=QUESTION, memory=memory)


def _notes(turns: Sequence[tuple[str, str]]) -> str:
    return "\n".join(f"{r}: {t}" for r, t in turns)


def _structured(llm: LLM, memory: Any, turns: Any) -> str:
    prompt = PromptTemplate("Notes of the session:\n{notes}\n\nQuestion: {question}")
    verdict = llm.structured_predict(Verdict, prompt, notes=_notes(turns), question=QUESTION)
    return verdict.next_step


def _complete(llm: LLM, memory: Any, turns: Any) -> str:
    return llm.complete(f"{_notes(turns)}\n\nQuestion: {QUESTION}").text


LOOKUP = Calls.one("lookup", order="42")
DONE = Text("Order 42 shipped.")
REACT = (
    Text('Thought: I need the order.\nAction: lookup\nAction Input: {"order": "42"}'),
    Text("Thought: I can answer without using any more tools.\nAnswer: Order 42 shipped."),
)

# name -> (run, the emulator's scripted answers, whether the surface takes a memory)
SURFACES: dict[str, Surface] = {
    "SimpleChatEngine.chat": (_simple, (DONE,), True),
    "SimpleChatEngine.stream_chat": (_simple_stream, (DONE,), True),
    "SimpleChatEngine.achat": (_simple_async, (DONE,), True),
    "ContextChatEngine": (_context, (DONE,), True),
    "CondensePlusContextChatEngine": (_condense, (Text("What next for INV-2291?"), DONE), True),
    "FunctionAgent": (_function_agent, (LOOKUP, DONE), True),
    "ReActAgent": (_react_agent, REACT, True),
    "AgentWorkflow handoff": (
        _workflow,
        (Calls.one("handoff", to_agent="clerk", reason="paperwork"), LOOKUP, DONE),
        True,
    ),
    "structured_predict": (_structured, (Calls.one("Verdict", **VERDICT),), False),
    "complete": (_complete, (DONE,), False),
}


def guarded(llm: LLM) -> FitToModelLLM:
    return FitToModelLLM(llm)


#: llama-index-llms-anthropic (to 0.12.3, the newest) builds anthropic's ``MessageParam``, a Union
#: since anthropic 2.0, which langchain-anthropic's newest versions need: with anthropic 2.x
#: installed the LlamaIndex Anthropic LLM cannot build a request at all (an upstream defect).
ANTHROPIC_UPSTREAM = pytest.mark.xfail(
    int(importlib.metadata.version("anthropic").split(".")[0]) >= 2,
    reason="llama-index-llms-anthropic cannot build a request with anthropic>=2 (upstream)",
    strict=True,
)
