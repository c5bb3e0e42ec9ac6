"""What the MCP tools answer: a model's window, and a fitted conversation paged to fit an answer.

It owns the shape of the tools' answers: a window as a dict, which fitted messages an answer
carries (offset, limit, a size cap in tokens: clients refuse larger tool results), the report
shortened where its id lists and summary text would crowd the messages out, a message alone
over the cap cut with a hint to get it whole, the hint to the next page, and :func:`jsonable`,
which makes any value what JSON text in UTF-8 can carry. :class:`SessionTools` in ``_tools``
builds its answers with these.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from session_migrator.mcp._arguments import ArgumentError
from session_migrator.messages._messages import messages_to_openai

if TYPE_CHECKING:
    from session_migrator.migration._report import MigrationResult
    from session_migrator.models._windows import ModelWindow

#: Characters per token assumed when sizing an answer (JSON runs 3-4; 3 errs on the small side).
_CHARS_PER_TOKEN = 3


def _window_dict(window: ModelWindow) -> dict[str, Any]:
    return {
        "name": window.name,
        "provider": window.provider,
        "context_window": window.context_window,
        "max_input_tokens": window.max_input_tokens,
        "max_output_tokens": window.max_output_tokens,
        "tokenizer": window.tokenizer,
        "source": window.source,
        "as_of": window.as_of,
        "ref": window.ref or None,
    }


class _Paging:
    """Which of the fitted messages an answer carries, and the size it may take."""

    def __init__(self, include: bool, offset: int, limit: int | None, tokens: int) -> None:
        self.include, self.offset, self.limit, self.tokens = include, offset, limit, tokens

    @classmethod
    def checked(cls, include: bool, offset: int, limit: int | None, tokens: int) -> _Paging:
        if offset < 0:
            raise ArgumentError(f"offset must not be negative, got {offset}")
        if limit is not None and limit < 1:
            raise ArgumentError(f"limit must be at least 1 (or left out), got {limit}")
        if tokens < 1_000:
            raise ArgumentError(f"max_answer_tokens must be at least 1000, got {tokens}")
        return cls(include, offset, limit, tokens)


#: Id lists longer than this are shortened in an answer (their head and tail kept, counted).
_IDS_SHOWN = 50


#: Characters of a summary's text shown in an answer's report (the summary itself is a message).
_SUMMARY_SHOWN = 300


def _short_report(report: dict[str, Any], room: int) -> dict[str, Any]:
    """``report`` within ``room`` characters where its id lists and the summary's text (which
    the messages carry whole) can be shortened."""
    if len(json.dumps(report)) <= room:
        return report
    out = dict(report)
    summary = report.get("summary")
    if isinstance(summary, dict) and len(str(summary.get("text", ""))) > _SUMMARY_SHOWN:
        text = str(summary["text"])
        out["summary"] = {
            **summary,
            "text": text[:_SUMMARY_SHOWN] + "...",
            "text_chars": len(text),
            "text_note": "shortened here: the messages carry the whole summary",
        }
    for key, value in report.items():
        if key.endswith("_ids") and isinstance(value, list) and len(value) > _IDS_SHOWN:
            half = _IDS_SHOWN // 2
            out[key] = [*value[:half], *value[-half:]]
            out[f"{key}_omitted"] = len(value) - _IDS_SHOWN
    return out


def _result_dict(result: MigrationResult, paging: _Paging, tool: str) -> dict[str, Any]:
    """The answer of ``tool``: the decision, the report, and the page of messages that fits
    the answer's size (``paging``), with how to ask for the rest."""
    room = paging.tokens * _CHARS_PER_TOKEN
    report = _short_report(jsonable(result.report.to_dict()), room // 4)
    room -= len(json.dumps(report)) + 400  # (the page's own fields)
    total = len(result.messages)
    start = min(paging.offset, total)
    stop = total if paging.limit is None else min(total, start + paging.limit)
    page: list[dict[str, Any]] = []
    cut: int | None = None  # the size of a message cut to fit the answer
    if paging.include:
        for message in result.messages[start:stop]:
            data = jsonable(messages_to_openai([message], include_id=False)[0])
            size = len(json.dumps(data)) + 2
            if size > room and not page and isinstance(data.get("content"), str):
                # alone over the cap: its text's head, said so (raise the cap to get it whole)
                cut = size
                data["content"] = data["content"][: max(room, 1_000)] + " [... cut here]"
                size = len(json.dumps(data)) + 2
            room -= size
            if room < 0 and page:
                break
            page.append(data)
    shown_end = start + len(page)
    complete = shown_end >= total and cut is None
    hint: str | None = None
    if cut is not None:
        hint = (
            f"message {start} is larger than the answer's cap and is cut here; call {tool} "
            f"again with offset={start} and max_answer_tokens={cut // _CHARS_PER_TOKEN + 2_000} "
            f"to get it whole, or offset={shown_end} for the next page"
        )
    elif not paging.include:
        hint = f"messages left out (include_messages=false); {total} in the fitted conversation"
    elif not complete:
        why = f"the answer is capped at about {paging.tokens:,} tokens"
        if paging.limit is not None and shown_end == stop:
            why = f"limit={paging.limit}"
        hint = (
            f"messages {start} to {shown_end - 1} of {total} ({why}); call {tool} again with "
            f"offset={shown_end} for the next page, or raise max_answer_tokens if your client "
            "takes larger answers"
        )
    return {
        "decision": report["decision"],
        "tokens_before": report["tokens_before"],
        "tokens_after": report["tokens_after"],
        "budget": report["budget"],
        "report": report,
        "messages": page,
        "page": {
            "offset": start,
            "returned": len(page),
            "total": total,
            "complete": complete and paging.include,
            "next_offset": None if shown_end >= total or not paging.include else shown_end,
            "hint": hint,
        },
    }


def jsonable(value: Any) -> Any:
    """``value`` as what JSON text in UTF-8 can carry: datetimes as ISO strings, mappings as
    dicts with string keys, tuples as lists, and every lone surrogate (JSON text can escape one,
    UTF-8 cannot encode it: the protocol's encoder refuses it) as U+FFFD; the store keeps the
    originals.
    """
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return _LONE_SURROGATE.sub("\ufffd", value)
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {jsonable(str(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def answer_text(tool: str, data: dict[str, Any]) -> str:
    """A tool's answer as text, for the clients that read only text: the line that says what it
    holds (:func:`summary`), then the answer's JSON, compact (what ``structuredContent`` holds)."""
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"{summary(tool, data)}\n{body}"


def summary(tool: str, data: dict[str, Any]) -> str:
    """The one line that opens a tool's answer text: what the answer holds."""
    if "text" in data and "offset" in data:
        return f"{len(data['text']):,} characters of message {data['id']!r}"
    if "placeholder" in data:
        return str(data["note"])
    if "placeholders" in data:
        shown = ", ".join(p["id"] for p in data["placeholders"]) or "none"
        return f"{data['count']} placeholder(s) in force: {shown}"
    if "command" in data:
        return f"wrote {data['path']}; resume it with: {data['command']}"
    if "stored" in data and "brief" in data:
        return (
            f"imported {data['messages']} message(s) of {data['path']} as session "
            f"{data['session_id']!r} ({data['stored']} newly stored)"
        )
    if "decision" in data:
        page = data.get("page") or {}
        line = (
            f"{data['decision']}: {data['tokens_before']:,} -> {data['tokens_after']:,} tokens "
            f"(budget {data['budget']:,}); messages {page.get('returned', 0)} of "
            f"{page.get('total', 0)}"
        )
        return f"{line}; {page['hint']}" if page.get("hint") else line
    if "appended" in data:
        return (
            f"appended {data['appended']} of {data['received']} message(s) to "
            f"{data['session_id']!r} ({data['message_count']} stored)"
        )
    if "share" in data:
        return (
            f"{data['tokens']:,} of {data['budget']:,} tokens ({data['share']:.0%}); "
            f"{'fits' if data['fits'] else 'does not fit'}"
        )
    if "models" in data:
        return f"{data['returned']} of {data['count']} model(s)"
    if "sessions" in data:
        return f"{data['returned']} of {data['count']} session(s)"
    if "facts" in data:
        return f"{data['count']} fact(s) of user {data['user_id']!r}"
    if "fact" in data:
        return f"kept fact {data['fact']['key']!r} of user {data['user_id']!r}"
    if "deleted" in data:
        gone = "deleted" if data["deleted"] else "no such fact:"
        return f"{gone} {data['key']!r} of user {data['user_id']!r}"
    if "context_window" in data:
        return (
            f"{data['name']}: window {data['context_window']:,}, input "
            f"{data['max_input_tokens']:,}, output {data['max_output_tokens']:,}"
        )
    return tool
