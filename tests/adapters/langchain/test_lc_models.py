"""The window of a LangChain model: profile first, then its name through the core's table."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.runnables import ConfigurableField

from langchain_session_migrator import window_for
from langchain_session_migrator._models import model_map, model_name
from session_migrator import ModelWindow, UnknownModelError
from session_migrator.models._lookup import lookup_model


def test_profile_of_an_unknown_name_gives_the_window(kit: Any) -> None:
    llm = kit.make_model("acme-chat-7", 6_000, 500)
    window = window_for(llm)
    assert (window.name, window.source) == ("acme-chat-7", "profile")
    assert (window.max_input_tokens, window.max_output_tokens) == (6_000, 500)
    assert window.context_window == 6_500
    assert window.tokenizer == "other"  # the name says nothing: counted most conservatively


def test_profile_of_a_known_name_keeps_the_table_tokenizer_and_window(kit: Any) -> None:
    llm = kit.make_model("claude-sonnet-4-5", 50_000, 1_000)
    window = window_for(llm)
    known = lookup_model("claude-sonnet-4-5")
    assert window.max_input_tokens == 50_000
    assert window.tokenizer == known.tokenizer == "claude"
    assert window.context_window == known.context_window


def test_a_model_without_profile_is_looked_up_by_name(kit: Any) -> None:
    llm = kit.RecordingChatModel(messages=iter(["x"]), model_name="gpt-4o-2024-08-06")
    assert window_for(llm) == lookup_model("gpt-4o-2024-08-06")
    assert window_for(llm).max_input_tokens == lookup_model("gpt-4o").max_input_tokens
    mini = window_for("openai:gpt-4o-mini")  # as init_chat_model writes it
    assert mini.max_input_tokens == lookup_model("gpt-4o-mini").max_input_tokens
    assert model_name(llm) == "gpt-4o-2024-08-06"


def test_unknown_names_raise_with_the_fix(kit: Any) -> None:
    with pytest.raises(UnknownModelError, match="register_model") as info:
        window_for("acme-unknown-model")
    assert "profile=" in str(info.value)
    llm = kit.RecordingChatModel(messages=iter(["x"]), model_name="acme-unknown-model")
    with pytest.raises(UnknownModelError, match="profile="):
        window_for(llm)
    # each fix it names works
    window = ModelWindow("acme", "test", 8_000, 8_000, 500, "o200k_base", "explicit")
    assert window_for(llm, registry={"acme-unknown-model": window}) is window
    profiled = kit.RecordingChatModel(
        messages=iter(["x"]),
        model_name="acme-unknown-model",
        profile={"max_input_tokens": 8_000, "max_output_tokens": 500},
    )
    assert window_for(profiled).max_input_tokens == 8_000
    from session_migrator import register_model, unregister_model

    register_model("acme-unknown-model", context_window=8_000, max_output_tokens=500)
    try:
        assert window_for(llm).context_window == 8_000
    finally:
        unregister_model("acme-unknown-model")


def test_a_model_without_a_name_is_told_what_works(kit: Any) -> None:
    nameless = kit.RecordingChatModel(messages=iter(["x"]), model_name="")
    assert model_name(nameless) is None
    with pytest.raises(UnknownModelError) as info:
        window_for(nameless)
    text = str(info.value)
    assert text.startswith("RecordingChatModel reports no model name")
    assert "register_model" not in text  # a name it does not report cannot be registered
    assert "models={'RecordingChatModel': window}" in text
    window = ModelWindow("acme", "test", 8_000, 8_000, 500, "o200k_base", "explicit")
    assert window_for(nameless, registry={"RecordingChatModel": window}) is window


def test_wrappers_are_looked_through(kit: Any) -> None:
    small = kit.make_model("small-llm", 2_000, 100)
    big = kit.make_model("big-llm", 90_000, 100)
    assert window_for(small.bind(stop=["x"])).max_input_tokens == 2_000
    assert window_for(small.bind_tools([])).max_input_tokens == 2_000
    assert window_for(big.with_fallbacks([small])).max_input_tokens == 90_000
    alternatives = big.configurable_alternatives(
        ConfigurableField(id="model"), default_key="big", small=small
    )
    assert window_for(alternatives).max_input_tokens == 90_000


def test_registry_and_windows() -> None:
    window = ModelWindow("mine", "custom", 1_000, 900, 100, "o200k_base", "explicit")
    assert window_for(window) is window
    assert window_for("anything", registry={"anything": window}) is window


def test_model_map_keys_models_by_name(kit: Any) -> None:
    a, b = kit.make_model("a-llm", 1_000), kit.make_model("b-llm", 2_000)
    assert model_map([a, b]) == {"a-llm": a, "b-llm": b}
    assert model_map({"x": a}) == {"x": a}
    assert model_map(None) == {}
