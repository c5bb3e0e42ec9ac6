"""The known errors of the sources, corrected after the table is built (each fixed row says so in
``note``; a fix that states a checked fact makes the row's source ``checked``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from model_sources import CHECKED_AS_OF, Row

_GPT5 = re.compile(r"gpt-(?:[5-9]|\d\d)(?:$|[-.])")
_CLAUDE_VERSION = re.compile(r"claude-(?:[a-z]+-)?(\d)(?:-(\d{1,2}))?(?!\d)")


def _was(row: Row) -> str:
    return f"(source said {row.max_input_tokens:,} input / {row.max_output_tokens or 0:,} output)"


def fix_gpt5_input_cap(row: Row, rows: dict[str, Row]) -> Row | None:
    """OpenAI gpt-5 and later: input cap = window - 128,000 output (400k: 272k; 1.05M: 922k).

    LiteLLM gives the input cap for 272k models and the window for the others; models.dev and
    OpenAI's model pages state both (gpt-5: 272,000 of 400,000; gpt-5.4: 922,000 of 1,050,000).
    """
    del rows
    if row.provider != "openai" or not _GPT5.match(row.id) or row.max_output_tokens != 128_000:
        return None
    if row.max_input_tokens == 272_000 and row.context_window == 272_000:
        window, cap = 400_000, 272_000
    elif row.max_input_tokens in (400_000, 1_050_000):
        window, cap = row.max_input_tokens, row.max_input_tokens - 128_000
    else:
        return None
    note = f"gpt-5 family: {cap:,} input of a {window:,} window {_was(row)}"
    return replace(row, context_window=window, max_input_tokens=cap, note=note)


def fix_claude_default_window(row: Row, rows: dict[str, Row]) -> Row | None:
    """Claude before 4.6 has a 200,000 window; 1M needs the ``context-1m`` beta header."""
    del rows
    match = _CLAUDE_VERSION.search(row.id)
    if row.provider != "anthropic" or match is None or row.context_window <= 200_000:
        return None
    if (int(match.group(1)), int(match.group(2) or 0)) >= (4, 6):
        return None
    note = f"Claude < 4.6: 200,000 by default, 1M only with a beta header {_was(row)}"
    return replace(row, context_window=200_000, max_input_tokens=200_000, note=note)


def fix_deepseek_aliases(row: Row, rows: dict[str, Row]) -> Row | None:
    """``deepseek-chat`` / ``deepseek-reasoner`` now serve DeepSeek V4 Flash (1M window)."""
    if row.id not in ("deepseek-chat", "deepseek-reasoner") or "deepseek-v4-flash" not in rows:
        return None
    v4 = rows["deepseek-v4-flash"]
    note = f"alias now served by deepseek-v4-flash {_was(row)}"
    return replace(
        row,
        context_window=v4.context_window,
        max_input_tokens=v4.max_input_tokens,
        max_output_tokens=v4.max_output_tokens,
        note=note,
    )


def fix_output_over_window(row: Row, rows: dict[str, Row]) -> Row | None:
    """An output cap larger than the window is capped at the window."""
    del rows
    if row.max_output_tokens is None or row.max_output_tokens <= row.context_window:
        return None
    note = f"max output capped at the window {_was(row)}"
    return replace(row, max_output_tokens=row.context_window, note=note)


#: name -> (context window, max output tokens, where the maker documents them), for rows whose
#: sources say otherwise. OpenAI's gpt-4 page: "8,192 context window, 8,192 max output tokens"
#: for gpt-4 and its snapshots (LiteLLM, and so model_windows.csv, say 4,096 output).
#: gpt-3.5-turbo-0613 has a 4,096-token window (its 16k sibling is gpt-3.5-turbo-16k-0613):
#: OpenAI's deprecations page, and llama-index-llms-openai's table; models.dev's only row of
#: that name is Azure's, 16,384.
DOCUMENTED: dict[str, tuple[int, int, str]] = {
    "gpt-4": (8_192, 8_192, "platform.openai.com/docs/models/gpt-4"),
    "gpt-4-0613": (8_192, 8_192, "platform.openai.com/docs/models/gpt-4"),
    "gpt-4-0314": (8_192, 8_192, "platform.openai.com/docs/models/gpt-4"),
    "gpt-3.5-turbo-0613": (4_096, 4_096, "platform.openai.com/docs/deprecations"),
}


def fix_documented(row: Row, rows: dict[str, Row]) -> Row | None:
    """The facts of :data:`DOCUMENTED`, where the maker's documentation is cited."""
    del rows
    fact = DOCUMENTED.get(row.id)
    if fact is None:
        return None
    window, output, ref = fact
    note = f"{ref}: window {window:,}, max output {output:,} {_was(row)}"
    return replace(
        row, context_window=window, max_input_tokens=window, max_output_tokens=output, note=note
    )


#: (fix, whether it states a checked fact: then the row's source becomes ``checked``).
FIXES: tuple[tuple[Callable[[Row, dict[str, Row]], Row | None], bool], ...] = (
    (fix_gpt5_input_cap, True),
    (fix_claude_default_window, True),
    (fix_deepseek_aliases, True),
    (fix_documented, True),
    (fix_output_over_window, False),
)


def apply_fixes(rows: dict[str, Row]) -> dict[str, Row]:
    """Rows with ``context_window`` set (the input limit unless a fix says otherwise), fixed."""
    base = {
        k: replace(r, context_window=r.context_window or r.max_input_tokens)
        for k, r in rows.items()
    }
    fixed = dict(base)
    for fix, checked in FIXES:
        for model_id in sorted(fixed):
            row = fixed[model_id]
            new = fix(row, base)
            if new is not None:
                note = f"{row.note}; {new.note}" if row.note else new.note
                if checked:
                    new = replace(new, source="checked", as_of=CHECKED_AS_OF)
                fixed[model_id] = replace(new, note=note)
    return fixed
