"""The conversation the local embedding model's CLI and MCP tests fit: a paraphrase bm25 misses
(the car is an automobile in the turn that says its colour), short, as each message is embedded
on the CPU."""

from __future__ import annotations

from typing import Any

#: The report's note when recall fused bm25 with the local model.
NOTE = "recall ranked the cut turns by bm25 and all-MiniLM-L6-v2 embeddings"


def car_conversation() -> list[dict[str, Any]]:
    """The conversation, as OpenAI-style dicts, its question last."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."}]
    for i in range(16):
        messages += [
            {"role": "user", "content": f"Tell me about topic {i}. " + "filler words here " * 6},
            {"role": "assistant", "content": f"Sure, on {i}. " + "more filler " * 6},
        ]
    messages[11] = {"role": "user", "content": "I bought a new automobile yesterday, a red one."}
    messages.append({"role": "user", "content": "What colour is my car?"})
    return messages
