"""``mcp``: run the MCP server on stdio (needs the ``[mcp]`` extra)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from session_migrator.cli._embedding_options import add_embeddings_option, embeddings_from_args
from session_migrator.cli._summarizer_options import (
    add_summarizer_options,
    add_user_facts_option,
    fact_extractor_from_args,
    summarizer_from_args,
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "mcp",
        help="run the MCP server on stdio (for Claude Code, Cursor, Codex, Goose, ...)",
        description=(
            "Serve the model-window, migration and session-store tools over MCP on stdin/stdout. "
            "Add it to your MCP client's configuration; see the README. Needs the [mcp] extra."
        ),
    )
    p.add_argument(
        "--store",
        metavar="URL",
        help="store URL for the session tools (default: the embedded SQLite store)",
    )
    add_embeddings_option(p, what="the recall of migrate_session and session_context")
    add_summarizer_options(
        p,
        choices=("extractive", "openai"),
        default="extractive",
        help="'openai': an OpenAI-compatible model writes the summaries of what a session's "
        "context cuts, in the background (no call waits for it)",
    )
    add_user_facts_option(p)
    p.set_defaults(handler=run_mcp)


def run_mcp(args: argparse.Namespace) -> int:
    from session_migrator.mcp_server import build_server

    # a missing extra (mcp, local-embeddings) is a MissingDependencyError naming what to install
    summarizer = summarizer_from_args(args)
    server = build_server(
        args.store,
        embeddings=embeddings_from_args(args),
        summarizer=summarizer,
        user_facts=args.user_facts != "off",
        fact_extractor=fact_extractor_from_args(args, summarizer),
    )
    if sys.stdin.isatty():
        print(
            "session-migrator MCP server on stdio: an MCP client starts this command and talks "
            "to it over stdin/stdout (see the README). Ctrl-C stops it.",
            file=sys.stderr,
        )
    server.run("stdio")
    return 0
