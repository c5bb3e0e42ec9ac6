"""LangChain chains on the Anthropic emulator: ``ChatAnthropic`` and ``init_chat_model`` guarded by
``FitToModel``, on a 120-turn thread over 200,000 estimated Claude tokens.

The window rules differ by model: since Claude 3.7, ``input + max_tokens <= 200,000``; Claude 3
(haiku) checks the input alone. What langchain-anthropic sends, as recorded here: always a
``max_tokens`` (unset, it is the model profile's maximum output, else 4,096 for a name its
profiles do not know, as these dated names), the system prompt as the top-level ``system``, the
key as ``x-api-key`` or ``Authorization``, ``anthropic-version``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import pytest
from langchain.chat_models import init_chat_model
from langchain_anthropic import ChatAnthropic
from langchain_core.runnables import Runnable

from langchain_session_migrator import FitToModel
from tests.conformance._anthropic_api import AnthropicEmulator
from tests.conformance._http import Text
from tests.conformance._lc import TOOLS, lc_messages, run
from tests.conformance.conftest import assert_conforms, assert_refused_without_guard, guard_note

#: the older anthropic SDKs (make test-lowest) warn that the dated Claude models retire
_RETIRING = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
pytestmark = _RETIRING

Model = Runnable[Any, Any]


def _claude(url: str, model: str = "claude-3-7-sonnet-20250219", **kwargs: Any) -> ChatAnthropic:
    return ChatAnthropic(model=model, base_url=url, api_key="test", **kwargs)  # type: ignore[arg-type]


# name -> (the model as the user configures it, how the guard takes it, call)
CELLS: dict[str, tuple[Callable[[str], Model], Callable[[Model], Model], str]] = {
    "claude-3-7 default max_tokens invoke": (_claude, FitToModel, "invoke"),
    "claude-3-7 default max_tokens stream": (_claude, FitToModel, "stream"),
    "claude-3-7 default max_tokens astream": (_claude, FitToModel, "astream"),
    "claude-sonnet-4 max_tokens=64000 invoke": (
        lambda url: _claude(url, "claude-sonnet-4-20250514", max_tokens=64_000),
        FitToModel,
        "invoke",
    ),
    "claude-sonnet-4 .bind(max_tokens=64000) invoke": (
        lambda url: _claude(url, "claude-sonnet-4-20250514").bind(max_tokens=64_000),
        FitToModel,
        "invoke",
    ),
    "claude-3-haiku (no sum rule) invoke": (
        lambda url: _claude(url, "claude-3-haiku-20240307"),
        FitToModel,
        "invoke",
    ),
    "claude-3-7 guard.bind_tools invoke": (
        _claude,
        lambda m: FitToModel(m).bind_tools(TOOLS),
        "invoke",
    ),
    "init_chat_model anthropic:claude-3-7 invoke": (
        lambda url: init_chat_model(
            "anthropic:claude-3-7-sonnet-20250219", base_url=url, api_key="test"
        ),
        FitToModel,
        "invoke",
    ),
}


@pytest.mark.parametrize("cell", list(CELLS))
def test_guarded_request_fits_claude(
    anthropic_api: AnthropicEmulator, claude_thread: Any, cell: str
) -> None:
    build, guard, call = CELLS[cell]
    messages = lc_messages(claude_thread)

    with pytest.raises(anthropic.BadRequestError):
        build(anthropic_api.base_url).invoke(messages)
    assert_refused_without_guard(anthropic_api)
    anthropic_api.clear()

    anthropic_api.script(Text("Backfill first."))
    guarded = guard(build(anthropic_api.base_url))
    try:
        answer = run(guarded, call, messages)
    except Exception as exc:
        note = f"{guard_note(guarded)}\n{anthropic_api.report()}"
        raise AssertionError(f"{type(exc).__name__}: {exc}\n{note}") from exc
    assert_conforms(anthropic_api)
    assert "Backfill first." in str(answer.content), anthropic_api.report()
    body = anthropic_api.requests[-1].body
    assert isinstance(body.get("system"), str | list), "the system prompt was not sent as system"


def test_what_chatanthropic_sends(anthropic_api: AnthropicEmulator) -> None:
    url = anthropic_api.base_url
    _claude(url).invoke([("system", "Be brief."), ("user", "Hello!")])
    _claude(url, max_tokens=1000).invoke("Hello!")
    first, second = (r.body for r in anthropic_api.requests)
    assert isinstance(first["max_tokens"], int)
    assert first["max_tokens"] > 0
    assert first["system"] in ("Be brief.", [{"type": "text", "text": "Be brief."}])
    assert second["max_tokens"] == 1000
    assert "anthropic-version" in anthropic_api.requests[0].headers
    assert_conforms(anthropic_api, at_least=2)
