"""LangChain chains on the OpenAI emulator: where ``max_tokens`` is set x how the model is called.

gpt-4 (8,192 tokens, input plus output), a 120-turn thread of about 20,000 tokens, the guard as
docs/langchain.md shows it (``FitToModel`` at the model). Each cell runs the request guarded
(no refusal, the answer returned) and unguarded (refused for its length: the cell can fail).

What langchain-openai sends, as recorded here (``test_what_chatopenai_sends``):
``ChatOpenAI(max_tokens=N)``, ``max_completion_tokens=N``, ``.bind(max_tokens=N)`` and
``invoke(..., max_tokens=N)`` all send ``max_completion_tokens: N`` (never ``max_tokens``);
unset sends neither; ``stream`` adds ``stream: true``, and ``stream_options:
{"include_usage": true}`` only with ``stream_usage=True`` (off by default with a ``base_url``);
the key goes as ``Authorization: Bearer``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest
from langchain.chat_models import init_chat_model
from langchain_core.runnables import ConfigurableField, Runnable
from langchain_openai import ChatOpenAI

from langchain_session_migrator import FitToModel
from tests.conformance._lc import CALLS, answer_text, lc_messages, run
from tests.conformance._openai_api import OpenAIEmulator
from tests.conformance.conftest import (
    assert_conforms,
    assert_refused_without_guard,
    guard_note,
)

Model = Runnable[Any, Any]
# name -> (build(base_url) -> the model as the user configures it, call kwargs, config)
Setup = tuple[Callable[[str], Model], dict[str, Any], dict[str, Any] | None]


def _openai(url: str, model: str = "gpt-4", **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(model=model, base_url=url, api_key="test", **kwargs)  # type: ignore[arg-type]


def _configurable(url: str) -> Model:
    return init_chat_model(
        "openai:gpt-4o-mini",
        configurable_fields=("model", "max_tokens"),
        base_url=url,
        api_key="test",
    )


def _alternatives(url: str) -> Model:
    return _openai(url, "gpt-4o-mini").configurable_alternatives(
        ConfigurableField(id="llm"), default_key="mini", gpt4=_openai(url, max_tokens=2000)
    )


SETUPS: dict[str, Setup] = {
    "unset": (lambda url: _openai(url), {}, None),
    "class max_tokens=4096": (lambda url: _openai(url, max_tokens=4096), {}, None),
    "class max_completion_tokens=3000": (
        lambda url: _openai(url, max_completion_tokens=3000),
        {},
        None,
    ),
    "init_chat_model openai:gpt-4": (
        lambda url: init_chat_model("openai:gpt-4", base_url=url, api_key="test"),
        {},
        None,
    ),
    "bound .bind(max_tokens=4096)": (lambda url: _openai(url).bind(max_tokens=4096), {}, None),
    "per call max_tokens=4096": (lambda url: _openai(url), {"max_tokens": 4096}, None),
    "configurable_fields model+max_tokens": (
        _configurable,
        {},
        {"configurable": {"model": "gpt-4", "max_tokens": 2000}},
    ),
    "configurable_alternatives gpt4 max_tokens=2000": (
        _alternatives,
        {},
        {"configurable": {"llm": "gpt4"}},
    ),
}


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("setup", list(SETUPS))
def test_guarded_request_fits_gpt4(
    openai_api: OpenAIEmulator, long_thread: Any, setup: str, call: str
) -> None:
    build, kwargs, config = SETUPS[setup]
    messages = lc_messages(long_thread)

    openai_api.script()  # default answers
    unguarded = build(openai_api.base_url)
    with pytest.raises(openai.BadRequestError):
        run(unguarded, "invoke", messages, config, **kwargs)
    assert_refused_without_guard(openai_api)
    openai_api.clear()

    guarded = FitToModel(build(openai_api.base_url))
    try:
        answer = run(guarded, call, messages, config, **kwargs)
    except Exception as exc:
        note = f"{guard_note(guarded)}\n{openai_api.report()}"
        raise AssertionError(f"{type(exc).__name__}: {exc}\n{note}") from exc
    assert_conforms(openai_api)
    assert answer_text(answer) == "Short answer.", openai_api.report()
    assert all(r.body["model"] == "gpt-4" for r in openai_api.requests), openai_api.report()


def test_what_chatopenai_sends(openai_api: OpenAIEmulator) -> None:
    """The fields each configuration puts in the body (the docstring's list), short history."""
    url, hello = openai_api.base_url, "Hello!"
    _openai(url).invoke(hello)
    _openai(url, max_tokens=4096).invoke(hello)
    _openai(url).bind(max_tokens=4096).invoke(hello)
    list(_openai(url).stream(hello))
    streamed = list(_openai(url, stream_usage=True).stream(hello))
    bodies = [r.body for r in openai_api.requests]
    assert "max_tokens" not in bodies[0]
    assert "max_completion_tokens" not in bodies[0]
    assert bodies[1].get("max_completion_tokens") == 4096
    assert bodies[2].get("max_completion_tokens") == 4096
    assert not any("max_tokens" in b for b in bodies)
    assert bodies[3]["stream"] is True
    assert "stream_options" not in bodies[3]
    assert bodies[4].get("stream_options") == {"include_usage": True}
    usage = [c.usage_metadata for c in streamed if c.usage_metadata]
    assert usage, "the final usage chunk was not read"
    assert usage[0]["input_tokens"] == openai_api.requests[4].prompt_tokens
    assert openai_api.requests[0].headers["authorization"] == "Bearer test"
