"""``serve``: run the HTTP API under uvicorn, on TCP or a Unix socket (the ``[server]`` extra)."""

from __future__ import annotations

import argparse
import ipaddress
import sys
from typing import Any

from session_migrator._errors import MissingDependencyError
from session_migrator.cli._summarizer_options import (
    add_summarizer_options,
    add_user_facts_option,
    fact_extractor_from_args,
    summarizer_from_args,
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="run the HTTP API (for hosts that are not Python)",
        description=(
            "Serve the session store and fitting over HTTP (/v1, see docs/http-api.md). With no "
            "token (SESSION_MIGRATOR_API_TOKEN or --tokens-file) it serves loopback or a Unix "
            "socket only. Needs the [server] extra."
        ),
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="TCP port (8765)")
    p.add_argument("--socket", metavar="PATH", help="a Unix domain socket instead of TCP")
    p.add_argument("--store", metavar="URL", help="store URL (default: the embedded SQLite store)")
    p.add_argument("--tokens-file", metavar="PATH", help="JSON tokens file (docs/http-api.md)")
    p.add_argument("--max-body", type=int, default=8 * 1024 * 1024, help="bytes (8 MiB)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds a request may take (60)")
    p.add_argument(
        "--mcp",
        action="store_true",
        help="also serve the MCP tools over streamable HTTP at /mcp/ (unscoped tokens only)",
    )
    add_summarizer_options(
        p,
        choices=("extractive", "openai"),
        default="extractive",
        help="'openai': an OpenAI-compatible model writes the summaries of what a session's "
        "context cuts, in the background (no call waits for it)",
    )
    add_user_facts_option(p)
    p.set_defaults(handler=run_serve)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from session_migrator.server import Tokens, create_app
    except ImportError as exc:
        raise MissingDependencyError(
            "session-migrator serve", "server", why=f"{exc.name} is missing"
        ) from None
    tokens = Tokens.load(args.tokens_file)
    if not tokens and args.socket is None and not _loopback(args.host):
        print(
            f"session-migrator: refusing to serve {args.host} with no token: anyone who reaches "
            "it would read every session. Set SESSION_MIGRATOR_API_TOKEN (or --tokens-file), or "
            "serve 127.0.0.1 or a --socket.",
            file=sys.stderr,
        )
        return 2
    summarizer = summarizer_from_args(args)
    app = create_app(
        args.store,
        tokens=tokens,
        max_body=args.max_body,
        timeout=args.timeout,
        mcp=args.mcp,
        host=args.host,
        summarizer=summarizer,
        user_facts=args.user_facts != "off",
        fact_extractor=fact_extractor_from_args(args, summarizer),
    )
    where = args.socket or f"http://{args.host}:{args.port}"
    print(f"session-migrator HTTP API on {where} ({len(tokens)} token(s))", file=sys.stderr)
    if args.socket:
        uvicorn.run(app, uds=args.socket, log_level="warning", ws="none")
    else:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning", ws="none")
    return 0
