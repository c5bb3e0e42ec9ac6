"""Write the CLI's ``--help`` output into ``docs/cli.md`` (its ``## Reference`` section).

    python scripts/cli_reference.py          # rewrite the section
    python scripts/cli_reference.py --check  # exit 1 if the page is out of date

``tests/cli/test_cli_reference.py`` runs the check, so the page cannot drift from the CLI.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from session_migrator.cli._app import build_parser

PAGE = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
HEADING = "## Reference"
WIDTH = 100


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    """``(command line, parser)`` of the parser and every sub-command under it, depth first."""
    out = [(parser.prog, parser)]
    for action in parser._actions:  # argparse has no public walk of its sub-commands
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                out += _subparsers(sub)
    return out


def reference() -> str:
    """The Markdown of the reference section: one ``--help`` per command."""
    lines = [
        HEADING,
        "",
        "Generated from the CLI by `python scripts/cli_reference.py`; a test keeps it current.",
    ]
    for prog, parser in _subparsers(build_parser()):
        # a fixed width, whatever the terminal: the page is the same on every machine
        parser.formatter_class = functools.partial(parser.formatter_class, width=WIDTH)
        lines += ["", f"### `{prog}`", "", "```text", parser.format_help().rstrip(), "```"]
    return "\n".join(lines) + "\n"


def updated(page: str) -> str:
    """``page`` with its reference section (to the end of the page) replaced."""
    head, sep, _ = page.partition(HEADING)
    return (head if sep else page.rstrip() + "\n\n") + reference()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/cli.md is stale")
    args = parser.parse_args(argv)
    current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else "# Command line\n"
    new = updated(current)
    if args.check:
        if new != current:
            print(f"{PAGE} is out of date: run python scripts/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
