"""``--summarizer openai`` and its settings, for every command that can ask a model to summarize
(``migrate``, ``sessions export --format markdown``)."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from session_migrator.cli._common import CliError

if TYPE_CHECKING:
    from session_migrator.summaries._summarizers import OpenAISummarizer

_SETTINGS = {
    "--summarizer-model": "summarizer_model",
    "--summarizer-base-url": "summarizer_base_url",
    "--summarizer-api-key-env": "summarizer_api_key_env",
}


def add_summarizer_options(
    parser: Any, *, choices: tuple[str, ...], default: str | None, help: str
) -> None:
    """``--summarizer`` (``choices``) and the settings of ``--summarizer openai`` on ``parser``
    (a parser or an argument group)."""
    parser.add_argument("--summarizer", choices=choices, default=default, help=help)
    parser.add_argument("--summarizer-model", metavar="M", help="the model that summarizes")
    parser.add_argument(
        "--summarizer-base-url",
        metavar="URL",
        help="an OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1 (Ollama; no key needed)",
    )
    parser.add_argument(
        "--summarizer-api-key-env",
        metavar="VAR",
        help="read the summarizer's key from this environment variable",
    )


def summarizer_from_args(args: argparse.Namespace) -> OpenAISummarizer | None:
    """The summarizer ``--summarizer openai`` configures, else ``None``; settings given without
    it are a :class:`CliError`."""
    given = [flag for flag, dest in _SETTINGS.items() if getattr(args, dest) is not None]
    if args.summarizer != "openai":
        if given:
            raise CliError(f"{', '.join(given)}: these configure --summarizer openai; add it")
        return None
    from session_migrator.summaries._summarizers import OpenAISummarizer

    key: str | None = None
    if args.summarizer_api_key_env:
        key = os.environ.get(args.summarizer_api_key_env) or None
        if key is None:
            raise CliError(f"the environment variable {args.summarizer_api_key_env} is not set")
    return OpenAISummarizer(args.summarizer_model, base_url=args.summarizer_base_url, api_key=key)


def add_user_facts_option(parser: Any) -> None:
    """``--user-facts`` on a server's ``parser``: learn what users state about themselves."""
    parser.add_argument(
        "--user-facts",
        choices=("off", "rules", "openai"),
        default="off",
        help="learn the facts users state in appended messages ('I'm vegetarian') and send "
        "them in every fit of their sessions: 'rules' reads plain statements offline; 'openai' "
        "also asks the --summarizer openai model, in the background (no call waits for it)",
    )


def fact_extractor_from_args(args: argparse.Namespace, summarizer: Any) -> Any:
    """The fact extractor ``--user-facts openai`` asks for (the ``--summarizer openai`` model),
    else ``None``."""
    if args.user_facts != "openai":
        return None
    if summarizer is None:
        raise CliError(
            "--user-facts openai asks the model --summarizer openai configures: add "
            "--summarizer openai (and --summarizer-model/--summarizer-base-url), or use "
            "--user-facts rules"
        )
    from session_migrator.summaries._fact_extractors import OpenAIFactExtractor

    return OpenAIFactExtractor(summarizer=summarizer)
