"""Deeply nested content is refused where it comes in, naming the message and the field, never a
bare RecursionError (from json.dumps, deepcopy or a framework's serialiser further on)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from session_migrator import (
    ContentPart,
    InvalidMessageError,
    Message,
    ToolCall,
    check_nesting,
    messages_from_openai,
    open_store,
)
from session_migrator.cli import main

DEPTH = 1_000


def deep_dict(depth: int = DEPTH) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"k": value}
    return value


def deep_list(depth: int = DEPTH) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"role": "user", "content": [{"type": "input_x", "x": deep_dict()}]}, "content"),
        ({"role": "user", "content": deep_list()}, "content"),
        ({"role": "user", "content": "hi", "metadata": deep_dict()}, "metadata"),
        (
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": deep_dict()},
                    }
                ],
            },
            "tool_calls",
        ),
    ],
)
def test_messages_from_openai_names_the_message_and_the_field(
    message: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidMessageError) as caught:
        messages_from_openai([{"role": "user", "content": "hello"}, message])
    assert (caught.value.index, caught.value.field) == (1, field)
    assert "nested deeper than 100 levels" in str(caught.value)


def test_a_message_made_directly_is_refused_before_it_reaches_migrate_or_a_store() -> None:
    cases = [
        lambda: Message("user", "hi", id="m1", extra={"x": deep_dict()}),
        lambda: Message("user", (ContentPart("input_x", data={"x": deep_dict()}),), id="m1"),
        lambda: ToolCall("c1", "f", {"a": deep_dict()}),  # type: ignore[arg-type]
        lambda: ToolCall("c1", "f", "[" * DEPTH + "]" * DEPTH),
    ]
    for make in cases:
        with pytest.raises(InvalidMessageError, match="nested deeper than 100 levels"):
            make()
    with pytest.raises(InvalidMessageError, match="message 'm1'"):
        cases[0]()
    fine = Message("user", "hi", extra={"x": deep_dict(50)})  # what real data nests: kept
    with open_store("memory://") as store:
        store.append("s", [fine])
        assert store.load("s")[0].extra == fine.extra


def test_check_nesting_walks_without_recursion_and_sees_cycles() -> None:
    check_nesting(deep_dict(99), field="x")
    with pytest.raises(InvalidMessageError):
        check_nesting(deep_dict(100_000), field="x")
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(InvalidMessageError):
        check_nesting(loop, field="x")
    # brackets inside JSON strings are text, not nesting
    ToolCall("c1", "f", json.dumps({"q": "[" * 500}))


@pytest.mark.parametrize("depth", [400, 5_000])
def test_the_cli_prints_one_line_no_traceback(
    depth: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 400 levels parse as JSON and are refused by the check; 5,000 are past the parser's limit
    path = tmp_path / "deep.json"
    path.write_text(
        '[{"role": "user", "content": [{"type": "x", "x": ' + "[" * depth + "]" * depth + "}]}]",
        encoding="utf-8",
    )
    assert main(["migrate", str(path), "--to", "gpt-4o"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.count("\n") == 1
    assert "nested" in err


def test_the_mcp_tools_answer_an_argument_error() -> None:
    from session_migrator.mcp_server import ArgumentError, SessionTools

    tools = SessionTools(store="memory://")
    try:
        for depth in (400, 5_000):
            text = '[{"role": "user", "content": "hi", "x": ' + "[" * depth + "]" * depth + "}]"
            with pytest.raises(ArgumentError, match="nested"):
                tools.migrate_session(text, "gpt-4o")
            with pytest.raises(ArgumentError, match="nested"):
                tools.session_append("s", text)
    finally:
        tools.close()


def test_the_langchain_conversion_refuses_it() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_session_migrator import messages_to_core

    cases = [
        (HumanMessage("hi", id="h1", additional_kwargs={"x": deep_dict()}), "additional_kwargs"),
        (HumanMessage([{"type": "x", "x": deep_dict()}], id="h1"), "content"),
        (
            AIMessage(
                "", id="h1", tool_calls=[{"id": "c", "name": "f", "args": {"a": deep_dict()}}]
            ),
            "tool_calls",
        ),
    ]
    for message, field in cases:
        with pytest.raises(InvalidMessageError) as caught:
            messages_to_core([message])
        assert caught.value.field == field
        assert "'h1'" in str(caught.value)


def test_the_llamaindex_conversion_refuses_it() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.llms import ChatMessage

    from llamaindex_session_migrator import SessionMigratorMemory

    memory = SessionMigratorMemory.from_defaults(chat_store_key="s", store="memory://")
    message = ChatMessage(role="user", content="hi", additional_kwargs={"x": deep_dict()})
    with pytest.raises(InvalidMessageError) as caught:
        memory.put(message)
    assert caught.value.field == "additional_kwargs"
    assert memory.get_all() == []
