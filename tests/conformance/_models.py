"""The emulators' models table: window, input cap and output cap of each model they serve.

The facts come from :func:`session_migrator.lookup_model`, so the guard and the emulator agree on
windows by construction. Where a provider's own documentation states the facts, they are in
:data:`PROVIDER_FACTS`, with the source, and ``test_models.py`` checks that the bundled table
agrees with them (a disagreement is a bug of the bundled table, corrected where it is built:
``scripts/model_fixes.py``; the emulator does not paper over it).

``sum_rule``: the service refuses ``input + max_tokens > window`` (OpenAI; Anthropic since
Claude 3.7). Without it (Claude 3 and 3.5) only the input is checked against the window, and
``max_tokens`` against the output cap.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from session_migrator import lookup_model

# name -> (context window, max output tokens, source), as the provider documents them.
PROVIDER_FACTS: dict[str, tuple[int, int, str]] = {
    # platform.openai.com/docs/models/gpt-4: "8,192 context window, 8,192 max output tokens"
    "gpt-4": (8_192, 8_192, "platform.openai.com/docs/models/gpt-4"),
    # platform.openai.com/docs/deprecations: gpt-3.5-turbo-0613, a 4,096-token window (the
    # 16k variant is gpt-3.5-turbo-16k-0613); llama-index-llms-openai's table says 4,096 too
    "gpt-3.5-turbo-0613": (4_096, 4_096, "platform.openai.com/docs/deprecations"),
}


@dataclass(frozen=True)
class ServedModel:
    name: str
    provider: str
    window: int
    max_input: int
    max_output: int
    sum_rule: bool
    tokenizer: str


def _served(name: str, provider: str, *, sum_rule: bool = True) -> ServedModel:
    w = lookup_model(name)
    assert w.max_output_tokens is not None, name
    return ServedModel(
        name,
        provider,
        w.context_window,
        w.max_input_tokens,
        w.max_output_tokens,
        sum_rule,
        w.tokenizer,
    )


@functools.cache
def models() -> dict[str, ServedModel]:
    """The table (read on first use, inside a test's hermetic environment)."""
    rows = [
        _served("gpt-4", "openai"),
        _served("gpt-3.5-turbo-0613", "openai"),
        _served("gpt-4o-mini", "openai"),
        _served("o4-mini", "openai"),  # a reasoning model (the Responses API cells)
        _served("claude-3-7-sonnet-20250219", "anthropic"),
        _served("claude-sonnet-4-20250514", "anthropic"),
        # Claude 3 and 3.5: "prompt is too long" only; max_tokens checked against the cap alone
        _served("claude-3-haiku-20240307", "anthropic", sum_rule=False),
        _served("claude-3-5-haiku-20241022", "anthropic", sum_rule=False),  # (the Bedrock cells)
        _served("claude-sonnet-4-5-20250929", "anthropic"),
    ]
    table = {m.name: m for m in rows}
    sonnet4 = table["claude-sonnet-4-20250514"]
    for alias in ("claude-sonnet-4-0", "claude-sonnet-4"):
        table[alias] = sonnet4
    table["claude-3-7-sonnet-latest"] = table["claude-3-7-sonnet-20250219"]
    return table


def served(name: str) -> ServedModel | None:
    return models().get(name)
