"""``import codex|claude-code PATH...``: read agent session files into the store.

Each file is parsed completely before anything is written, and one file is one atomic store
append, so a damaged file never leaves half a session behind. Importing a file again stores
nothing new (message ids are derived from the source). With ``--to MODEL`` the imported session
is also migrated, and ``-o OUT`` writes the resulting messages (or, without ``--to``, the whole
imported session) as OpenAI-format JSON.

Exit codes: 0 all files imported; 1 some files of several could not be read (the others were
imported); 2 a user mistake (one unreadable file, a bad option).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from session_migrator._errors import ImportFormatError
from session_migrator.cli._common import CliError, add_window_option, json_text, print_json, table
from session_migrator.cli._embedding_options import add_embeddings_option, embeddings_from_args
from session_migrator.importers import FORMATS, ImportResult, find_session_files, import_file
from session_migrator.messages._messages import messages_to_openai

if TYPE_CHECKING:
    from session_migrator.migration._report import MigrationResult
    from session_migrator.store import BaseSessionStore

_STRATEGIES = ("auto", "trim", "summarize", "recall")
_TABLE_LIMIT = 30


def register(sub: Any) -> None:
    p = sub.add_parser(
        "import",
        help="import Codex or Claude Code session files into the store",
        description=(
            "Import Codex rollout files (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl, and any "
            ".jsonl whose first line is a session_meta) or Claude Code sessions "
            "(~/.claude/projects/<project>/<session>.jsonl; sub-agent transcripts under "
            "<session>/subagents/ become sessions of their own). PATH is a file or a directory "
            "searched recursively. Tool calls stay paired with their results; damaged lines are "
            "skipped and counted; sessions are counted by id."
        ),
    )
    p.add_argument("format", choices=tuple(FORMATS), metavar="{codex,claude-code}")
    p.add_argument("paths", nargs="+", metavar="PATH")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--store", metavar="URL", help="store URL (default: the embedded SQLite store)"
    )
    where.add_argument(
        "--no-store", action="store_true", help="read and convert only; store nothing"
    )
    p.add_argument("--session-id", metavar="ID", help="store under this id (one file only)")
    p.add_argument(
        "--workspace",
        default="default",
        metavar="NAME",
        help="workspace of new sessions (default: %(default)s)",
    )
    p.add_argument(
        "--to",
        metavar="MODEL",
        dest="model",
        help="also migrate the imported session to MODEL (one file only)",
    )
    add_window_option(p, "--to")
    p.add_argument(
        "--strategy", choices=_STRATEGIES, help="how to fit it --to MODEL (default: auto)"
    )
    add_embeddings_option(p, what="recall (with --to)")
    p.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="write the migrated (or, without --to, the imported) messages as JSON; '-' for stdout",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(handler=run_import)


@dataclass
class _Outcome:
    results: list[tuple[ImportResult, int | None]] = field(default_factory=list)
    failed: list[tuple[Path, str]] = field(default_factory=list)


def run_import(args: argparse.Namespace) -> int:
    files: list[Path] = []
    for raw in args.paths:
        try:
            found = find_session_files(args.format, raw)
        except ImportFormatError as exc:
            raise CliError(str(exc)) from None
        if not found:
            raise CliError(f"{raw}: no .jsonl session files found")
        files.extend(p for p in found if p not in files)
    if not args.model and (args.strategy or args.context_window):
        raise CliError("--strategy and --context-window fit the session --to a model: add --to")
    if not args.model and args.embeddings != "none":
        raise CliError("--embeddings steers the fit of the session --to a model: add --to")
    single = len(files) == 1
    if not single and (args.session_id or args.model or args.output):
        raise CliError(
            f"--session-id, --to and -o work on one session; the paths hold {len(files)} files"
        )
    summary_out = sys.stderr if args.output == "-" else sys.stdout
    args.embedding_model = embeddings_from_args(args)  # a missing extra fails before any import
    store = None if args.no_store else _open_store(args.store)
    try:
        outcome = _import_all(args, files, store)
        migration = _migrate_and_write(args, outcome, store)
    finally:
        if store is not None:
            store.close()
    _report(args, outcome, store, migration, summary_out)
    return 1 if outcome.failed else 0


def _open_store(url: str | None) -> BaseSessionStore:
    from session_migrator.store import open_store

    return open_store(url)


def _import_all(
    args: argparse.Namespace, files: list[Path], store: BaseSessionStore | None
) -> _Outcome:
    outcome = _Outcome()
    show = len(files) > 1 and not args.no_progress and sys.stderr.isatty()
    progress = Progress(len(files), sys.stderr) if show else None
    for path in files:
        if progress is not None:
            progress.step(path.name)
        try:
            result = import_file(
                args.format, path, session_id=args.session_id, workspace=args.workspace
            )
        except ImportFormatError as exc:
            if len(files) == 1:
                raise
            outcome.failed.append((path, str(exc)))
            continue
        added = _store(store, result) if store is not None else None
        outcome.results.append((result, added))
    if progress is not None:
        progress.done()
    return outcome


def _store(store: BaseSessionStore, result: ImportResult) -> int:
    """Store the session (see :meth:`ImportResult.save`)."""
    return result.save(store)


def _migrate_and_write(
    args: argparse.Namespace, outcome: _Outcome, store: BaseSessionStore | None
) -> MigrationResult | None:
    if not outcome.results or not (args.model or args.output):
        return None
    result = outcome.results[0][0]
    migration = None
    messages = list(result.session.messages)
    if args.model:
        from session_migrator.migration._migrate import migrate, resolve_target

        migration = migrate(
            result.session,
            resolve_target(args.model, context_window=args.context_window),
            strategy=args.strategy or "auto",
            source_model=result.source_model,
            embeddings=args.embedding_model,
        )
        messages = migration.messages
        if store is not None and result.session.messages:
            _log(store, result, migration)
    if args.output:
        _write_json(args.output, messages_to_openai(messages))
    return migration


def _log(store: BaseSessionStore, result: ImportResult, migration: MigrationResult) -> None:
    from session_migrator.store import MigrationRecord

    rep = migration.report
    store.log_migration(
        MigrationRecord(
            session_id=result.session.id,
            from_model=result.source_model,
            to_model=rep.target,
            tokens_before=rep.tokens_before,
            tokens_after=rep.tokens_after,
            budget=rep.budget,
            strategy=rep.strategy,
            decision=rep.decision,
        )
    )


def _write_json(output: str, data: Any) -> None:
    text = json_text(data)
    if output == "-":
        sys.stdout.write(text)
        return
    path = Path(output)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)  # all or nothing: no half-written output file
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CliError(f"{output}: {exc.strerror}") from None


def _report(
    args: argparse.Namespace,
    outcome: _Outcome,
    store: BaseSessionStore | None,
    migration: MigrationResult | None,
    out: IO[str],
) -> None:
    results = outcome.results
    totals = {
        "files": len(results) + len(outcome.failed),
        "sessions": len(
            {(r.session.workspace, r.session.id) for r, _ in results if r.session.messages}
        ),
        "messages": sum(len(r.session.messages) for r, _ in results),
        "appended": sum(a or 0 for _, a in results) if store is not None else None,
        "skipped": sum(sum(r.skipped.values()) for r, _ in results),
        "warnings": sum(len(r.warnings) for r, _ in results),
        "failed": len(outcome.failed),
    }
    if args.json:
        data: dict[str, Any] = {
            "store": store.url if store is not None else None,
            "totals": totals,
            "files": [{**r.summary(), "appended": a} for r, a in results],
            "failed": [{"path": str(p), "error": e} for p, e in outcome.failed],
            "migration": migration.report.to_dict() if migration is not None else None,
        }
        if out is sys.stdout:
            print_json(data)
        else:
            out.write(json_text(data))
        return
    if len(results) <= _TABLE_LIMIT:
        rows = [
            [
                _short(r.session.id),
                len(r.session.messages),
                a,
                sum(len(m.tool_calls) for m in r.session.messages),
                r.source_model,
                r.observed_input_tokens,
                sum(r.skipped.values()),
                len(r.warnings),
            ]
            for r, a in results
        ]
        headers = [
            "session",
            "messages",
            "new",
            "tool calls",
            "source model",
            "observed input",
            "skipped",
            "warnings",
        ]
        if rows:
            print(table(headers, rows), file=out)
    for r, _ in results:
        for warning in r.warnings:
            print(f"warning: {r.path}: {warning}", file=sys.stderr)
    for _, error in outcome.failed:
        print(f"error: {error}", file=sys.stderr)  # the importers' messages name the path
    where = f" into {store.url}" if store is not None else " (not stored: --no-store)"
    new = f", {totals['appended']:,} new" if store is not None else ""
    print(
        f"imported {totals['sessions']} session(s), {totals['messages']:,} messages{new}, from "
        f"{len(results)} file(s){where}; {totals['skipped']:,} lines or items skipped"
        + (f"; {totals['failed']} file(s) failed" if outcome.failed else ""),
        file=out,
    )
    if migration is not None:
        rep = migration.report
        print(
            f"migrated to {rep.target}: {rep.decision}, {rep.tokens_before:,} -> "
            f"{rep.tokens_after:,} tokens (budget {rep.budget:,}, "
            f"{'exact' if rep.exact else 'estimated'}), {rep.messages_before} -> "
            f"{rep.messages_after} messages",
            file=out,
        )
    if args.output and args.output != "-":
        print(
            f"wrote the {'migrated' if migration else 'imported'} messages to {args.output}",
            file=out,
        )


def _short(value: str, width: int = 40) -> str:
    return value if len(value) <= width else value[: width - 1] + "…"


class Progress:
    """A one-line progress bar on ``stream``: ``[#####.....] 12/40 name``."""

    def __init__(self, total: int, stream: IO[str], width: int = 30) -> None:
        self.total = total
        self.count = 0
        self.stream = stream
        self.width = width

    def step(self, label: str) -> None:
        self.count += 1
        filled = self.width * self.count // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r[{bar}] {self.count}/{self.total} {_short(label, 40):<40}")
        self.stream.flush()

    def done(self) -> None:
        self.stream.write("\r" + " " * (self.width + 50) + "\r")
        self.stream.flush()
