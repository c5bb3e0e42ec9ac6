"""``models``, ``window`` and ``count``: what is known about model windows, and token counts.

    session-migrator models [QUERY] [--provider P] [--limit N] [--json]
    session-migrator window MODEL [--context-window N] [--json]
    session-migrator count FILE --model MODEL [--context-window N] [--json]

``models NAME ...`` runs an action instead of listing when NAME is a key of
:data:`MODELS_ACTIONS` (``models refresh`` is wired there). Unknown models, unreadable files
and bad messages are user mistakes: one ``error: ...`` line on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from session_migrator.cli._common import (
    CliError,
    add_window_option,
    print_json,
    read_messages_file,
    table,
    whole_number,
)
from session_migrator.cli._refresh_cmd import add_refresh_arguments, run_refresh
from session_migrator.counting._counter import REPLY_PRIMING
from session_migrator.counting._tokens import counter_for
from session_migrator.migration._migrate import resolve_target
from session_migrator.models._lookup import bundled_note, known_models
from session_migrator.models._windows import Budget, ModelWindow

__all__ = ["MODELS_ACTIONS", "register"]

#: Actions of ``models`` besides listing: NAME -> (add its options to the ``models`` parser,
#: run it with the parsed namespace and return the exit code). ``models NAME`` then runs the
#: action instead of searching for NAME, e.g. ``"refresh": (add_refresh_arguments,
#: run_refresh)``. Options of an action may repeat a listing option (``--json``).
MODELS_ACTIONS: dict[
    str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
] = {"refresh": (add_refresh_arguments, run_refresh)}
_ACTION_OPTIONS: list[argparse.Action] = []


def register(sub: Any) -> None:
    """Add the ``models``, ``window`` and ``count`` sub-commands to ``sub``."""
    actions = " | ".join(MODELS_ACTIONS)
    models = sub.add_parser(
        "models",
        help="list the models whose context windows are known",
        description="List known models with their windows, input caps and output caps.",
        conflict_handler="resolve",
    )
    models.add_argument(
        "query",
        nargs="?",
        metavar=f"QUERY | {actions}" if actions else "QUERY",
        help="keep models whose name contains this (as given or normalised)",
    )
    models.add_argument(
        "--provider",
        help="keep one provider (openai, groq, github_copilot, ...): the models it makes or lists, "
        "with its own caps where they are smaller",
    )
    models.add_argument(
        "--limit", type=whole_number(0), default=0, metavar="N", help="show at most N (0: all)"
    )
    models.add_argument("--json", action="store_true", help="print JSON")
    listing = {a.dest for a in models._actions}
    for add_arguments, _run in MODELS_ACTIONS.values():
        add_arguments(models)
    # the actions' own options: listing ignores them, so it refuses them
    _ACTION_OPTIONS[:] = [a for a in models._actions if a.dest not in listing]
    models.set_defaults(handler=_models)

    window = sub.add_parser(
        "window",
        help="show one model's window, caps, tokenizer and input budget",
        description=(
            "Show what is known about MODEL: its window, input and output caps, tokenizer, "
            "where the facts come from, and the input budget a migration would fit into."
        ),
    )
    window.add_argument("model", metavar="MODEL", help="a model name, e.g. openai/gpt-4o")
    add_window_option(window, "MODEL")
    window.add_argument("--json", action="store_true", help="print JSON")
    window.set_defaults(handler=_window)

    count = sub.add_parser(
        "count",
        help="count the tokens of a conversation for one model",
        description=(
            "Count the tokens of FILE (a JSON list of OpenAI-format messages, - for stdin) "
            "with MODEL's tokenizer, per role, against MODEL's input budget."
        ),
    )
    count.add_argument("file", metavar="FILE", help="a JSON list of OpenAI-format messages")
    count.add_argument("--model", required=True, metavar="MODEL", help="the target model")
    add_window_option(count, "--model")
    count.add_argument("--json", action="store_true", help="print JSON")
    count.set_defaults(handler=_count)


def _window_record(window: ModelWindow) -> dict[str, Any]:
    return {
        "name": window.name,
        "provider": window.provider,
        "context_window": window.context_window,
        "max_input_tokens": window.max_input_tokens,
        "max_output_tokens": window.max_output_tokens,
        "tokenizer": window.tokenizer,
        "source": window.source,
        "as_of": window.as_of,
        "ref": window.ref or None,
    }


def _models(args: argparse.Namespace) -> int:
    action = MODELS_ACTIONS.get(args.query or "")
    if action is not None:
        return action[1](args)
    given = [
        a.option_strings[0]
        for a in _ACTION_OPTIONS
        if a.option_strings and getattr(args, a.dest, a.default) != a.default
    ]
    if given:
        named = " or ".join(f"`models {name}`" for name in MODELS_ACTIONS)
        raise CliError(f"{', '.join(given)}: only {named} reads these")
    found = known_models(args.query, provider=args.provider)
    shown = found[: args.limit] if args.limit else found
    if args.json:
        print_json([_window_record(w) for w in shown])
        return 0
    if not found:
        matching = f" matching {args.query!r}" if args.query else ""
        provider = f" from provider {args.provider!r}" if args.provider else ""
        print(f"no known model{matching}{provider}; `session-migrator models` lists them all")
        return 0
    rows = [
        [w.name, w.provider, w.context_window, w.max_input_tokens, w.max_output_tokens,
         w.tokenizer, w.source]
        for w in shown
    ]  # fmt: skip
    headers = ["model", "provider", "window", "input", "output", "tokenizer", "source"]
    print(table(headers, rows))
    more = f" (showing {len(shown):,}; --limit 0 for all)" if len(shown) < len(found) else ""
    print(f"\n{len(found):,} models{more}")
    return 0


def _window(args: argparse.Namespace) -> int:
    window = resolve_target(args.model, context_window=args.context_window)
    counter = counter_for(window.tokenizer, model=window.name)
    budget = Budget.for_window(window, exact=counter.exact)
    record = _window_record(window)
    record.update(
        counter=counter.name,
        exact=counter.exact,
        input_budget=budget.tokens,
        reserved_output=budget.reserved_output,
        safety_margin=budget.safety_margin,
        note=bundled_note(window.name) if window.source.startswith("bundled:") else None,
    )
    if args.json:
        print_json(record)
        return 0
    labels = {
        "name": "model",
        "context_window": "context window",
        "max_input_tokens": "max input",
        "max_output_tokens": "max output",
        "exact": "exact counts",
        "input_budget": "input budget",
        "reserved_output": "reserved output",
        "safety_margin": "safety margin",
    }
    rows = [[labels.get(k, k.replace("_", " ")), v] for k, v in record.items() if v is not None]
    print(table(["field", "value"], rows))
    return 0


def _count(args: argparse.Namespace) -> int:
    messages = read_messages_file(args.file)
    window = resolve_target(args.model, context_window=args.context_window)
    counter = counter_for(window.tokenizer, model=window.name)
    total = counter.count(messages)
    budget = Budget.for_window(window, exact=total.exact)
    by_role: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for message in messages:
        by_role[message.role][0] += 1
        by_role[message.role][1] += counter.count_message(message)
    share = total.tokens / budget.tokens if budget.tokens else float("inf")
    record = {
        "model": window.name,
        "tokens": total.tokens,
        "exact": total.exact,
        "counter": total.counter,
        "messages": len(messages),
        "by_role": {role: {"messages": n, "tokens": t} for role, (n, t) in by_role.items()},
        "reply_priming": REPLY_PRIMING,
        "input_budget": budget.tokens,
        "budget_share": share if budget.tokens else None,
        "fits": total.tokens <= budget.tokens,
    }
    if args.json:
        print_json(record)
        return 0
    kind = "exact" if total.exact else "estimated"
    verdict = "fits" if record["fits"] else "does not fit: a migration would compress it"
    print(f"{total.tokens:,} tokens ({kind}, {total.counter}) in {len(messages):,} messages")
    print(
        f"{share:.2%} of {window.name}'s input budget of {budget.tokens:,} tokens: {verdict}"
        if budget.tokens
        else f"{window.name} has no input budget left after the reserved output"
    )
    rows: list[Sequence[Any]] = [[role, n, t] for role, (n, t) in by_role.items()]
    rows.append(["(reply priming)", None, REPLY_PRIMING])
    print()
    print(table(["role", "messages", "tokens"], rows))
    return 0
