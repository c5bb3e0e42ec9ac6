"""``--recall-scope``: recall from a session's other sessions too, for the commands that fit a
stored session (``sessions show --strategy``) or a conversation of one (``migrate --session``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from session_migrator.cli._common import CliError
from session_migrator.recall._related import SCOPES

if TYPE_CHECKING:
    from session_migrator.migration._report import MigrationReport
    from session_migrator.recall._related import RelatedSessions
    from session_migrator.store import BaseSessionStore

__all__ = ["add_recall_scope", "related_for_file", "related_from_args", "related_row"]


def add_recall_scope(parser: argparse.ArgumentParser, *, from_file: bool = False) -> None:
    """``--recall-scope`` on ``parser``; ``from_file``: and ``--session``/``--store``, naming
    the stored session a conversation read from a file is."""
    parser.add_argument(
        "--recall-scope",
        choices=SCOPES,
        default="session",
        help="also bring back, as dated excerpts, the relevant exchanges of the session's other "
        "sessions: those of its user (metadata user_id) or of its workspace (default: session, "
        "only its own turns)",
    )
    if from_file:
        parser.add_argument(
            "--session",
            metavar="ID",
            help="the stored session FILE is of (--recall-scope user or workspace recalls from "
            "its user's or workspace's other sessions)",
        )
        parser.add_argument(
            "--store",
            metavar="URL",
            help="the store of --session (default: SESSION_MIGRATOR_STORE or the embedded "
            "SQLite store)",
        )


def related_from_args(
    store: BaseSessionStore, session_id: str, args: argparse.Namespace
) -> RelatedSessions | None:
    """The other sessions ``--recall-scope`` names (``None`` for the session scope); those the
    store's search index finds for ``--query`` (else the session's newest user message) first."""
    if args.recall_scope == "session":
        return None
    from session_migrator.store import related_sessions

    query = getattr(args, "query", None) or store.load(session_id)
    return related_sessions(store, session_id, args.recall_scope, query=query)


def related_for_file(args: argparse.Namespace) -> RelatedSessions | None:
    """The other sessions of ``migrate --session ID --recall-scope ...``."""
    if args.recall_scope == "session":
        if args.session:
            raise CliError(
                "--session names whose other sessions to recall from: add --recall-scope user "
                "or --recall-scope workspace"
            )
        return None
    if not args.session:
        raise CliError(
            f"--recall-scope {args.recall_scope} needs --session ID: the stored session whose "
            f"{args.recall_scope}'s other sessions to recall from"
        )
    from session_migrator._errors import SessionNotFoundError
    from session_migrator.store import open_store

    store = open_store(args.store)
    try:
        if store.get_session(args.session) is None:
            raise SessionNotFoundError(args.session)
        return related_from_args(store, args.session, args)
    finally:
        store.close()


def related_row(report: MigrationReport) -> list[Any]:
    """The report table's row on what came from other sessions."""
    ids = report.related_ids
    count = sum(len(v) for v in ids.values())
    return ["from other sessions", f"{count} message(s) of {len(ids)} session(s)"]
