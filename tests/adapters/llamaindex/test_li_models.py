"""From a LlamaIndex LLM's metadata (or an event's model_dict) to a ModelWindow."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core.llms import MockLLM

from llamaindex_session_migrator import window_for, window_from_metadata
from session_migrator import UnknownModelError


def test_mock_llm_metadata_is_the_window() -> None:
    window = window_for(MockLLM(max_tokens=64))
    assert (window.context_window, window.max_input_tokens) == (3900, 3900 - 64)
    assert window.max_output_tokens == 64
    assert (window.source, window.tokenizer) == ("metadata", "other")


def test_negative_num_output_means_unknown() -> None:
    window = window_for(MockLLM())  # MockLLM reports num_output=-1
    assert window.max_output_tokens is None


def test_known_name_gives_the_tokenizer_and_metadata_the_window(
    make_llm: Callable[..., Any],
) -> None:
    window = window_for(make_llm(model_name="gpt-4o-mini", context_window=5000, num_output=300))
    assert (window.context_window, window.max_input_tokens, window.max_output_tokens) == (
        5000,
        5000 - 300,
        300,
    )
    assert (window.tokenizer, window.source, window.provider) == (
        "o200k_base",
        "metadata",
        "openai",
    )


def test_same_window_as_bundled_keeps_the_input_cap() -> None:
    window = window_from_metadata(
        {"model_name": "gpt-5", "context_window": 400_000, "num_output": -1}
    )
    assert (window.context_window, window.max_input_tokens) == (400_000, 272_000)
    assert window.max_output_tokens == 128_000


def test_unknown_name_infers_the_tokenizer_from_its_spelling() -> None:
    window = window_from_metadata(
        {"class_name": "Ollama", "model_name": "my-claude-3-5-finetune", "context_window": 8192}
    )
    assert (window.tokenizer, window.provider, window.context_window) == ("claude", "Ollama", 8192)


def test_metadata_without_a_window_is_rejected() -> None:
    with pytest.raises(ValueError, match="context_window"):
        window_from_metadata({"model_name": "x", "context_window": 0})


def test_names_are_looked_up_and_unknown_names_raise() -> None:
    assert window_for("openai/gpt-4o-2024-08-06").context_window == 128_000
    with pytest.raises(UnknownModelError, match="Pass the LLM itself") as info:
        window_for("no-such-model-xyz")
    assert "context_window=N" in str(info.value)  # of register_model, which takes it
