"""``handoff PATH --to claude-code --model MODEL``: continue a coding agent's session in Claude
Code, fitted to the model it will run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from session_migrator._errors import ImportFormatError
from session_migrator.cli._common import CliError
from session_migrator.importers import FORMATS, TARGETS, handoff


def register(sub: Any) -> None:
    p = sub.add_parser(
        "handoff",
        help="continue a Codex or Claude Code session in Claude Code, fitted to its model",
        description=(
            "Read an agent's session file (Codex rollout or Claude Code session), fit it to the "
            "target model's window, and write it where the target agent looks for its sessions "
            "(~/.claude/projects/<project>/<id>.jsonl), in its working directory and branch. "
            "Prints the command that resumes it. The source file is not changed."
        ),
    )
    p.add_argument("path", metavar="PATH", help="the session file to continue")
    p.add_argument("--to", choices=TARGETS, required=True, help="the agent to continue in")
    p.add_argument("--model", required=True, help="the model the target agent runs")
    p.add_argument(
        "--from", dest="source", choices=tuple(FORMATS), help="the file's format (default: found)"
    )
    p.add_argument("--cwd", help="the working directory (default: the session's own)")
    p.add_argument("--home", type=Path, default=Path.home(), help="the home folder (default: ~)")
    p.add_argument("--session-id", help="the new session's id (default: a new UUID)")
    p.set_defaults(handler=run_handoff)


def run_handoff(args: argparse.Namespace) -> int:
    try:
        done = handoff(
            args.path,
            to=args.to,
            model=args.model,
            home=args.home,
            cwd=args.cwd,
            session_id=args.session_id,
            source=args.source,
        )
    except ImportFormatError as exc:
        raise CliError(str(exc)) from None
    report = done.report
    print(
        f"wrote {done.path} ({done.messages} of {done.source_messages} messages, "
        f"{report.tokens_after:,} of {report.budget:,} tokens: {report.decision})",
        file=sys.stderr,
    )
    print(done.command)
    return 0
