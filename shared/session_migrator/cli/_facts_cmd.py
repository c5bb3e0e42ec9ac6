"""``facts list|set|delete``: a user's facts and preferences from the shell.

The facts a user stated ("I'm vegetarian", "my daughter is allergic to peanuts"), kept per
user in the session store (:mod:`session_migrator.store._facts`), listed, edited and deleted
here. Every sub-command takes ``--store URL`` (default: ``SESSION_MIGRATOR_STORE``, else the
embedded SQLite store) and ``--json``.
"""

from __future__ import annotations

import argparse
from typing import Any

from session_migrator.cli._common import CliError, print_json, table
from session_migrator.cli._sessions_files import _store
from session_migrator.store import UserFact, delete_user_fact, set_user_fact, user_facts


def register(sub: Any) -> None:
    p = sub.add_parser(
        "facts",
        help="list, set and delete the facts a user stated (kept across their sessions)",
        description="Work with the facts and preferences kept per user (user_facts=True).",
    )
    cmds = p.add_subparsers(dest="facts_command", metavar="ACTION", required=True)

    def action(name: str, help_text: str, handler: Any) -> argparse.ArgumentParser:
        a: argparse.ArgumentParser = cmds.add_parser(name, help=help_text, description=help_text)
        a.add_argument(
            "--store",
            metavar="URL",
            help="store URL (default: SESSION_MIGRATOR_STORE or the embedded SQLite store)",
        )
        a.add_argument("--json", action="store_true", help="print JSON for scripts")
        a.add_argument("user", metavar="USER", help="the user's id (the sessions' user_id)")
        a.set_defaults(handler=handler)
        return a

    action("list", "list a user's facts, oldest statement first", run_list)
    a = action("set", "keep (or replace) a user's fact", run_set)
    a.add_argument("key", metavar="KEY", help="what it is about (e.g. 'i am vegetarian')")
    a.add_argument("text", metavar="TEXT", help="the fact, in the user's words")
    a = action("delete", "forget a user's fact", run_delete)
    a.add_argument("key", metavar="KEY")


def fact_dict(fact: UserFact) -> dict[str, Any]:
    """A fact as JSON: ``key``, ``text``, ``source_id`` and ``stated_at`` (ISO 8601)."""
    return {
        "key": fact.key,
        "text": fact.text,
        "source_id": fact.source_id,
        "stated_at": fact.stated_at.isoformat() if fact.stated_at else None,
    }


def _user(args: argparse.Namespace) -> str:
    if not args.user.strip():
        raise CliError("USER must be a non-empty user id")
    return str(args.user)


def run_list(args: argparse.Namespace) -> int:
    user = _user(args)
    with _store(args) as store:
        facts = user_facts(store, user)
        url = store.url
    if args.json:
        print_json({"user": user, "count": len(facts), "facts": [fact_dict(f) for f in facts]})
        return 0
    if not facts:
        print(f"No facts kept for user {user!r} in {url}.")
        return 0
    rows = [
        [
            f.key,
            f.text,
            f.source_id or "(set by hand)",
            f.stated_at.strftime("%Y-%m-%d %H:%M:%SZ") if f.stated_at else "-",
        ]
        for f in facts
    ]
    print(table(["key", "text", "source", "stated"], rows))
    print(f"{len(facts)} fact(s) of user {user!r} in {url}")
    return 0


def run_set(args: argparse.Namespace) -> int:
    user = _user(args)
    if not args.key.strip() or not args.text.strip():
        raise CliError("KEY and TEXT must not be empty")
    with _store(args) as store:
        fact = set_user_fact(store, user, args.key, args.text)
    if args.json:
        print_json({"user": user, "fact": fact_dict(fact)})
    else:
        print(f"kept fact {fact.key!r} of user {user!r}: {fact.text}")
    return 0


def run_delete(args: argparse.Namespace) -> int:
    user = _user(args)
    with _store(args) as store:
        deleted = delete_user_fact(store, user, args.key)
    if args.json:
        print_json({"user": user, "key": args.key, "deleted": deleted})
    elif deleted:
        print(f"deleted fact {args.key!r} of user {user!r}")
    else:
        raise CliError(
            f"user {user!r} has no fact {args.key!r}; list them with "
            f"`session-migrator facts list {user}`"
        )
    return 0
