"""Helpers shared by the command modules: errors, JSON output, plain-text tables."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from session_migrator._errors import InvalidMessageError
from session_migrator.messages._messages import Message, messages_from_openai
from session_migrator.messages._nesting import MAX_NESTING


class CliError(Exception):
    """A user mistake on the command line; printed as one line, exit code 2."""


#: What the CLI says to do about a model it does not know (every command that takes a model
#: takes ``--context-window``).
UNKNOWN_MODEL_REMEDY = (
    "Pass --context-window N (its window in tokens), or add it to the JSON/TOML file named by "
    "SESSION_MIGRATOR_MODELS."
)


#: What a JSON text nested beyond what the parser takes gets.
TOO_DEEP = (
    f"nested too deeply to read (a message may nest at most {MAX_NESTING} levels); flatten it"
)


def add_window_option(parser: argparse.ArgumentParser, model_option: str) -> None:
    """``--context-window N``: the window of ``model_option``'s model, for a model the table
    does not know (or to override the known window).
    """
    parser.add_argument(
        "--context-window",
        type=whole_number(1),
        metavar="N",
        help=f"the {model_option} model's window in tokens (for a model not in the table, or "
        "instead of the known one)",
    )


def whole_number(least: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number of at least ``least``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be {least} or more")
        return value

    return parse


def json_text(value: Any) -> str:
    """``value`` as indented JSON text and a newline: readable (non-ASCII as is), except where
    a lone surrogate (which UTF-8 cannot encode; JSON can carry it) makes the whole text keep
    non-ASCII characters as escapes, so that it is written and read back exactly.
    """
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, indent=2, ensure_ascii=True, default=str) + "\n"
    return text


def print_json(value: Any) -> None:
    sys.stdout.write(json_text(value))


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table with right-aligned numbers."""
    cells = [[_fmt(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(c))
    numeric = [
        all(isinstance(row[i], int | float) or row[i] is None for row in rows) and bool(rows)
        for i in range(len(headers))
    ]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(widths[i]) if numeric[i] else v.ljust(widths[i]) for i, v in enumerate(values)
        ).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(r) for r in cells)
    return "\n".join(out)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.2f}"
    text = str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: shown as its escape (the store keeps it)
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def read_messages_file(path: str) -> list[Message]:
    """Read OpenAI-format messages from a JSON file (``-`` for stdin)."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:
        raise CliError(f"{path}: {TOO_DEEP}") from None
    try:
        return messages_from_openai(data)
    except InvalidMessageError as exc:
        raise CliError(f"{path}: {exc}") from None


def write_text(output: str, text: str) -> bool:
    """Write ``text`` to the file ``output``, or to stdout for ``-`` (then ``True``: nothing more
    should be printed there); a file that cannot be written is a :class:`CliError`."""
    if output == "-":
        sys.stdout.write(text)
        return True
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"{output}: {exc.strerror}") from None
    return False
