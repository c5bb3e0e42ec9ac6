"""``migrate`` and ``demo`` commands."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from session_migrator._redact import redact_secrets
from session_migrator.cli._common import (
    CliError,
    add_window_option,
    json_text,
    print_json,
    read_messages_file,
    table,
)
from session_migrator.cli._embedding_options import add_embeddings_option, embeddings_from_args
from session_migrator.cli._recall_options import add_recall_scope, related_for_file, related_row
from session_migrator.cli._summarizer_options import add_summarizer_options, summarizer_from_args
from session_migrator.messages._messages import messages_to_openai
from session_migrator.migration._strategies import STRATEGIES


def register(sub: Any) -> None:
    p = sub.add_parser(
        "migrate",
        help="fit a conversation (OpenAI-format JSON) to a model's context window",
        description=(
            "Read OpenAI-format messages from FILE ('-' for stdin), fit them to MODEL's input "
            "budget, print the report, and write the migrated messages with -o (-o - writes "
            "them to standard output and the report to standard error)."
        ),
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument("--to", required=True, metavar="MODEL", dest="model", help="target model")
    p.add_argument("--strategy", choices=STRATEGIES, default="auto")
    p.add_argument(
        "--reserve-output",
        type=int,
        metavar="N",
        help="tokens kept free for the reply (default: the model's max output, "
        "capped at 25%% of the window)",
    )
    p.add_argument(
        "--query", metavar="TEXT", help="what recall looks for (default: the last user message)"
    )
    add_window_option(p, "--to")
    add_recall_scope(p, from_file=True)
    add_embeddings_option(p)
    add_summarizer_options(
        p,
        choices=("extractive", "openai"),
        default="extractive",
        help="'openai' calls an OpenAI-compatible API (needs OPENAI_API_KEY or DEEPSEEK_API_KEY)",
    )
    p.add_argument(
        "-o", "--output", metavar="OUT", help="write the migrated messages here ('-': stdout)"
    )
    p.add_argument(
        "--keep-ids",
        action="store_true",
        help="keep each message's id and session-migrator's markers in what -o writes (to store "
        "or migrate it again; by default it is ready to send: plain OpenAI messages)",
    )
    p.add_argument("--json", action="store_true", help="print the report and messages as JSON")
    p.set_defaults(handler=run_migrate)

    d = sub.add_parser("demo", help="migrate the bundled long conversation down a chain of models")
    d.add_argument("--store", metavar="URL", help="store URL (default: the embedded SQLite store)")
    d.add_argument("--json", action="store_true")
    d.set_defaults(handler=run_demo)


def run_migrate(args: argparse.Namespace) -> int:
    from session_migrator.migration._migrate import migrate, resolve_target

    to_stdout = args.output == "-"
    if to_stdout and args.json:
        raise CliError("-o - and --json both write to standard output; use one of them")
    messages = read_messages_file(args.file)
    if not messages:
        raise CliError(f"{args.file}: no messages to migrate")
    if args.reserve_output is not None and args.reserve_output < 0:
        raise CliError("--reserve-output must not be negative")
    target = resolve_target(args.model, context_window=args.context_window)
    summarizer = summarizer_from_args(args)
    related = related_for_file(args)
    embeddings = embeddings_from_args(args)
    result = migrate(
        messages,
        target,
        strategy=args.strategy,
        query=args.query,
        summarizer=summarizer,
        reserve_output=args.reserve_output,
        related=related,
        embeddings=embeddings,
    )
    out_messages = messages_to_openai(result.messages, include_id=args.keep_ids)
    # (--json prints the messages with their ids: data for a host, which may store them)
    json_messages = messages_to_openai(result.messages)
    if to_stdout:
        sys.stdout.write(json_text(out_messages))
    elif args.output:
        try:
            Path(args.output).write_text(json_text(out_messages), encoding="utf-8")
        except OSError as exc:
            raise CliError(f"{args.output}: {exc.strerror}") from None
    rep = result.report
    if args.json:
        print_json({"report": rep.to_dict(), "messages": json_messages})
        return 0
    rows: list[list[Any]] = [
        ["target", f"{rep.target} ({rep.window_source})"],
        ["decision", rep.decision],
        ["strategy", rep.strategy],
        [
            "tokens",
            f"{rep.tokens_before:,} -> {rep.tokens_after:,}"
            f" ({'exact' if rep.exact else 'estimated'}, {rep.counter})",
        ],
        [
            "budget",
            f"{rep.budget:,} (window {rep.context_window:,}, input cap "
            f"{rep.max_input_tokens:,}, reserved output {rep.reserved_output:,}, "
            f"margin {rep.safety_margin:,})",
        ],
        ["messages", f"{rep.messages_before} -> {rep.messages_after}"],
        ["dropped", len(rep.dropped_ids)],
        ["summarized", len(rep.summarized_ids)],
        ["recalled", len(rep.recalled_ids)],
        *([related_row(rep)] if related is not None else []),
        ["cut inside", len(rep.truncated_ids)],
        ["time", f"{rep.seconds * 1000:.1f} ms"],
    ]
    report_out = sys.stderr if to_stdout else sys.stdout
    print(table(["", ""], rows), file=report_out)
    for line in rep.fallbacks + rep.notes:
        print(f"note: {redact_secrets(line)}", file=report_out)
    if to_stdout:
        print(f"wrote {len(out_messages)} messages to standard output", file=report_out)
    elif args.output:
        print(f"wrote {len(out_messages)} messages to {args.output}")
    else:
        print("(write the migrated messages with -o OUT, or print everything with --json)")
    return 0


def run_demo(args: argparse.Namespace) -> int:
    from session_migrator._demo import run_demo as demo

    demo(out=sys.stdout, store_url=args.store, as_json=args.json)
    return 0
