"""Entry point: builds the argument parser from the command modules and runs one command.

Each command module exposes ``register(subparsers)``, which adds its sub-command and sets
``handler`` (a function taking the parsed namespace and returning an exit code) as a default.
User mistakes raise :class:`~session_migrator.SessionMigratorError` (or ``CliError``) and end
as one line on stderr with exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from typing import TextIO

from session_migrator._errors import (
    SessionMigratorError,
    SessionNotFoundError,
    UnknownModelError,
)
from session_migrator._redact import redact_secrets
from session_migrator._version import __version__
from session_migrator.cli import (
    _facts_cmd,
    _handoff_cmd,
    _import_cmd,
    _mcp_cmd,
    _migrate_cmd,
    _models_cmd,
    _serve_cmd,
    _sessions_cmd,
)
from session_migrator.cli._common import TOO_DEEP, UNKNOWN_MODEL_REMEDY, CliError

_COMMANDS = (
    _models_cmd,
    _migrate_cmd,
    _import_cmd,
    _handoff_cmd,
    _mcp_cmd,
    _serve_cmd,
    _sessions_cmd,
    _facts_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="session-migrator",
        description=(
            "Move a conversation between models with different context windows and tokenizers."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _COMMANDS:
        module.register(sub)
    return parser


def _note(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    print(f"note: {redact_secrets(str(message))}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _note  # one line on stderr, not Python's warning format
            return int(handler(args))
    except (SessionMigratorError, CliError) as exc:
        if isinstance(exc, UnknownModelError):
            exc = exc.with_remedy(UNKNOWN_MODEL_REMEDY)
        elif isinstance(exc, SessionNotFoundError):
            store = getattr(args, "store", None)
            where = f" --store {store}" if store else ""
            exc = exc.with_remedy(
                f"List this store's sessions with `session-migrator sessions list --all{where}`, "
                "or import messages to create it."
            )
        print(f"error: {redact_secrets(str(exc))}", file=sys.stderr)
        return 2
    except RecursionError:  # input nested past what a parser takes, wherever it was read
        print(f"error: the input is {TOO_DEEP}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
