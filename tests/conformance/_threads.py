"""Long, real-looking conversations: the bundled demo session (an engineer and a coding agent on
a billing service) re-cut into plain user / assistant turns of a chosen length.

``thread(120, 600)`` is about 18,000 tokens (cl100k): more than twice gpt-4's 8,192 window.
``thread(120, 5_600)`` is about 210,000 estimated Claude tokens: over a 200,000 window.
"""

from __future__ import annotations

import functools
import json
from importlib import resources


@functools.cache
def _corpus() -> tuple[list[str], str]:
    data = resources.files("session_migrator").joinpath("_data/demo_conversation.json")
    messages = json.loads(data.read_text(encoding="utf-8"))
    turns = [m["content"] for m in messages if m["role"] in ("user", "assistant") and m["content"]]
    outputs = "\n".join(m["content"] for m in messages if m["role"] == "tool" and m["content"])
    return turns, outputs


@functools.cache
def thread(n: int = 120, chars: int = 600) -> tuple[tuple[str, str], ...]:
    """``n`` alternating (role, text) turns, the first a user's, each about ``chars`` long."""
    turns, outputs = _corpus()
    out: list[tuple[str, str]] = []
    at = 0
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        head = f"[turn {i + 1}] {turns[i % len(turns)]}"
        room = max(0, chars - len(head))
        if at + room > len(outputs):
            at = 0
        body = outputs[at : at + room]
        at += room
        out.append((role, f"{head}\n{body}" if body else head))
    return tuple(out)


QUESTION = "Given all of the above, what is the single next step for the invoice fix?"
