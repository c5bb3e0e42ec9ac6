"""``models refresh``: fetch context windows from provider endpoints into the live cache.

The lead wires this into ``models``: :func:`add_refresh_arguments` fills the sub-command's
parser and :func:`run_refresh` runs it. Exit codes: 0 when at least one source answered (failed
ones are listed), 2 with a one-line error on stderr when every source failed.
"""

from __future__ import annotations

import argparse
import os
import sys

from session_migrator.cli._common import print_json, table
from session_migrator.models._live import DEFAULT_SOURCES, KINDS, RefreshResult, refresh

__all__ = ["add_refresh_arguments", "run_refresh"]


def add_refresh_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``models refresh`` options to ``parser``."""
    parser.add_argument(
        "--from",
        dest="urls",
        action="append",
        metavar="URL",
        help=(
            "a source to fetch (repeatable): an OpenAI-compatible server (http://host:8000 or "
            ".../v1/models), OpenRouter (https://openrouter.ai/api/v1/models) or Ollama "
            "(http://localhost:11434). Default: the sources already cached, else "
            f"{', '.join(DEFAULT_SOURCES)}"
        ),
    )
    parser.add_argument(
        "--kind",
        choices=KINDS,
        default=None,
        help="the sources' API (default: detected from the URL and the answer)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="per-request timeout (default: 10)",
    )
    parser.add_argument(
        "--api-key-env",
        metavar="VAR",
        default=None,
        help="send the key in this environment variable as a bearer token",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def _as_json(result: RefreshResult) -> dict[str, object]:
    return {
        "ok": result.ok,
        "cache": str(result.path),
        "models_found": result.models_found,
        "sources": [
            {
                "url": s.url,
                "kind": s.kind,
                "ok": s.ok,
                "models": s.models,
                "skipped": list(s.skipped),
                "error": s.error,
                "fetched_at": s.fetched_at,
            }
            for s in result.sources
        ],
    }


def run_refresh(args: argparse.Namespace) -> int:
    """Run ``models refresh`` for parsed ``args``; returns the exit code."""
    api_key: str | None = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            print(f"error: the environment variable {args.api_key_env} is not set", file=sys.stderr)
            return 2
    timeout = args.timeout if args.timeout is not None else 10.0
    if timeout <= 0:
        print("error: --timeout must be positive", file=sys.stderr)
        return 2
    result = refresh(args.urls, kind=args.kind, timeout=timeout, api_key=api_key)
    if args.json:
        print_json(_as_json(result))
    else:
        rows = [
            [
                "ok" if s.ok else "failed",
                s.url,
                s.kind,
                s.models if s.ok else None,
                len(s.skipped) if s.ok else None,
                s.error or "",
            ]
            for s in result.sources
        ]
        print(table(["status", "source", "kind", "models", "no window", "error"], rows))
        if result.ok:
            print(f"\n{result.models_found:,} model windows cached in {result.path}")
    if not result.ok:
        if not result.sources:
            print("error: no source to refresh from; pass --from URL", file=sys.stderr)
        else:
            print(f"error: every source failed: {'; '.join(result.errors)}", file=sys.stderr)
        return 2
    return 0
