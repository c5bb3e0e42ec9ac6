"""ChatOpenAI(base_url=...) and init_chat_model("openai:...", base_url=...) at self-hosted
servers (vLLM, SGLang, TGI, llama.cpp's server, LM Studio): the window is the server's, asked
once.

A model the table does not know at all (``my-finetune``) and one it knows with a far larger
window (``meta-llama/Llama-3.1-8B-Instruct``, 131k in the table, served here with 6,144) are
both fitted to what the server says; the unguarded request is refused with the server's own 400.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain.chat_models import init_chat_model
from langchain_openai import ChatOpenAI

from langchain_session_migrator import FitToModel
from tests.conformance._lc import CALLS, answer_text, ask_through_history, lc_messages, run
from tests.conformance._serving_api import RUNTIMES, ServingEmulator
from tests.conformance.conftest import assert_conforms, guard_note

SOURCES = {
    "vllm": "vllm:/v1/models",
    "sglang": "sglang:/v1/models",
    "tgi": "tgi:/info",
    "llama.cpp": "llama.cpp:/props",
    "lmstudio": "lmstudio:/api/v0/models",
}
REFUSALS = {
    "vllm": "This model's maximum context length is 6144 tokens",
    "sglang": "exceeds the model's maximum context length of 6144 tokens",
    "tgi": "must be <= 6144",
    "llama.cpp": "exceed_context_size_error",
    "lmstudio": "loaded with context length of only 6144 tokens",
}


@pytest.fixture(params=RUNTIMES)
def server(request: pytest.FixtureRequest) -> Iterator[ServingEmulator]:
    emulator = ServingEmulator(request.param, "meta-llama/Llama-3.1-8B-Instruct", 6144).start()
    try:
        yield emulator
    finally:
        emulator.stop()


def _chat(server: ServingEmulator, how: str) -> object:
    if how == "init_chat_model":
        return init_chat_model(f"openai:{server.model.name}", base_url=server.base_url, api_key="t")
    return ChatOpenAI(model=server.model.name, base_url=server.base_url, api_key="t")  # type: ignore[arg-type]


@pytest.mark.parametrize("how", ["ChatOpenAI", "init_chat_model"])
@pytest.mark.parametrize("call", CALLS)
def test_fitted_to_the_served_window(
    server: ServingEmulator, long_thread: tuple[tuple[str, str], ...], call: str, how: str
) -> None:
    guard = FitToModel(_chat(server, how))
    found = guard.window(guard.model)
    assert (found.context_window, found.source) == (6144, SOURCES[server.runtime])
    out = run(guard, call, lc_messages(long_thread))
    assert answer_text(out), guard_note(guard)
    assert_conforms(server)


def test_unguarded_is_refused_with_the_servers_message(
    server: ServingEmulator, long_thread: tuple[tuple[str, str], ...]
) -> None:
    with pytest.raises(Exception, match=r"400|422"):
        _chat(server, "ChatOpenAI").invoke(lc_messages(long_thread))  # type: ignore[attr-defined]
    assert REFUSALS[server.runtime] in str(server.refusals[-1].error), server.report()


@pytest.mark.filterwarnings("ignore::langchain_core._api.deprecation.LangChainDeprecationWarning")
def test_the_history_fits_the_served_window(
    server: ServingEmulator, long_thread: tuple[tuple[str, str], ...]
) -> None:
    """``FittedChatMessageHistory(model=ChatOpenAI(base_url=...))`` in a
    ``RunnableWithMessageHistory`` chain: fitted to the window the server serves."""
    from langchain_session_migrator import FittedChatMessageHistory

    model = _chat(server, "ChatOpenAI")
    history = FittedChatMessageHistory(f"serving-{server.runtime}", model=model, store="memory://")
    history.add_messages(lc_messages(long_thread)[1:-1])
    out = ask_through_history(model, history)
    assert answer_text(out)
    assert history.model is not None
    assert history.model.context_window == 6144
    assert not server.refusals, server.report()


def test_the_agent_middleware_fits_the_served_window(
    server: ServingEmulator, long_thread: tuple[tuple[str, str], ...]
) -> None:
    """``create_agent`` + ``FitToModelMiddleware`` on ``init_chat_model("openai:...",
    base_url=...)``: a tool call and the final answer, both inside the served window."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    from langchain_session_migrator import FitToModelMiddleware
    from tests.conformance._http import Calls, Text

    @tool
    def status(ticket: str) -> str:
        """The ticket's status."""
        return f"{ticket}: closed"

    server.script(Calls.one("status", ticket="T-9"), Text("T-9 is closed."))
    agent = create_agent(
        _chat(server, "init_chat_model"), tools=[status], middleware=[FitToModelMiddleware()]
    )
    state = agent.invoke({"messages": lc_messages(long_thread)[1:]})
    assert answer_text(state["messages"][-1]) == "T-9 is closed."
    assert_conforms(server, at_least=2)
