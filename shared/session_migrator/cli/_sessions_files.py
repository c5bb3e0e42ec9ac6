"""``sessions export`` and ``sessions import``: a stored session to a JSON file and back.

It owns the two file formats a session travels in (an OpenAI-format message list, with a warning
for messages it cannot carry exactly, and the store's own lossless ``native`` layout marked by
:data:`NATIVE_KEY`), reading and parsing an import file with errors that name the file, the
append of an import to a session, and ``_store``, the store every ``sessions`` action opens
from ``--store``. The parser and the other actions are in ``_sessions_cmd``; the Markdown export
in ``_markdown_cmd``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from session_migrator._errors import InvalidMessageError, SessionNotFoundError
from session_migrator.cli._common import CliError, json_text, print_json, write_text
from session_migrator.cli._markdown_cmd import check_markdown_options, run_markdown_export
from session_migrator.messages._messages import Message, messages_from_openai
from session_migrator.store import BaseSessionStore, _codec, open_store

NATIVE_KEY = "session_migrator_export"


@contextmanager
def _store(args: argparse.Namespace) -> Iterator[BaseSessionStore]:
    store = open_store(args.store)
    try:
        yield store
    finally:
        store.close()


def run_export(args: argparse.Namespace) -> int:
    check_markdown_options(args)
    if args.format == "markdown":
        return run_markdown_export(args)
    with _store(args) as store:
        info = store.get_session(args.session_id)
        if info is None:
            raise SessionNotFoundError(args.session_id)
        messages = store.load(args.session_id, full=True)
    data: Any
    if args.format == "native":
        data = {
            NATIVE_KEY: 1,
            "session_id": info.id,
            "workspace": info.workspace,
            "metadata": dict(info.metadata),
            "messages": [_codec.message_to_dict(m) for m in messages],
        }
    else:
        data = [m.to_openai() for m in messages]
        inexact = sum(1 for m, d in zip(messages, data, strict=True) if not _round_trips(m, d))
        if inexact:
            print(
                f"warning: {inexact} message(s) carry fields the OpenAI format cannot hold "
                "exactly; use --format native for an exact copy",
                file=sys.stderr,
            )
    if write_text(args.output, json_text(data)):
        return 0
    if args.json:
        print_json(
            {
                "session_id": info.id,
                "count": len(messages),
                "output": args.output,
                "format": args.format,
            }
        )
    else:
        print(f"wrote {len(messages)} messages of session {info.id!r} to {args.output}")
    return 0


def _round_trips(message: Message, data: dict[str, Any]) -> bool:
    try:
        return Message.from_openai(json.loads(json.dumps(data))) == message
    except (InvalidMessageError, ValueError):
        return False


def _read_file(path: str) -> Any:
    try:
        raw = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror}") from None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None


def _parse_import(path: str, data: Any) -> tuple[list[Message], dict[str, Any]]:
    """The messages of a file and, for a native export, its session fields."""
    if isinstance(data, dict) and NATIVE_KEY in data:
        try:
            messages = [_codec.message_from_dict(d) for d in data["messages"]]
        except (KeyError, TypeError, IndexError, InvalidMessageError) as exc:
            raise CliError(f"{path}: not a valid session-migrator export ({exc})") from None
        fields = {k: data.get(k) for k in ("session_id", "workspace", "metadata")}
        return messages, fields
    try:
        return messages_from_openai(data), {}
    except InvalidMessageError as exc:
        raise CliError(f"{path}: {exc}") from None


def run_import(args: argparse.Namespace) -> int:
    messages, fields = _parse_import(args.file, _read_file(args.file))
    session_id = args.session_id or fields.get("session_id")
    if not session_id:
        raise CliError("--session-id is required: the id of the session to append to")
    workspace = args.workspace or fields.get("workspace") or "default"
    with _store(args) as store:
        existing = store.get_session(session_id) if args.workspace else None
        if existing is not None and existing.workspace != args.workspace:
            raise CliError(
                f"session {session_id!r} is in workspace {existing.workspace!r}, not "
                f"{args.workspace!r}: --workspace only places a new session (leave it out to "
                "append, or choose another --session-id)"
            )
        added = store.append(
            session_id,
            messages,
            workspace=workspace,
            metadata=fields.get("metadata"),
            idempotency_key=args.idempotency_key,
        )
        info = store.get_session(session_id)
    assert info is not None
    if args.json:
        print_json(
            {
                "session_id": session_id,
                "read": len(messages),
                "appended": added,
                "skipped": len(messages) - added,
                "message_count": info.message_count,
            }
        )
    else:
        skipped = len(messages) - added
        note = f" ({skipped} already stored)" if skipped else ""
        print(
            f"appended {added} of {len(messages)} messages to session {session_id!r}{note}; "
            f"it now has {info.message_count}"
        )
    return 0
