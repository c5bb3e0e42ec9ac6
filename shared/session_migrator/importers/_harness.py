"""What a source agent's harness put in the conversation to describe itself to its own model, left
out of a handoff (:func:`without_harness`): the target agent sends its own.

Codex writes its sandbox and permissions, skills, environment, collaboration mode and model
switches as ``developer`` and ``user`` messages made of tagged blocks (``<permissions
instructions>``, ``<environment_context>``, ...), and the project's ``AGENTS.md`` as a user block
(``# AGENTS.md instructions for <dir>`` then ``<INSTRUCTIONS>...</INSTRUCTIONS>``, or
``<user_instructions>`` in older releases). Claude Code writes ``<system-reminder>`` blocks into
user messages and tool results, and its local commands (``/model``, ``/clear``, ...) as user
messages of ``<command-name>``, ``<local-command-stdout>`` and a ``<local-command-caveat>`` telling
the model to ignore them. Those blocks are cut out of the text; a message left with nothing is
left out; a tool result always stays (its call needs it). The store keeps the whole import.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from session_migrator.messages._messages import ContentPart, Message

__all__ = ["AGENTS_MD_READERS", "HARNESS_BLOCKS", "HarnessCut", "without_harness"]

#: The tags of the blocks a source agent's harness writes about itself (Codex's first, then
#: Claude Code's). Each is cut out of system and user messages.
HARNESS_BLOCKS = (
    "environment_context",
    "permissions instructions",
    "skills_instructions",
    "collaboration_mode",
    "model_switch",
    "apps_instructions",
    "skill",
    "system-reminder",
    "local-command-caveat",
    "local-command-stdout",
    "local-command-stderr",
    "command-name",
    "command-message",
    "command-args",
)
#: Of those, the ones also cut out of tool results (Claude Code appends reminders to them).
_IN_RESULTS = ("system-reminder",)
#: The agents that read the project's ``AGENTS.md`` themselves: for them the copy the source
#: agent injected is left out too (the file is read again, as it is now). Claude Code and Gemini
#: CLI do not read it, so for them it stays: the project's rules still apply.
AGENTS_MD_READERS = ("codex", "opencode")


def _block(tag: str) -> str:
    name = re.escape(tag)
    return rf"<{name}(?:\s[^<>]*)?>.*?</{name}>"


_TAGGED = re.compile("|".join(_block(t) for t in HARNESS_BLOCKS), re.S)
_RESULT_TAGGED = re.compile("|".join(_block(t) for t in _IN_RESULTS), re.S)
_AGENTS_MD = re.compile(
    r"# AGENTS\.md instructions for [^\n]*\n\s*<INSTRUCTIONS>.*?</INSTRUCTIONS>"
    r"|<user_instructions>.*?</user_instructions>",
    re.S,
)


@dataclass
class HarnessCut:
    """What was left out: the messages dropped whole, the text cut (per block kind), and the
    messages left."""

    messages: list[Message]
    dropped: int = 0
    texts: list[str] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)


def _cut(text: str, pattern: re.Pattern[str], cut: HarnessCut, agents_md: bool) -> str:
    def drop(match: re.Match[str]) -> str:
        cut.texts.append(match.group(0))
        cut.kinds[_kind(match.group(0))] += 1
        return ""

    out = pattern.sub(drop, text)
    if agents_md:
        out = _AGENTS_MD.sub(drop, out)
    return out


def _kind(block: str) -> str:
    if block.startswith(("# AGENTS.md", "<user_instructions>")):
        return "AGENTS.md"
    found = re.match(r"<([^\s>]+(?: instructions)?)", block)
    return f"<{found.group(1)}>" if found else "harness"


def without_harness(messages: Sequence[Message], *, to: str) -> HarnessCut:
    """``messages`` without the source agent's harness blocks (see the module docstring), for a
    handoff to agent ``to``: the copy of ``AGENTS.md`` is left out only for the agents that read
    it themselves (:data:`AGENTS_MD_READERS`)."""
    agents_md = to in AGENTS_MD_READERS
    cut = HarnessCut(messages=[])
    for message in messages:
        if message.role == "tool":
            if isinstance(message.content, str) and "<system-reminder" in message.content:
                text = _cut(message.content, _RESULT_TAGGED, cut, False).rstrip()
                message = message.replace(content=text or message.content)
            cut.messages.append(message)
            continue
        if message.role not in ("system", "user") or message.tool_calls:
            cut.messages.append(message)
            continue
        if isinstance(message.content, str):
            if "<" not in message.content:
                cut.messages.append(message)
                continue
            text = _cut(message.content, _TAGGED, cut, agents_md)
            if not text.strip():
                cut.dropped += 1
            elif text != message.content:
                cut.messages.append(message.replace(content=text.strip()))
            else:
                cut.messages.append(message)
            continue
        parts: list[ContentPart] = []
        changed = False
        for part in message.content:
            if part.type != "text" or not part.text or "<" not in part.text:
                parts.append(part)
                continue
            text = _cut(part.text, _TAGGED, cut, agents_md)
            if text == part.text:
                parts.append(part)
                continue
            changed = True
            if text.strip():
                text = text.strip()
                parts.append(ContentPart("text", text, {**part.data, "text": text}))
        if not changed:
            cut.messages.append(message)
        elif not parts:
            cut.dropped += 1
        else:
            content: str | tuple[ContentPart, ...] = tuple(parts)
            if len(parts) == 1 and parts[0].type == "text":
                content = parts[0].text or ""
            cut.messages.append(message.replace(content=content))
    return cut
