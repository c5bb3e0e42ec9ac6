"""ChatOllama (langchain-ollama) on the Ollama emulator, which cuts a long prompt silently.

The window is the runtime's: ``num_ctx`` when the class sets it, else what the server says
(``/api/ps``, ``/api/show``: a Modelfile's ``num_ctx``, else the server's default), never the
table's 131k for llama3.1:8b. Each guarded cell sends nothing the server cuts; the unguarded
request is cut (the cell can fail).
"""

from __future__ import annotations

import pytest
from langchain_ollama import ChatOllama

from langchain_session_migrator import FitToModel
from tests.conformance._lc import CALLS, answer_text, ask_through_history, lc_messages, run
from tests.conformance._ollama_api import OllamaEmulator
from tests.conformance.conftest import assert_conforms, guard_note

MODEL = "llama3.1:8b"


def _ollama(url: str, **kwargs: object) -> ChatOllama:
    return ChatOllama(model=MODEL, base_url=url, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("call", CALLS)
def test_num_ctx_is_the_window(
    ollama_api: OllamaEmulator, long_thread: tuple[tuple[str, str], ...], call: str
) -> None:
    guard = FitToModel(_ollama(ollama_api.url, num_ctx=4096))
    assert guard.window(guard.model).source == "class:ChatOllama.num_ctx"
    out = run(guard, call, lc_messages(long_thread))
    assert answer_text(out), guard_note(guard)
    assert_conforms(ollama_api)
    assert all(r.body["options"]["num_ctx"] == 4096 for r in ollama_api.requests)
    assert ollama_api.probes == [], "the class said the window: the server is not asked"


def test_unguarded_is_cut_silently(
    ollama_api: OllamaEmulator, long_thread: tuple[tuple[str, str], ...]
) -> None:
    out = _ollama(ollama_api.url, num_ctx=4096).invoke(lc_messages(long_thread))
    assert answer_text(out)  # no error reaches the user
    assert ollama_api.refusals, ollama_api.report()
    assert ollama_api.cut[0][0]["role"] == "system", "the system prompt goes first"
    assert out.response_metadata["prompt_eval_count"] <= 4096


@pytest.mark.parametrize(
    ("modelfile_ctx", "window", "source"),
    [(None, 4096, "ollama:/api/show+default"), (8192, 8192, "ollama:/api/show")],
)
def test_server_says_when_the_class_does_not(
    long_thread: tuple[tuple[str, str], ...], modelfile_ctx: int | None, window: int, source: str
) -> None:
    api = OllamaEmulator(modelfile_ctx=modelfile_ctx).start()
    try:
        guard = FitToModel(_ollama(api.url))
        found = guard.window(guard.model)
        assert (found.context_window, found.source) == (window, source)
        for _ in range(2):
            assert answer_text(guard.invoke(lc_messages(long_thread))), guard_note(guard)
        assert_conforms(api, at_least=2)
        assert api.probes == ["/api/ps", "/api/show"], "asked once, then cached"
    finally:
        api.stop()


def test_loaded_model_reports_its_window(long_thread: tuple[tuple[str, str], ...]) -> None:
    api = OllamaEmulator().start()
    api.loaded[MODEL] = 2048  # loaded (e.g. by another client) with a smaller num_ctx
    try:
        guard = FitToModel(_ollama(api.url))
        assert guard.window(guard.model).source == "ollama:/api/ps"
        assert answer_text(guard.invoke(lc_messages(long_thread)))
        assert api.probes == ["/api/ps"]
    finally:
        api.stop()


@pytest.mark.parametrize("call", ["invoke", "stream"])
def test_silent_cut_is_caught_and_fitted_from_then_on(
    long_thread: tuple[tuple[str, str], ...], call: str
) -> None:
    api = OllamaEmulator().start()
    api.says_window = False  # nothing to ask: the table's 131k for llama3.1:8b is all there is
    try:
        guard = FitToModel(_ollama(api.url))
        assert guard.window(guard.model).context_window > 100_000
        with pytest.warns(RuntimeWarning, match=r"cut the prompt silently\. Fitting to [\d,]+"):
            run(guard, call, lc_messages(long_thread))
        assert api.refusals, "the first request was cut (what the guard detects)"
        narrowed_to = guard.window(guard.model)
        assert narrowed_to.max_input_tokens <= 4096
        assert "+read:" in narrowed_to.source
        api.clear()
        for _ in range(2):
            assert answer_text(run(guard, call, lc_messages(long_thread)))
        assert not api.refusals, api.report()
    finally:
        api.stop()


@pytest.mark.filterwarnings("ignore::langchain_core._api.deprecation.LangChainDeprecationWarning")
def test_the_history_fits_the_window_ollama_runs(
    ollama_api: OllamaEmulator, long_thread: tuple[tuple[str, str], ...]
) -> None:
    """``FittedChatMessageHistory`` in a ``RunnableWithMessageHistory`` chain with ChatOllama:
    the history is fitted to ``num_ctx``, not to the table's window, and the server cuts
    nothing."""
    from langchain_session_migrator import FittedChatMessageHistory

    model = _ollama(ollama_api.url, num_ctx=4096)
    history = FittedChatMessageHistory("ollama", model=model, store="memory://")
    history.add_messages(lc_messages(long_thread)[1:-1])
    out = ask_through_history(model, history)
    assert answer_text(out)
    assert history.model is not None
    assert history.model.context_window == 4096
    assert history.last_report.decision == "compressed"
    assert not ollama_api.refusals, ollama_api.report()  # (Ollama's "refusal": a silent cut)


def test_the_agent_middleware_catches_a_silent_cut(
    long_thread: tuple[tuple[str, str], ...],
) -> None:
    """``create_agent`` with ``FitToModelMiddleware`` and ChatOllama whose window no one says:
    the first reply reads fewer prompt tokens than were sent; the middleware warns and fits the
    next calls to what the server read."""
    from langchain.agents import create_agent

    from langchain_session_migrator import FitToModelMiddleware

    api = OllamaEmulator().start()
    api.says_window = False
    try:
        middleware = FitToModelMiddleware()
        agent = create_agent(_ollama(api.url), [], middleware=[middleware])
        messages = lc_messages(long_thread)
        with pytest.warns(RuntimeWarning, match=r"cut the prompt silently"):
            agent.invoke({"messages": messages})
        assert api.refusals, "the first request was cut (what the middleware detects)"
        assert middleware.window(_ollama(api.url)).max_input_tokens <= 4096
        api.clear()
        agent.invoke({"messages": messages})
        assert not api.refusals, api.report()
    finally:
        api.stop()
