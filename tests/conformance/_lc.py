"""LangChain side of the matrix: messages, tools and schemas, and how a cell calls a runnable."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from tests.conformance._threads import QUESTION

SYSTEM = "You are Forge, a senior engineering agent on the ledgerd billing service."
CALLS = ("invoke", "ainvoke", "stream", "astream", "batch")


def lc_messages(turns: Sequence[tuple[str, str]], question: str = QUESTION) -> list[BaseMessage]:
    """The system prompt, the turns, and the user's question."""
    out: list[BaseMessage] = [SystemMessage(SYSTEM)]
    out += [HumanMessage(t) if r == "user" else AIMessage(t) for r, t in turns]
    out.append(HumanMessage(question))
    return out


def run(
    runnable: Runnable[Any, Any],
    call: str,
    messages: list[BaseMessage],
    config: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Call ``runnable`` the ``call`` way; a stream's chunks are added up into one message."""
    if call == "invoke":
        return runnable.invoke(messages, config, **kwargs)  # type: ignore[arg-type]
    if call == "ainvoke":
        return asyncio.run(runnable.ainvoke(messages, config, **kwargs))  # type: ignore[arg-type]
    if call == "batch":
        outs = runnable.batch([messages, messages], config, **kwargs)  # type: ignore[arg-type]
        assert len(outs) == 2
        return outs[0]
    if call == "stream":
        chunks = list(runnable.stream(messages, config, **kwargs))  # type: ignore[arg-type]
    else:

        async def collect() -> list[Any]:
            return [c async for c in runnable.astream(messages, config, **kwargs)]  # type: ignore[arg-type]

        chunks = asyncio.run(collect())
    assert chunks, "the stream yielded nothing"
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    return total


# -- tools and schemas big enough to matter on an 8,192-token window ---------------------------

_DETAIL = (
    "Reads the ledgerd billing service's records for one customer: invoices with their line "
    "items, credits and refunds, the payment attempts with their processor responses, the "
    "dunning state, the tax jurisdiction and the currency the account settles in. Use it before "
    "answering any question about an amount, a date or a status; never guess a figure. "
)


def _make_tool(i: int) -> Any:
    def lookup(customer_id: str, invoice_number: str, include_history: bool = False) -> str:
        return f"tool {i}: invoice {invoice_number} of {customer_id} is paid."

    lookup.__name__ = f"ledger_lookup_{i}"
    lookup.__doc__ = (_DETAIL * 3) + f"(Variant {i}.)"
    return tool(lookup)


TOOLS = [_make_tool(i) for i in range(12)]  # about 3,000 tokens of schemas


class Report(BaseModel):
    """The structured answer about the invoice fix, with the evidence behind each field."""

    next_step: str = Field(description=_DETAIL + " The single next step.")
    owner: str = Field(description=_DETAIL + " Who does it.")
    risk: str = Field(description=_DETAIL + " What could go wrong.")
    tickets: list[str] = Field(description=_DETAIL + " The ticket numbers involved.")
    files: list[str] = Field(description=_DETAIL + " The files to change.")
    confidence: float = Field(description=_DETAIL + " From 0 to 1.")


REPORT = {
    "next_step": "Backfill the rounding fix.",
    "owner": "Priya",
    "risk": "Double credits.",
    "tickets": ["LED-412"],
    "files": ["ledgerd/invoices.py"],
    "confidence": 0.8,
}


def answer_text(result: Any) -> str:
    """The text a user would see of a chat model's answer."""
    if isinstance(result, BaseMessage):
        return str(result.text if isinstance(result.text, str) else result.content)
    return str(result)


def ask_through_history(model: Any, history: Any, question: str = "What did we decide?") -> Any:
    """Ask ``question`` through a ``RunnableWithMessageHistory`` chain over ``model`` whose
    history is ``history`` (a system prompt, the history, the question), as LangChain's docs
    build one; the model's answer."""
    import warnings

    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables.history import RunnableWithMessageHistory

    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    with warnings.catch_warnings():  # (RunnableWithMessageHistory is deprecated in langchain 1)
        warnings.simplefilter("ignore", DeprecationWarning)
        chain = RunnableWithMessageHistory(
            prompt | model,
            lambda session_id: history,
            input_messages_key="question",
            history_messages_key="history",
        )
    config: Any = {"configurable": {"session_id": "conformance"}}
    return chain.invoke({"question": question}, config=config)
