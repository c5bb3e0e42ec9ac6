"""Azure OpenAI: ``AzureChatOpenAI(azure_deployment=...)`` at a loopback emulator of Azure's
data plane (``POST /openai/deployments/{deployment}/chat/completions?api-version=...``, the key
in ``api-key``), which answers as OpenAI's API does for the model the deployment runs.

A deployment's name is its owner's (``prod-chat``), not a model's: the guard is fitted to the
model the user names (``model="gpt-4"``), and without one it refuses with what to add rather
than guess (``tests/adapters/langchain/test_lc_api.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_openai import AzureChatOpenAI

from langchain_session_migrator import FitToModel
from tests.conformance._http import Answer, Recorded, Refusal
from tests.conformance._lc import answer_text, lc_messages, run
from tests.conformance._openai_api import OpenAIEmulator
from tests.conformance.conftest import (
    assert_conforms,
    assert_refused_without_guard,
    guard_note,
)

DEPLOYMENTS = {"prod-chat": "gpt-4"}


class AzureEmulator(OpenAIEmulator):
    """Azure OpenAI's chat completions route: the deployment names the model."""

    def handle(
        self, path: str, headers: dict[str, str], body: dict[str, Any], rec: Recorded
    ) -> Answer:
        found = re.fullmatch(r"/openai/deployments/([^/]+)/chat/completions/?", path)
        if found is None or found[1] not in DEPLOYMENTS:
            raise Refusal(404, {"error": {"code": "DeploymentNotFound", "message": path}})
        if not headers.get("api-key"):
            raise Refusal(401, {"error": {"code": "401", "message": "Access denied"}})
        body["model"] = DEPLOYMENTS[found[1]]
        return super().handle("/v1/chat/completions", headers, body, rec)


@pytest.fixture
def azure_api() -> Iterator[AzureEmulator]:
    emulator = AzureEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()


def _azure(url: str, **kwargs: Any) -> AzureChatOpenAI:
    return AzureChatOpenAI(  # type: ignore[call-arg]
        azure_endpoint=url,
        azure_deployment="prod-chat",
        api_version="2024-10-21",
        api_key="test",  # type: ignore[arg-type]
        **kwargs,
    )


@pytest.mark.parametrize("call", ["invoke", "astream"])
def test_a_deployment_is_fitted_to_the_model_it_runs(
    azure_api: AzureEmulator, long_thread: tuple[tuple[str, str], ...], call: str
) -> None:
    guard = FitToModel(_azure(azure_api.url, model="gpt-4"))
    assert guard.window(guard.model).context_window == 8_192
    assert answer_text(run(guard, call, lc_messages(long_thread))), guard_note(guard)
    assert_conforms(azure_api)


def test_unguarded_the_deployment_refuses(
    azure_api: AzureEmulator, long_thread: tuple[tuple[str, str], ...]
) -> None:
    with pytest.raises(Exception, match="400"):
        _azure(azure_api.url, model="gpt-4").invoke(lc_messages(long_thread))
    assert_refused_without_guard(azure_api)


def test_the_history_fits_a_deployment(
    azure_api: AzureEmulator, long_thread: tuple[tuple[str, str], ...]
) -> None:
    from langchain_session_migrator import FittedChatMessageHistory
    from tests.conformance._lc import ask_through_history

    model = _azure(azure_api.url, model="gpt-4")
    history = FittedChatMessageHistory("azure", model=model, store="memory://")
    history.add_messages(lc_messages(long_thread)[1:-1])
    assert answer_text(ask_through_history(model, history))
    assert not azure_api.refusals, azure_api.report()
