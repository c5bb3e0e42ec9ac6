"""What the importers share: the result record, a tolerant JSON Lines reader, stable ids and
content parts; the assembler that pairs tool calls with their results is
:class:`~session_migrator.importers._pairing.Conversation`.

Reading rules (both formats):

- a file that cannot be read at all (missing, empty, binary, or with no JSON object on any line)
  raises :class:`~session_migrator.ImportFormatError` naming the path and the line;
- an unparseable *last* line is a write that was cut short: skipped, counted as
  ``truncated_last_line``; an unparseable line elsewhere is skipped as ``invalid_json``;
- bytes that are not UTF-8 are replaced with U+FFFD, the line is kept, and each such line is
  counted as ``non_utf8_line`` in ``repaired`` with a warning naming the lines.

Pairing rules (``_pairing.Conversation``): a tool result is placed right after the assistant message
that made the call, whatever its position in the file; a result whose call is nowhere in the file
is dropped (``skipped["orphan_tool_output"]``); a call with no result gets a placeholder result
marked ``{"session_migrator": {"kind": "placeholder_result"}}`` (counted as
``repaired["placeholder_result"]``), so the conversation never holds an orphan on either side.
A conversation whose first non-system message is not a user's gets a user note first, marked
``{"kind": "leading_user_note"}`` (``repaired["leading_user_note"]``): chat APIs require it.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from session_migrator._errors import ImportFormatError
from session_migrator.importers._import_result import LAST_ENTRY_KEY, TIMESTAMPS_KEY, ImportResult
from session_migrator.messages._messages import (
    MODEL_KEY,
    REASONING_KEY,
    ContentPart,
    Message,
)

__all__ = [
    "LAST_ENTRY_KEY",
    "MODEL_KEY",
    "REASONING_KEY",
    "TIMESTAMPS_KEY",
    "ImportResult",
    "Record",
    "Stats",
    "dated",
    "file_refused_if_odd",
    "line_skipped_if_odd",
    "read_jsonl",
    "stable_id",
]

#: What reading a field of an unexpected type raises (a list where a string was, ...).
SHAPE_ERRORS = (TypeError, AttributeError, KeyError, IndexError, ValueError)

#: Text of the result synthesised for a tool call whose result is not in the file.
PLACEHOLDER_RESULT = (
    "[no result was recorded for this tool call: the session ended or was interrupted "
    "before the tool returned]"
)
#: Text of the user message put first when a file has none before its first answer.
LEADING_NOTE = (
    "[the session file holds no user message before this point: it was resumed, forked or cut "
    "short]"
)
_MAX_LINES_NAMED = 5


@dataclass
class Stats:
    """Counters filled while reading one file."""

    skipped: Counter[str] = field(default_factory=Counter)
    repaired: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] += n


@dataclass(frozen=True, slots=True)
class Record:
    """One parsed line: its 1-based line number, the object, and a digest of the raw bytes."""

    line: int
    data: dict[str, Any]
    digest: str


def _name_lines(lines: list[int]) -> str:
    """``line 7`` or ``lines 3, 9 and 12 more``."""
    shown = ", ".join(str(n) for n in lines[:_MAX_LINES_NAMED])
    more = f" and {len(lines) - _MAX_LINES_NAMED} more" if len(lines) > _MAX_LINES_NAMED else ""
    return f"{'line' if len(lines) == 1 else 'lines'} {shown}{more}"


def read_jsonl(path: Path, stats: Stats, *, format_name: str) -> tuple[list[Record], int]:
    """The JSON objects of ``path``, one per line, and the number of lines read.

    Raises :class:`ImportFormatError` when the file is missing, empty, binary, or holds no JSON
    object at all; everything less serious is counted in ``stats`` (see the module docstring).
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ImportFormatError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ImportFormatError(f"{path}: is a directory, not a {format_name} file") from None
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read ({exc.strerror})") from None
    if not data.strip():
        raise ImportFormatError(f"{path}: line 1: empty file, not a {format_name} file")
    nul = data.find(b"\x00", 0, 8192)
    if nul != -1 and b"\n" not in data[:nul]:
        raise ImportFormatError(_binary(path, data, nul, format_name))
    raw_lines = data.split(b"\n")
    blank = b" \t\r\x00"  # a crash can leave a tail of NUL bytes: treated as blank
    if not any(raw.strip(blank) for raw in raw_lines):
        raise ImportFormatError(_binary(path, data, max(nul, 0), format_name))
    last = max(i for i, raw in enumerate(raw_lines) if raw.strip(blank))
    records: list[Record] = []
    bad_utf8: list[int] = []
    bad_json: list[int] = []
    first_error: tuple[int, str] | None = None
    for i, raw in enumerate(raw_lines[: last + 1]):
        lineno = i + 1
        if not raw.strip(blank):
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace")
            bad_utf8.append(lineno)
        try:
            obj = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            first_error = first_error or (lineno, f"not JSON ({reason})")
            if i == last:
                stats.skip("truncated_last_line")
                stats.warnings.append(
                    f"line {lineno}: the last line is cut short (the file was still being "
                    "written?); skipped"
                )
            else:
                stats.skip("invalid_json")
                bad_json.append(lineno)
            continue
        if not isinstance(obj, dict):
            first_error = first_error or (lineno, f"a JSON {type(obj).__name__}, not an object")
            stats.skip("not_an_object")
            continue
        digest = hashlib.blake2b(raw, digest_size=6).hexdigest()
        records.append(Record(lineno, obj, digest))
    if not records:
        if nul != -1:
            raise ImportFormatError(_binary(path, data, nul, format_name))
        where, what = first_error or (1, "no JSON object")
        raise ImportFormatError(f"{path}: line {where}: {what}; this is not a {format_name} file")
    if bad_json:
        stats.warnings.append(f"{_name_lines(bad_json)}: not valid JSON; skipped")
    if bad_utf8:
        stats.repaired["non_utf8_line"] += len(bad_utf8)
        stats.warnings.append(
            f"{_name_lines(bad_utf8)}: bytes that are not UTF-8 were replaced with U+FFFD"
        )
    return records, last + 1


def _binary(path: Path, data: bytes, offset: int, format_name: str) -> str:
    line = data.count(b"\n", 0, offset) + 1
    return (
        f"{path}: line {line}: binary data (NUL byte at offset {offset}), not a {format_name} file"
    )


def stable_id(prefix: str, *parts: object) -> str:
    """A deterministic message id: ``prefix`` and a digest of ``parts``."""
    blob = "\x1f".join(str(p) for p in parts).encode("utf-8", "surrogatepass")
    return f"{prefix}-{hashlib.blake2b(blob, digest_size=8).hexdigest()}"


def text_or_parts(parts: list[ContentPart]) -> str | tuple[ContentPart, ...]:
    """A lone text part as a plain string, anything else as a tuple of parts."""
    if len(parts) == 1 and parts[0].type == "text":
        return parts[0].text or ""
    return tuple(parts)


def text_part(text: str) -> ContentPart:
    return ContentPart("text", text, {"type": "text", "text": text})


def image_part(url: str) -> ContentPart:
    """An image as an OpenAI ``image_url`` part (a ``data:`` URL or a web address)."""
    return ContentPart("image", None, {"type": "image_url", "image_url": {"url": url}})


def iter_strings(value: Any) -> Iterator[str]:
    """The text pieces of a tool result given as a string, a list of blocks, or an object."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for block in value:
            yield from iter_strings(block)
    elif isinstance(value, Mapping):
        text = value.get("text")
        if isinstance(text, str):
            yield text
        elif value.get("type") in ("image", "input_image", "image_url"):
            yield "[image omitted]"
        elif isinstance(value.get("content"), str | list):
            yield from iter_strings(value["content"])
        else:
            yield json.dumps(value, ensure_ascii=False, sort_keys=True)
    elif value is not None:
        yield json.dumps(value, ensure_ascii=False)


def result_text(value: Any) -> str:
    """A tool result as one string."""
    return "\n".join(iter_strings(value))


@contextmanager
def line_skipped_if_odd(stats: Stats, rec: Record) -> Iterator[None]:
    """Count ``rec`` as skipped when a field of it has a shape the importer does not know."""
    try:
        yield
    except ImportFormatError:
        raise
    except SHAPE_ERRORS as exc:
        stats.skip("malformed")
        stats.warnings.append(
            f"line {rec.line}: skipped: a field has a shape this importer does not know "
            f"({type(exc).__name__}: {exc})"
        )


@contextmanager
def file_refused_if_odd(path: Path) -> Iterator[None]:
    """Refuse the file (an ``ImportFormatError``) when its entries have a shape the importer
    cannot read at all."""
    try:
        yield
    except ImportFormatError:
        raise
    except SHAPE_ERRORS as exc:
        raise ImportFormatError(
            f"{path}: an entry has a shape this importer does not know "
            f"({type(exc).__name__}: {exc}); nothing was imported from this file"
        ) from exc


def _when(text: str) -> datetime | None:
    """An ISO 8601 time as the agents write it (``...Z`` or an offset), aware; else ``None``."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def dated(messages: list[Message], times: Mapping[str, str]) -> list[Message]:
    """``messages`` with the times the source file gives them (``times``: by message id), so
    that the store keeps when each was said, not when it was imported: a message the file gives
    no time has the time of the message before it (the first ones, of the first one given)."""
    parsed = {k: w for k, v in times.items() if (w := _when(v)) is not None}
    if not parsed:
        return messages
    first = next(parsed[m.id] for m in messages if m.id in parsed)
    out: list[Message] = []
    current = first
    for m in messages:
        current = parsed.get(m.id, current)
        out.append(m if m.timestamp is not None else m.replace(timestamp=current))
    return out
