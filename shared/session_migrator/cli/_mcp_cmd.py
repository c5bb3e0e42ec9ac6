"""``mcp``: run the MCP server on stdio (needs the ``[mcp]`` extra)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


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
    p.set_defaults(handler=run_mcp)


def run_mcp(args: argparse.Namespace) -> int:
    from session_migrator.mcp_server import build_server

    server = build_server(args.store)  # MissingDependencyError names the install command
    if sys.stdin.isatty():
        print(
            "session-migrator MCP server on stdio: an MCP client starts this command and talks "
            "to it over stdin/stdout (see the README). Ctrl-C stops it.",
            file=sys.stderr,
        )
    server.run("stdio")
    return 0
