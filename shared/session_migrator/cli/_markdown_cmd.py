"""``sessions export ID --format markdown``: a stored session as a Markdown memory document.

Offline by default (see :func:`session_migrator.export_markdown`); ``--summarizer openai`` adds
a topic summary written by an OpenAI-compatible model (OpenAI, DeepSeek, Ollama, vLLM, ...).
"""

from __future__ import annotations

import argparse

from session_migrator._errors import SessionNotFoundError
from session_migrator.cli._common import CliError, print_json, whole_number, write_text
from session_migrator.cli._summarizer_options import add_summarizer_options, summarizer_from_args
from session_migrator.messages._messages import Session
from session_migrator.store import open_store
from session_migrator.summaries._memory_doc import DEFAULT_MAX_CHARS, export_markdown


def add_markdown_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``--format markdown``."""
    group = parser.add_argument_group("--format markdown")
    group.add_argument(
        "--max-chars",
        type=whole_number(200),
        metavar="N",
        help=f"the document's largest size in characters (default: {DEFAULT_MAX_CHARS:,})",
    )
    add_summarizer_options(
        group,
        choices=("openai",),
        default=None,
        help="add a topic summary written by an OpenAI-compatible model (default: none, offline)",
    )


def check_markdown_options(args: argparse.Namespace) -> None:
    """Refuse the options of ``--format markdown`` with another format."""
    given = [
        flag
        for flag, dest in (("--max-chars", "max_chars"), ("--summarizer", "summarizer"))
        if getattr(args, dest) is not None
    ]
    if args.format != "markdown" and given:
        raise CliError(f"{', '.join(given)}: these shape --format markdown; add it")


def run_markdown_export(args: argparse.Namespace) -> int:
    """Write the session's memory document to ``args.output`` (``-``: stdout)."""
    summarizer = summarizer_from_args(args)
    store = open_store(args.store)
    try:
        info = store.get_session(args.session_id)
        if info is None:
            raise SessionNotFoundError(args.session_id)
        messages = store.load(args.session_id, full=True)
    finally:
        store.close()
    session = Session(info.id, tuple(messages), workspace=info.workspace, metadata=info.metadata)
    text = export_markdown(
        session, max_chars=args.max_chars or DEFAULT_MAX_CHARS, summarizer=summarizer
    )
    if write_text(args.output, text):
        return 0
    if args.json:
        print_json(
            {
                "session_id": info.id,
                "count": len(messages),
                "output": args.output,
                "format": "markdown",
                "chars": len(text),
            }
        )
    else:
        print(
            f"wrote the memory document of session {info.id!r} ({len(messages)} messages, "
            f"{len(text):,} characters) to {args.output}"
        )
    return 0
