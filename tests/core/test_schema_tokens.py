"""``schema_tokens``: the JSON of each schema plus its framing, the framing scaled as the text is
by an estimating counter (an estimate scales every overhead, as it does a message's)."""

from __future__ import annotations

import json
import math

from session_migrator import TOKENS_PER_TOOL, EstimatingCounter, TiktokenCounter, schema_tokens

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}


def test_exact_counter_adds_the_framing_as_is() -> None:
    c = TiktokenCounter("o200k_base")
    text = json.dumps(TOOL, ensure_ascii=False)
    assert schema_tokens([TOOL, TOOL], c) == 2 * (c.count_text(text) + TOKENS_PER_TOOL)


def test_estimating_counter_scales_the_framing() -> None:
    c = EstimatingCounter("claude", 1.43)
    text = json.dumps(TOOL, ensure_ascii=False)
    framing = math.ceil(TOKENS_PER_TOOL * 1.43)
    assert schema_tokens([TOOL], c) == c.count_text(text) + framing
    base = TiktokenCounter("o200k_base").count_text(text)
    # never under the estimate of the JSON and its framing scaled together
    assert schema_tokens([TOOL], c) >= math.ceil((base + TOKENS_PER_TOOL) * 1.43)
