"""The library's own lead message: the note on what was left out, or the summary of it.

Both are system messages marked in ``extra`` (``{"kind": "trim_note" | "summary", ...}``), with
ids derived from what they cover, so the same cut gives the same message.
"""

from __future__ import annotations

from collections.abc import Sequence

from session_migrator._errors import SummarizerError
from session_migrator._redact import redact_secrets
from session_migrator.counting._counter import TokenCounter
from session_migrator.counting._tokens import remembered_count
from session_migrator.fitting._truncate import range_id, truncate_text
from session_migrator.fitting._units import Layout, stable_id
from session_migrator.messages._messages import MARKER_KEY, Message
from session_migrator.summaries._summarizers import ExtractiveSummarizer, Summarizer, Summary

__all__ = ["note", "note_reserve", "read_back", "summary_message"]

_PREVIEW_CHARS = 120
#: The most of a summary's room the line naming what it covers may take (in a smaller room the
#: summary keeps it, and the line is left out).
READ_BACK_SHARE = 0.05


def read_back(covered: Sequence[Message]) -> str:
    """What a note or summary of ``covered`` tells the model it can do to read them back."""
    them = "it" if len(covered) == 1 else "them"
    return f'read_context(id="{range_id(covered[0].id, covered[-1].id)}") reads {them} back'


def note(
    covered: list[Message], room: int, counter: TokenCounter, *, read_back_room: bool = True
) -> Message | None:
    """The note on ``covered`` (left out) that fits in ``room``: the longest that does, naming
    the run ``read_context`` reads back where there is room for it."""
    oldest = next((m for m in covered if m.text.strip()), covered[0])
    preview = " ".join(oldest.text.split())
    if len(preview) > _PREVIEW_CHARS:
        preview = preview[: _PREVIEW_CHARS - 3] + "..."
    n = len(covered)
    s, were = ("s", "were") if n != 1 else ("", "was")
    long = f"{n} earlier message{s} of this conversation {were} left out to fit the context window"
    back = f" ({read_back(covered)})" if read_back_room else ""
    texts = [
        f'[session-migrator: {long}{back}. The oldest began: "{preview}"]',
        f'[session-migrator: {long}. The oldest began: "{preview}"]',
        f"[session-migrator: {n} earlier message{s} left out{back}.]",
        f"[session-migrator: {n} earlier message{s} left out.]",
    ]
    for text in dict.fromkeys(texts):
        note = Message(
            "system",
            text,
            id=stable_id("sm-note", [covered[0].id, covered[-1].id, str(n)]),
            extra={
                MARKER_KEY: {
                    "kind": "trim_note",
                    "dropped": n,
                    "first_id": covered[0].id,
                    "last_id": covered[-1].id,
                }
            },
        )
        if counter.count_message(note) <= room:
            return note
    return None


def note_reserve(
    messages: Sequence[Message], layout: Layout, counter: TokenCounter, *, read_back: bool = False
) -> int:
    """The room a note on the cut part takes (``read_back``: with the line naming the run)."""
    first = [messages[i] for u in layout.units[:1] for i in u.indices] or list(messages[:1])
    probe = note(first, 10**9, counter, read_back_room=read_back)
    return (counter.count_message(probe) + 8) if probe else 0


def summary_message(
    summarizer: Summarizer,
    messages: Sequence[Message],
    covered: list[Message],
    room: int,
    counter: TokenCounter,
    previous: Summary | None,
    fallbacks: list[str],
) -> tuple[Message | None, Summary | None]:
    header = f"[session-migrator: summary of {len(covered)} earlier messages]\n"
    named = f"{header[:-2]} ({read_back(covered)})]\n"
    if counter.count_text(named) <= room * READ_BACK_SHARE:  # (a small room keeps the summary)
        header = named
    overhead = counter.count_message(Message("system", header)) + 2
    limit = room - overhead
    if limit < 16:
        return None, None
    fresh = covered
    previous_text: str | None = None
    if previous is not None and previous.first_id == covered[0].id:
        # the summary's last message is usually near the end: look for it from there
        # (a session's ids are unique)
        for j in range(len(covered) - 1, -1, -1):
            if covered[j].id == previous.last_id:
                fresh = covered[j + 1 :]
                previous_text = previous.text
                break
    used_name = summarizer.name
    text: str | None = None
    if (
        previous_text is not None
        and not fresh
        and remembered_count(counter, previous_text) <= limit
    ):
        text = previous_text
    else:
        try:
            text = summarizer.summarize(
                fresh, max_tokens=limit, counter=counter, previous=previous_text
            )
            if not text.strip() and not isinstance(summarizer, ExtractiveSummarizer):
                # the extractive summarizer may find nothing worth keeping; a model may not
                raise SummarizerError(f"{used_name} returned no summary text")
            if not isinstance(summarizer, ExtractiveSummarizer):
                written = remembered_count(counter, text)
                if written > limit:
                    raise SummarizerError(
                        f"{used_name} wrote {written} tokens, over its limit of {limit}"
                    )
            # (the extractive summarizer counts what it picks: its text is counted once,
            # below, as the message it becomes)
        except SummarizerError as exc:
            fallbacks.append(
                redact_secrets(
                    f"summarizer {used_name} failed ({exc}); used the offline "
                    "extractive summarizer instead",
                    summarizer,
                )
            )
            used_name = ExtractiveSummarizer.name
            text = ExtractiveSummarizer().summarize(covered, max_tokens=limit, counter=counter)
        except Exception as exc:  # a user-supplied summarizer may raise anything
            fallbacks.append(
                redact_secrets(
                    f"summarizer {used_name} raised {type(exc).__name__}: {exc}; "
                    "used the offline extractive summarizer instead",
                    summarizer,
                )
            )
            used_name = ExtractiveSummarizer.name
            text = ExtractiveSummarizer().summarize(covered, max_tokens=limit, counter=counter)
    if not text.strip():
        return None, None
    message = _summary_lead(header, text, covered, used_name)
    if counter.count_message(message) > room:
        text = truncate_text(text, limit, counter)
        if not text.strip():
            return None, None
        message = _summary_lead(header, text, covered, used_name)
        if counter.count_message(message) > room:
            return None, None
    return message, Summary(text, covered[0].id, covered[-1].id, len(covered), used_name)


def _summary_lead(header: str, text: str, covered: list[Message], summarizer: str) -> Message:
    """The system message that carries a summary of ``covered``."""
    return Message(
        "system",
        header + text,
        id=stable_id("sm-summary", [covered[0].id, covered[-1].id, text]),
        extra={
            MARKER_KEY: {
                "kind": "summary",
                "first_id": covered[0].id,
                "last_id": covered[-1].id,
                "covered": len(covered),
                "summarizer": summarizer,
            }
        },
    )
