"""``handoff PATH --to claude-code --model MODEL``: continue a coding agent's session in Claude
Code, fitted to the model it will run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from session_migrator.cli._common import CliError
from session_migrator.importers import FORMATS, import_file, write_claude_code

TARGETS = ("claude-code",)


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
    from session_migrator.migration._migrate import migrate

    path = Path(args.path).expanduser()
    if not path.is_file():
        raise CliError(f"no session file at {str(path)!r}: give the path of a .jsonl session")
    result = None
    errors: list[str] = []
    for kind in [args.source] if args.source else list(FORMATS):
        try:
            result = import_file(kind, path)
            break
        except Exception as exc:  # the other format may read it
            errors.append(f"{kind}: {exc}")
    if result is None:
        raise CliError(f"cannot read {str(path)!r} as a session file ({'; '.join(errors)})")
    session = result.session
    fitted = migrate(list(session.messages), args.model, source_model=result.source_model)
    cwd = args.cwd or session.metadata.get("cwd") or str(Path.cwd())
    branch = session.metadata.get("git_branch") or ""
    sid, written = write_claude_code(
        fitted.messages,
        home=args.home,
        cwd=str(cwd),
        git_branch=str(branch),
        session_id=args.session_id,
        model=args.model,
    )
    report = fitted.report
    print(
        f"wrote {written} ({len(fitted.messages)} of {len(session.messages)} messages, "
        f"{report.tokens_after:,} of {report.budget:,} tokens: {report.decision})",
        file=sys.stderr,
    )
    print(f"cd {cwd} && claude --resume {sid} --model {args.model}")
    return 0
