"""One session id in one store, two frameworks: LangChain writes turns with tool calls on a large
model, a LlamaIndex agent picks the session up on a smaller model (fitted) and adds turns, and
LangChain reads it back with every message intact (ids, tool calls, tool results). And the
other way round. On SQLite, Redis and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock

from langchain_session_migrator import FittedChatMessageHistory, messages_to_core
from llamaindex_session_migrator import SessionMigratorMemory, from_chat_messages
from session_migrator.messages._rules import is_valid_chat

pytestmark = [
    # llama-index workflows inspect agents with inspect.getmembers, which reads pydantic's
    # deprecated instance attributes: exactly those warnings, raised in ``inspect``, are ignored.
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20:inspect"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211:inspect"),
]

SESSION = "handoff-1"


def _langchain_replies(filler: str) -> Iterator[AIMessage]:
    """Even turns call the weather tool, then answer; odd turns answer."""
    n = 0
    while True:
        if n % 3 == 0:
            yield AIMessage(
                content="",
                tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": f"lc-call-{n}"}],
                id=f"lc-ai-{n}",
            )
        else:
            yield AIMessage(
                content=f"lc answer {n}. " + filler * 2,
                id=f"lc-ai-{n}",
                response_metadata={"model_name": "gpt-4o", "finish_reason": "stop"},
            )
        n += 1


def _langchain_turns(
    history: FittedChatMessageHistory, model: Any, turns: range, filler: str
) -> list[BaseMessage]:
    """Run ``turns`` on the LangChain side; returns every message it wrote, as written."""

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"Snow and -3 degrees in {city}."

    written: list[BaseMessage] = []

    def add(message: BaseMessage) -> None:
        history.add_messages([message])
        written.append(message)

    for turn in turns:
        ask = "What is the weather in Oslo?" if turn % 2 == 0 else "Tell me more."
        add(
            HumanMessage(
                content=f"LangChain turn {turn}: {filler * 3} {ask}", id=f"lc-human-{turn}"
            )
        )
        reply = model.invoke(history.messages)
        add(reply)
        for call in reply.tool_calls:
            add(
                ToolMessage(
                    content=weather.invoke(call["args"]),
                    tool_call_id=call["id"],
                    name="weather",
                    id=f"lc-tool-{call['id']}",
                )
            )
            add(model.invoke(history.messages))
    return written


def _li_pairs_ok(messages: list[ChatMessage]) -> None:
    assert is_valid_chat(from_chat_messages(messages))


async def test_langchain_then_llamaindex_then_langchain(store_url: str, kit: Any) -> None:
    # 1. LangChain, large model: several turns with tool calls
    big = kit.langchain_model("gpt-4o", 100_000, list(_take(_langchain_replies(kit.filler), 40)))
    history = FittedChatMessageHistory(SESSION, model=big, store=store_url)
    history.add_messages([SystemMessage(content="You are a travel assistant.", id="lc-system")])
    written = [history.full_messages[0]]
    written += _langchain_turns(history, big, range(12), kit.filler)
    assert any(isinstance(m, ToolMessage) for m in written)
    history.close()

    # 2. LlamaIndex agent, smaller model: it sees the session fitted, and adds turns
    llm = kit.LlamaIndexModel(model_name="gpt-4o-mini", context_window=1_500, num_output=100)
    memory = SessionMigratorMemory.from_defaults(
        chat_store_key=SESSION, store=store_url, llm=llm, reserve_input=250
    )
    try:
        assert len(memory.get_all()) == len(written)
        fitted = memory.get()
        report = memory.last_report
        assert report is not None
        assert report.decision == "compressed"
        assert report.tokens_after <= report.budget
        _li_pairs_ok(fitted)
        assert fitted[0].content == "You are a travel assistant."
        assert fitted[-1].content == written[-1].content

        agent = FunctionAgent(tools=[kit.get_weather], llm=llm, system_prompt="Travel agent.")
        for ask in ["And the weather in Bergen?", "Thanks, anything else?", "weather again?"]:
            await agent.run(user_msg=f"LlamaIndex turn: {kit.filler} {ask}", memory=memory)
        for i in range(len(llm.received)):
            assert llm.sent_tokens(i) <= llm.input_budget
        moves = [(r.from_model, r.to_model) for r in memory.store.migrations(SESSION)]
        assert ("gpt-4o", "gpt-4o-mini") in moves
    finally:
        memory.close()

    # 3. LangChain reads it back: its own messages unchanged, LlamaIndex's turns with tool calls
    again = FittedChatMessageHistory(SESSION, model=big, store=store_url)
    try:
        full = again.full_messages
        assert full[: len(written)] == written
        assert [m.id for m in full[: len(written)]] == [m.id for m in written]
        added = full[len(written) :]
        assert len(added) >= 3 * 2 + 2
        calls = [m for m in added if isinstance(m, AIMessage) and m.tool_calls]
        assert calls
        assert calls[0].tool_calls[0]["name"] == "get_weather"
        assert calls[0].tool_calls[0]["args"] == {"city": "Bergen"}
        results = [m for m in added if isinstance(m, ToolMessage)]
        assert [r.tool_call_id for r in results] == [c.tool_calls[0]["id"] for c in calls]
        assert "Rain" in str(results[0].content)
        assert is_valid_chat(messages_to_core(full))
    finally:
        again.close()


async def test_llamaindex_then_langchain_then_llamaindex(store_url: str, kit: Any) -> None:
    # 1. LlamaIndex agent, large model, turns with tool calls
    llm = kit.LlamaIndexModel(model_name="gpt-4o", context_window=100_000, num_output=1_000)
    memory = SessionMigratorMemory.from_defaults(chat_store_key=SESSION, store=store_url, llm=llm)
    agent = FunctionAgent(tools=[kit.get_weather], llm=llm, system_prompt="Travel agent.")
    for turn in range(14):
        ask = "What is the weather there?" if turn % 3 == 0 else "Go on."
        await agent.run(user_msg=f"LlamaIndex turn {turn}: {kit.filler * 5} {ask}", memory=memory)
    before = memory.get_all()
    assert any(isinstance(b, ToolCallBlock) for m in before for b in m.blocks)
    memory.close()

    # 2. LangChain, small model: the history is fitted to it, and it adds turns with a tool call
    small = kit.langchain_model(
        "gpt-4o-mini", 1_500, list(_take(_langchain_replies(kit.filler), 20))
    )
    history = FittedChatMessageHistory(SESSION, model=small, store=store_url)
    try:
        fitted = history.messages
        report = history.last_report
        assert report is not None
        assert report.decision == "compressed"
        assert report.tokens_after <= report.budget
        assert is_valid_chat(messages_to_core(fitted))
        written = _langchain_turns(history, small, range(2), kit.filler)
        for sent in small.received:
            assert kit.counter.count_messages(messages_to_core(sent)) <= 1_500
    finally:
        history.close()

    # 3. LlamaIndex reads it back: its own messages unchanged, LangChain's with tool calls paired
    memory = SessionMigratorMemory.from_defaults(chat_store_key=SESSION, store=store_url, llm=llm)
    try:
        full = memory.get_all()
        assert full[: len(before)] == before
        added = full[len(before) :]
        assert len(added) == len(written)
        calls = [b for m in added for b in m.blocks if isinstance(b, ToolCallBlock)]
        assert [c.tool_call_id for c in calls] == ["lc-call-0"]
        assert calls[0].tool_kwargs == {"city": "Oslo"}
        results = [m for m in added if m.role.value == "tool"]
        assert [r.additional_kwargs["tool_call_id"] for r in results] == ["lc-call-0"]
        assert "Snow" in (results[0].content or "")
        _li_pairs_ok(full)
        # and the stored LangChain records are untouched by LlamaIndex's reading
        stored_ids = [m.id for m in memory.store.load(SESSION)][len(before) :]
        assert stored_ids == [m.id for m in written]
    finally:
        memory.close()


def _take(items: Iterator[AIMessage], n: int) -> Iterator[AIMessage]:
    for _ in range(n):
        yield next(items)


PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw"
    "AAAABJRU5ErkJggg=="
)
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
PDF = "JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PD4+CmVuZG9iagp0cmFpbGVyCjw8Pj4KJSVFT0YK"


def test_media_blocks_cross_between_the_frameworks(store_url: str) -> None:
    """LangChain's standard image, audio and file blocks reach a LlamaIndex model as its own
    blocks, and LlamaIndex's audio and document blocks reach a LangChain model as blocks the
    OpenAI format takes (the data unchanged both ways)."""
    from langchain_core.messages import convert_to_openai_messages
    from llama_index.core.base.llms.types import AudioBlock, DocumentBlock, ImageBlock, TextBlock

    content: list[Any] = [
        {"type": "text", "text": "What is in these?"},
        {"type": "image", "base64": PNG, "mime_type": "image/png"},
        {"type": "image", "url": "https://example.com/a.png"},
        {"type": "image", "source_type": "base64", "data": PNG, "mime_type": "image/png"},
        {"type": "audio", "base64": WAV, "mime_type": "audio/wav"},
        {"type": "file", "base64": PDF, "mime_type": "application/pdf", "filename": "a.pdf"},
    ]
    lc = FittedChatMessageHistory("media", store=store_url)
    lc.add_messages([HumanMessage(content, id="u0"), AIMessage("Noted.", id="a0")])
    li = SessionMigratorMemory.from_defaults(chat_store_key="media", store=store_url)
    blocks = li.get_all()[0].blocks
    assert [type(b) for b in blocks] == [
        TextBlock, ImageBlock, ImageBlock, ImageBlock, AudioBlock, DocumentBlock
    ]  # fmt: skip
    image, linked, old_style, audio, document = blocks[1:]
    assert isinstance(image, ImageBlock)
    assert image.image is not None
    assert image.image.decode() == PNG
    assert isinstance(linked, ImageBlock)
    assert str(linked.url) == "https://example.com/a.png"
    assert isinstance(old_style, ImageBlock)
    assert old_style.image_mimetype == "image/png"
    assert isinstance(audio, AudioBlock)
    assert audio.format == "wav"
    assert audio.audio is not None
    assert audio.audio.decode() == WAV
    assert isinstance(document, DocumentBlock)
    assert document.title == "a.pdf"
    assert document.data is not None
    assert document.data.decode() == PDF
    assert lc.full_messages[0].content == content  # LangChain reads its own blocks back as sent

    li.put(
        ChatMessage(
            role="user",
            blocks=[
                TextBlock(text="And these?"),
                AudioBlock(audio=WAV.encode(), format="wav"),
                DocumentBlock(
                    data=PDF.encode(), document_mimetype="application/pdf", title="b.pdf"
                ),
            ],
        )
    )
    sent = convert_to_openai_messages(lc.full_messages[-1:])
    assert isinstance(sent, list)
    parts = sent[0]["content"]
    assert [p["type"] for p in parts] == ["text", "input_audio", "file"]
    assert parts[1]["input_audio"] == {"data": WAV, "format": "wav"}
    assert parts[2]["file"]["file_data"] == f"data:application/pdf;base64,{PDF}"
    assert parts[2]["file"]["filename"] == "b.pdf"
    assert li.get_all()[-1].blocks[1:] == [
        AudioBlock(audio=WAV.encode(), format="wav"),
        DocumentBlock(data=PDF.encode(), document_mimetype="application/pdf", title="b.pdf"),
    ]  # LlamaIndex reads its own blocks back exactly
    lc.close()
    li.store.close()
