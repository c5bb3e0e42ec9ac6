"""LangChain chains on the OpenAI emulator: tools and structured-output schemas, however they
arrive at the guard.

gpt-4 with ``max_tokens`` unset (the emulator then checks the prompt alone against 8,192), a
120-turn thread (for json_schema, which langchain-openai does not send to gpt-4: gpt-4o-mini
and a thread over its 128,000 window), twelve tools of about 3,500 tokens of schemas
(``_lc.TOOLS``) or a schema of about 600 (``_lc.Report``): a guard that does not count what is
bound sends it over the window.

What langchain-openai sends: ``bind_tools`` and ``.bind(tools=...)`` put ``tools`` in the body;
``with_structured_output`` sends, by method, ``tools`` + a forced ``tool_choice``
(function_calling), ``response_format: {"type": "json_schema", ...}`` (json_schema) or
``{"type": "json_object"}`` (json_mode, which OpenAI accepts only with the word "json" in the
messages: the emulator checks that too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai import ChatOpenAI

from langchain_session_migrator import FitToModel
from tests.conformance._http import Calls, Json, Reply, Text
from tests.conformance._lc import REPORT, TOOLS, Report, lc_messages
from tests.conformance._openai_api import OpenAIEmulator
from tests.conformance.conftest import assert_conforms, assert_refused_without_guard, guard_note

Model = Runnable[Any, Any]
DICTS = [convert_to_openai_tool(t) for t in TOOLS]
JSON_QUESTION = "Answer in JSON with the fields of the report: what is the next step?"


def _llm(url: str, model: str = "gpt-4") -> ChatOpenAI:
    return ChatOpenAI(model=model, base_url=url, api_key="test")  # type: ignore[call-arg]


def _structured(method: str, *, include_raw: bool = False) -> Callable[[ChatOpenAI], Model]:
    def build(llm: ChatOpenAI) -> Model:
        schema: Any = Report
        return llm.with_structured_output(schema, method=method, include_raw=include_raw)  # type: ignore[arg-type]

    return build


# name -> (the unguarded runnable, the guarded one, call kwargs, the scripted reply, check)
Cell = tuple[
    Callable[[ChatOpenAI], Model],
    Callable[[ChatOpenAI], Model],
    dict[str, Any],
    Reply,
    Callable[[Any], bool],
]


def _is_report(x: Any) -> bool:
    return isinstance(x, Report) and x.next_step == REPORT["next_step"]


def _text(x: Any) -> bool:
    return getattr(x, "content", None) == "Short answer."


CELLS: dict[str, Cell] = {
    "no tools": (lambda m: m, FitToModel, {}, Text(), _text),
    "guard.bind_tools": (
        lambda m: m.bind_tools(TOOLS),
        lambda m: FitToModel(m).bind_tools(TOOLS),
        {},
        Text(),
        _text,
    ),
    "FitToModel(llm.bind_tools)": (
        lambda m: m.bind_tools(TOOLS),
        lambda m: FitToModel(m.bind_tools(TOOLS)),
        {},
        Text(),
        _text,
    ),
    "guard.bind(tools=)": (
        lambda m: m.bind(tools=DICTS),
        lambda m: FitToModel(m).bind(tools=DICTS),
        {},
        Text(),
        _text,
    ),
    "call kwarg tools=": (lambda m: m, FitToModel, {"tools": DICTS}, Text(), _text),
    "structured function_calling": (
        _structured("function_calling"),
        lambda m: FitToModel(m).with_structured_output(Report, method="function_calling"),
        {},
        Calls.one("Report", **REPORT),
        _is_report,
    ),
    "FitToModel(llm.with_structured_output)": (
        _structured("function_calling"),
        lambda m: FitToModel(_structured("function_calling")(m)),
        {},
        Calls.one("Report", **REPORT),
        _is_report,
    ),
    "structured json_schema": (
        _structured("json_schema"),
        lambda m: FitToModel(m).with_structured_output(Report, method="json_schema"),
        {},
        Json(REPORT),
        _is_report,
    ),
    "structured json_mode": (
        _structured("json_mode"),
        lambda m: FitToModel(m).with_structured_output(Report, method="json_mode"),
        {},
        Json(REPORT),
        _is_report,
    ),
    "structured include_raw=True": (
        _structured("function_calling", include_raw=True),
        lambda m: FitToModel(m).with_structured_output(
            Report, method="function_calling", include_raw=True
        ),
        {},
        Calls.one("Report", **REPORT),
        lambda x: isinstance(x, dict) and _is_report(x.get("parsed")) and x["raw"] is not None,
    ),
}


WITH_TOOLS = {"guard.bind_tools", "FitToModel(llm.bind_tools)", "guard.bind(tools=)"}
WITH_TOOLS.add("call kwarg tools=")


@pytest.mark.parametrize("cell", list(CELLS))
def test_tools_and_schemas_are_counted(
    openai_api: OpenAIEmulator, long_thread: Any, claude_thread: Any, cell: str
) -> None:
    unguarded, guarded_of, kwargs, reply, check = CELLS[cell]
    model, turns = (
        ("gpt-4o-mini", claude_thread) if "json_schema" in cell else ("gpt-4", long_thread)
    )
    messages = lc_messages(turns, JSON_QUESTION)

    with pytest.raises(openai.BadRequestError):
        unguarded(_llm(openai_api.base_url, model)).invoke(messages, **kwargs)
    assert_refused_without_guard(openai_api)
    openai_api.clear()

    openai_api.script(reply)
    guarded = guarded_of(_llm(openai_api.base_url, model))
    try:
        answer = guarded.invoke(messages, **kwargs)
    except Exception as exc:
        note = f"{guard_note(guarded)}\n{openai_api.report()}"
        raise AssertionError(f"{type(exc).__name__}: {exc}\n{note}") from exc
    assert_conforms(openai_api)
    assert check(answer), f"{answer!r}\n{openai_api.report()}"
    body = openai_api.requests[-1].body
    if cell in WITH_TOOLS:
        assert len(body.get("tools", [])) == len(TOOLS), "the tools were not sent"


def test_structured_output_bodies(openai_api: OpenAIEmulator) -> None:
    """What each structured-output method puts in the body (the module docstring's list)."""
    llm = _llm(openai_api.base_url, "gpt-4o-mini")
    openai_api.script(Calls.one("Report", **REPORT), Json(REPORT), Json(REPORT))
    for method in ("function_calling", "json_schema", "json_mode"):
        _structured(method)(llm).invoke(JSON_QUESTION)
    calls, schema, mode = (r.body for r in openai_api.requests)
    assert calls["tools"][0]["function"]["name"] == "Report"
    assert calls["tool_choice"]["function"]["name"] == "Report"
    assert schema["response_format"]["type"] == "json_schema"
    assert mode["response_format"] == {"type": "json_object"}
    assert_conforms(openai_api, at_least=3)
