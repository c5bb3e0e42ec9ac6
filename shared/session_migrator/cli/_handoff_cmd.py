"""``handoff [PATH] --to claude-code|codex|gemini-cli|opencode --model MODEL``: continue a coding
agent's session in Claude Code, Codex, Gemini CLI or OpenCode, fitted to the model it will run.
Without PATH, the newest session of the working directory (``--cwd``, default the current one)
that Claude Code or Codex (``--from``) keeps."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from session_migrator._errors import ImportFormatError, SessionMigratorError
from session_migrator.cli._common import CliError
from session_migrator.importers import FORMATS, TARGETS, handoff


def register(sub: Any) -> None:
    p = sub.add_parser(
        "handoff",
        help=(
            "continue a Codex or Claude Code session in Claude Code, Codex, Gemini CLI or "
            "OpenCode, fitted to its model"
        ),
        description=(
            "Read an agent's session file (Codex rollout or Claude Code session), fit it to the "
            "target model's window, and write it where the target agent looks for its sessions "
            "(Claude Code: ~/.claude/projects/<project>/<id>.jsonl; Codex: "
            "$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl, ~/.codex by default; "
            "Gemini CLI: ~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl; OpenCode: an "
            "export under ~/.local/share/opencode/handoff/ that the printed command imports), in "
            "its working directory and branch. Without PATH, the newest session of the working "
            "directory (--cwd, default the current one) that Claude Code or Codex (--from) keeps "
            "is continued. What the source agent's harness told its model about itself (its own "
            "prompt, sandbox, environment and reminders) is left out: the target sends its own. "
            "Prints the commands that resume it, interactive then headless, and a short brief of "
            "the session (its Markdown memory). The source file is not changed."
        ),
    )
    p.add_argument(
        "path",
        metavar="PATH",
        nargs="?",
        help="the session file to continue (default: the newest session of --cwd)",
    )
    p.add_argument("--to", choices=TARGETS, required=True, help="the agent to continue in")
    p.add_argument(
        "--model",
        required=True,
        help="the model the target agent runs (OpenCode: provider/model)",
    )
    p.add_argument(
        "--from", dest="source", choices=tuple(FORMATS), help="the file's format (default: found)"
    )
    p.add_argument(
        "--cwd",
        help=(
            "the working directory: without PATH, whose newest session to continue (default: "
            "the current one); with PATH, where the session continues (default: its own)"
        ),
    )
    p.add_argument(
        "--home",
        type=Path,
        help=(
            "the home folder (default: ~; for Codex, $CODEX_HOME when it is set; for Gemini CLI, "
            "$GEMINI_CLI_HOME)"
        ),
    )
    p.add_argument(
        "--session-id",
        help=(
            "the new session's id (default: a new one; Codex and Gemini CLI need a UUID, "
            "OpenCode an id starting with ses)"
        ),
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--store",
        metavar="URL",
        help="keep the whole source session in this store (default: the embedded SQLite store)",
    )
    where.add_argument(
        "--no-store", action="store_true", help="do not keep the source session in a store"
    )
    p.add_argument(
        "--no-brief", action="store_true", help="print the resume commands only, not the brief"
    )
    p.set_defaults(handler=run_handoff)


def run_handoff(args: argparse.Namespace) -> int:
    store = None
    if not args.no_store:
        from session_migrator.store import open_store

        store = open_store(args.store)
    try:
        done = handoff(
            args.path or None,
            to=args.to,
            model=args.model,
            home=args.home,
            cwd=args.cwd,
            session_id=args.session_id,
            source=args.source,
            store=store,
        )
    except ImportFormatError as exc:
        raise CliError(str(exc)) from None
    except ValueError as exc:  # (a --session-id Codex cannot take)
        if isinstance(exc, SessionMigratorError):
            raise
        raise CliError(str(exc)) from None
    finally:
        if store is not None:
            store.close()
    report = done.report
    if args.path is None:
        print(f"continuing {done.source_path} ({done.source_format})", file=sys.stderr)
    print(
        f"wrote {done.path} ({done.messages} of {done.source_messages} messages, "
        f"{report.tokens_after:,} of {report.budget:,} tokens: {report.decision})",
        file=sys.stderr,
    )
    if done.harness_left_out:
        kinds = ", ".join(
            f"{kind} x{n}" if n > 1 else kind for kind, n in done.harness_left_out.items()
        )
        print(
            f"left out the source agent's harness: {done.harness_tokens:,} tokens ({kinds}; "
            f"{done.harness_messages} message(s) whole); the target sends its own",
            file=sys.stderr,
        )
    if store is not None:
        print(
            f"kept the whole source session in {store.url} as {done.stored_session_id!r} "
            f"({done.stored_messages} message(s) newly stored)",
            file=sys.stderr,
        )
    for command in done.commands:
        print(command)
    if not args.no_brief and done.brief:
        print()
        print(done.brief.rstrip("\n"))
    return 0
