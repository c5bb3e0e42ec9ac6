"""``sessions list|show|export|import|delete|erase|purge``: the session store from the shell.

Every sub-command takes ``--store URL`` (default: ``SESSION_MIGRATOR_STORE``, else the embedded
SQLite store) and ``--json``. Exports are OpenAI-format JSON by default, which
``sessions import`` reads back; ``--format native`` writes the store's own lossless layout
(also read by ``import``), for messages that the OpenAI format cannot carry exactly;
``--format markdown`` a memory document for an agent to read (see ``_markdown_cmd``). Export and
import themselves are in ``_sessions_files``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any

from session_migrator._errors import SessionNotFoundError
from session_migrator.cli._common import (
    CliError,
    add_window_option,
    print_json,
    table,
)
from session_migrator.cli._embedding_options import add_embeddings_option, embeddings_from_args
from session_migrator.cli._markdown_cmd import (
    add_markdown_options,
)
from session_migrator.cli._recall_options import add_recall_scope, related_from_args
from session_migrator.cli._sessions_files import _store, run_export, run_import
from session_migrator.messages._messages import Message
from session_migrator.migration._strategies import STRATEGIES
from session_migrator.store import BaseSessionStore, SessionInfo

TEXT_WIDTH = 70


def register(sub: Any) -> None:
    p = sub.add_parser(
        "sessions",
        help="list, show, export, import and delete stored sessions",
        description="Work with the session store (the full conversation logs).",
    )
    cmds = p.add_subparsers(dest="sessions_command", metavar="ACTION", required=True)

    def action(name: str, help_text: str, handler: Any) -> argparse.ArgumentParser:
        a: argparse.ArgumentParser = cmds.add_parser(name, help=help_text, description=help_text)
        a.add_argument(
            "--store",
            metavar="URL",
            help="store URL (default: SESSION_MIGRATOR_STORE or the embedded SQLite store)",
        )
        a.add_argument("--json", action="store_true", help="print JSON for scripts")
        a.set_defaults(handler=handler)
        return a

    a = action("list", "list the sessions of a workspace", run_list)
    scope = a.add_mutually_exclusive_group()
    scope.add_argument("--workspace", default="default", metavar="W", help="(default: default)")
    scope.add_argument("--all", action="store_true", help="every workspace")

    a = action("show", "print a session's messages, optionally fitted to a model", run_show)
    a.add_argument("session_id", metavar="ID")
    a.add_argument("--model", metavar="M", help="show the usage of M's window (and fit to it)")
    a.add_argument("--strategy", choices=STRATEGIES, help="show the session fitted to --model")
    add_window_option(a, "--model")
    add_recall_scope(a)
    add_embeddings_option(a, what="recall (with --strategy)")
    a.add_argument("--full", action="store_true", help="show offloaded tool outputs in full")
    a.add_argument("--tail", type=int, metavar="N", help="only the last N messages")

    a = action("export", "write a session's messages to a JSON or Markdown file", run_export)
    a.add_argument("session_id", metavar="ID")
    a.add_argument("-o", "--output", metavar="FILE", default="-", help="(default: stdout)")
    a.add_argument(
        "--format",
        choices=("openai", "native", "markdown"),
        default="openai",
        help="openai: a message list (default); native: every field, exactly; markdown: a "
        "memory document (facts, decisions, files touched, open tasks) for an agent to read",
    )
    add_markdown_options(a)

    a = action("import", "append the messages of a JSON file to a session", run_import)
    a.add_argument("file", metavar="FILE", help="OpenAI-format message list, or a native export")
    a.add_argument("--session-id", metavar="ID", help="(default: a native export's own)")
    a.add_argument("--workspace", metavar="W", help="for a new session (default: default)")
    a.add_argument(
        "--idempotency-key",
        metavar="KEY",
        help="name this batch: importing the same file again with the same KEY stores nothing "
        "new (without it, messages without an id are always appended)",
    )

    a = action("delete", "delete a session, or some of its messages", run_delete)
    a.add_argument("session_id", metavar="ID")
    what = a.add_mutually_exclusive_group()
    what.add_argument("--message", action="append", metavar="MID", help="a message id (repeat)")
    what.add_argument("--range", nargs=2, metavar=("FIRST", "LAST"), help="inclusive id range")
    what.add_argument("--tool", metavar="NAME", help="a tool's calls and their results")

    a = action(
        "erase",
        "delete every session of a workspace or of a user, or every vector of a model",
        run_erase,
    )
    who = a.add_mutually_exclusive_group(required=True)
    who.add_argument("--workspace", metavar="W")
    who.add_argument(
        "--user",
        metavar="USER_ID",
        help="sessions whose metadata user_id is this (42 also matches the number 42)",
    )
    who.add_argument(
        "--vectors",
        metavar="MODEL_KEY",
        help="the vectors kept under an embedding model's key (a model renamed or retired); "
        "the messages stay",
    )

    a = action("purge", "delete messages older than a number of days", run_purge)
    a.add_argument("--older-than", type=float, required=True, metavar="DAYS")


def _time(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%SZ")


def _info_dict(info: SessionInfo) -> dict[str, Any]:
    out = asdict(info)
    out["created_at"] = info.created_at.isoformat()
    out["updated_at"] = info.updated_at.isoformat()
    out["metadata"] = dict(info.metadata)
    return out


# -- list -------------------------------------------------------------------------------------


def run_list(args: argparse.Namespace) -> int:
    workspace = None if args.all else args.workspace
    with _store(args) as store:
        infos = store.list_sessions(workspace)
        url = store.url
    if args.json:
        print_json(
            {
                "workspace": workspace,
                "count": len(infos),
                "sessions": [_info_dict(i) for i in infos],
            }
        )
        return 0
    where = "all workspaces" if workspace is None else f"workspace {workspace!r}"
    if not infos:
        print(f"No sessions in {where} of {url}.")
        return 0
    rows = [
        [
            i.id,
            i.workspace,
            i.message_count,
            _time(i.created_at),
            _time(i.updated_at),
            str(i.metadata.get("user_id", "-")),
        ]
        for i in infos
    ]
    print(table(["session", "workspace", "messages", "created", "last activity", "user"], rows))
    print(f"{len(infos)} session(s) in {where} of {url}")
    return 0


# -- show -------------------------------------------------------------------------------------


def _one_line(message: Message) -> str:
    text = message.text
    if not text and message.tool_calls:
        text = ", ".join(f"-> {c.name}({c.arguments})" for c in message.tool_calls)
    elif message.tool_calls:
        text += " " + ", ".join(f"-> {c.name}(...)" for c in message.tool_calls)
    text = " ".join(text.split())
    return text if len(text) <= TEXT_WIDTH else text[: TEXT_WIDTH - 3] + "..."


def run_show(args: argparse.Namespace) -> int:
    if args.strategy and not args.model:
        raise CliError("--strategy needs --model: the model to fit the session to")
    if args.recall_scope != "session" and not args.strategy:
        raise CliError("--recall-scope needs --strategy (and --model): it changes what is sent")
    if args.embeddings != "none" and not args.strategy:
        raise CliError("--embeddings needs --strategy (and --model): it steers what is recalled")
    if args.tail is not None and args.tail < 0:
        raise CliError("--tail must not be negative")
    with _store(args) as store:
        info = store.get_session(args.session_id)
        if info is None:
            raise SessionNotFoundError(args.session_id)
        messages = store.load(args.session_id, full=args.full)
        fitted = _fit(store, args, messages) if args.model else None
    shown = fitted["messages"] if fitted else messages
    total = len(shown)
    if args.tail is not None:
        shown = shown[max(0, total - args.tail) :]
    if args.json:
        out: dict[str, Any] = {
            "session": _info_dict(info),
            "count": len(shown),
            "total": total,
            "messages": [m.to_openai() for m in shown],
        }
        if fitted:
            out["usage"] = fitted["usage"].to_dict()
            if fitted["report"] is not None:
                out["report"] = fitted["report"].to_dict()
        print_json(out)
        return 0
    print(
        f"Session {info.id!r} in workspace {info.workspace!r}: {info.message_count} messages, "
        f"last activity {_time(info.updated_at)}"
    )
    if fitted:
        _print_usage(fitted["usage"], fitted["report"])
    print(table(*_message_table(shown, total, fitted["counts"] if fitted else None)))
    if len(shown) < total:
        print(f"(the last {len(shown)} of {total} messages; drop --tail to see all)")
    return 0


def _message_table(
    shown: Sequence[Message], total: int, counts: dict[str, int] | None
) -> tuple[list[str], list[list[Any]]]:
    """Headers and rows: position, id, role, tokens (when counted), note (when any), text."""
    notes = ["offloaded" if (m.marker or {}).get("kind") == "offloaded" else "" for m in shown]
    headers = ["#", "id", "role"]
    headers += ["tokens"] if counts is not None else []
    headers += ["note"] if any(notes) else []
    rows: list[list[Any]] = []
    for n, (m, note) in enumerate(zip(shown, notes, strict=True), start=total - len(shown) + 1):
        row: list[Any] = [n, m.id, m.role]
        row += [counts.get(m.id)] if counts is not None else []
        row += [note] if any(notes) else []
        rows.append([*row, _one_line(m)])
    return [*headers, "text"], rows


def _fit(store: BaseSessionStore, args: argparse.Namespace, messages: list[Message]) -> Any:
    from session_migrator.counting._tokens import counter_for
    from session_migrator.migration._migrate import migrate, resolve_target
    from session_migrator.store import usage
    from session_migrator.store._usage import cached_counter

    window = resolve_target(args.model, context_window=args.context_window)
    counter = counter_for(window.tokenizer, model=window.name)
    cached_counter(store, args.session_id, messages, counter)
    result = None
    shown = messages
    if args.strategy:
        from session_migrator.recall._embeddings import StoredVectors

        related = related_from_args(store, args.session_id, args)
        model = embeddings_from_args(args)
        # the vectors are kept in the store, beside each message: the next show embeds only
        # the new messages and the question
        vectors = None if model is None else StoredVectors(model, store, args.session_id)
        result = migrate(
            messages,
            window,
            strategy=args.strategy,
            counter=counter,
            related=related,
            embeddings=vectors,
        )
        shown = result.messages
    return {
        "usage": usage(store, args.session_id, window, strategy=args.strategy),
        "report": result.report if result else None,
        "messages": shown,
        "counts": {m.id: counter.count_message(m) for m in shown},
    }


def _print_usage(u: Any, report: Any) -> None:
    kind = "exact" if u.exact else "estimated"
    print(
        f"Usage for {u.model}: {u.tokens:,} of a {u.budget:,}-token input budget "
        f"({u.share:.1%}, {kind}, {u.counter}); window {u.context_window:,}, "
        f"input cap {u.max_input_tokens:,}, reserved output {u.reserved_output:,}"
    )
    if report is None:
        print(
            "The whole session fits."
            if u.fits
            else f"The whole session ({u.session_tokens:,} tokens) does not fit: add --strategy "
            "to see what would be sent."
        )
        return
    print(
        f"Fitted with {report.strategy}: {report.decision}, {report.tokens_before:,} -> "
        f"{report.tokens_after:,} tokens, {report.messages_before} -> "
        f"{report.messages_after} messages (the stored session is unchanged)"
    )
    for note in list(report.fallbacks) + list(report.notes):
        print(f"note: {note}")


# -- delete / erase / purge -------------------------------------------------------------------


def _done(args: argparse.Namespace, text: str, **fields: Any) -> int:
    if args.json:
        print_json(fields)
    else:
        print(text)
    return 0


def run_delete(args: argparse.Namespace) -> int:
    sid = args.session_id
    with _store(args) as store:
        if store.get_session(sid) is None:
            raise SessionNotFoundError(sid)
        if args.message:
            n = store.delete_messages(sid, args.message)
        elif args.range:
            n = store.delete_range(sid, args.range[0], args.range[1])
        elif args.tool:
            n = store.delete_by_tool(sid, args.tool)
        else:
            store.delete_session(sid)
            return _done(args, f"deleted session {sid!r}", session_id=sid, deleted_session=True)
        unpaired = _unpaired(store.load(sid)) if n and not args.tool else []
    text = f"deleted {n} message(s) from session {sid!r}"
    if unpaired:
        text += (
            f"\nnote: {len(unpaired)} message(s) lost their tool call or results "
            f"({', '.join(unpaired)}); they stay stored and are left out of what a model is sent "
            "(delete them with --message, or a tool's calls and results with --tool)"
        )
    return _done(args, text, session_id=sid, deleted_messages=n, unpaired=unpaired)


def _unpaired(messages: list[Message]) -> list[str]:
    """The ids of the tool results without their call and the calls without all their results
    (the newest call, which may still get its results, excepted)."""
    from session_migrator.fitting._units import broken_for_good

    return [messages[i].id for i in broken_for_good(messages)]


def run_erase(args: argparse.Namespace) -> int:
    with _store(args) as store:
        if args.vectors is not None:
            n = store.delete_vectors(args.vectors)
            text = f"erased the vectors of {n} message(s) under model key {args.vectors!r}"
            return _done(args, text, erased_vectors=n, model_key=args.vectors)
        if args.workspace is not None:
            n = store.erase_workspace(args.workspace)
            what: Sequence[str] = ("workspace", args.workspace)
        else:
            n = store.erase_user(args.user)
            what = ("user", args.user)
    return _done(
        args,
        f"erased {n} session(s) of {what[0]} {what[1]!r}",
        erased_sessions=n,
        **{what[0]: what[1]},
    )


def run_purge(args: argparse.Namespace) -> int:
    if args.older_than < 0:
        raise CliError("--older-than must be a number of days >= 0")
    with _store(args) as store:
        n = store.purge_older_than(args.older_than)
    return _done(
        args,
        f"purged {n} message(s) older than {args.older_than:g} day(s)",
        purged_messages=n,
        older_than_days=args.older_than,
    )
