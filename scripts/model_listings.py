"""Providers' listings with their own, smaller caps, for ``build_model_table.py``.

A row holds the model's own facts. A provider may serve the model with smaller limits: GitHub
Copilot lists Claude Sonnet 4 with 128,000 input and 16,000 output tokens of its 200,000 /
64,000. A provider-qualified name (``github_copilot/claude-sonnet-4``) should get those, so the
table keeps, per row and provider, the listing where it is smaller than the row in some figure:
per field, the smallest of the row and of every listing of the row by that provider (several
spellings of one model: the smallest of them). A listing never raises the model's facts: a host
that says 127,000 for Mistral 7B (32,768) changes nothing. LiteLLM states no window, only the
input and output caps; models.dev states the window too.

Not listings with caps of their own:

- the maker's own API (the rows the build ranks ``RANK_MAKER``): its figures are the maker's
  facts, already weighed in the row and corrected there by the fixes (LiteLLM still says
  131,072 for ``deepseek/deepseek-chat`` and 32,000 for ``mistral/codestral-latest``);
- local runtimes, where the user chooses the context (:data:`LOCAL_RUNTIMES`): Ollama's
  8,192 for ``ollama/llama3.1`` is a default ``num_ctx``, not the model's window.

The provider is named as users type it in front of the model: the first segment of a LiteLLM
key (``github_copilot``), else its ``litellm_provider``; the models.dev provider folder
(``github-copilot``); ``_`` as ``-`` (:func:`~session_migrator.models._names.provider_prefix`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from model_sources import RANK_HOST, Row

from session_migrator.models._names import provider_prefix

#: Runtimes that run a model with the context the user sets (as :func:`provider_prefix` spells
#: them): LiteLLM's ollama, ollama_chat, lm_studio, llamafile, vllm, hosted_vllm, lemonade ...,
#: models.dev's lmstudio and atomic-chat (both on 127.0.0.1).
LOCAL_RUNTIMES = frozenset(
    {
        "ollama", "ollama-chat", "lm-studio", "lmstudio", "llamafile", "llama-cpp", "vllm",
        "hosted-vllm", "lemonade", "atomic-chat", "xinference", "docker-model-runner",
    }
)  # fmt: skip

#: A kept listing: max input, window, max output, and the refs of the listings that set them.
Listing = tuple[int, int, int | None, str]


def listing_provider(row: Row) -> str:
    """The provider a user names in front of the model of a provider row (see the module doc)."""
    key = row.ref.removeprefix("litellm: ")
    if key == row.ref:  # models.dev: providers/<provider>/models/<id>
        return provider_prefix(f"{row.host}/")
    if "/" in key:
        return provider_prefix(key)
    # a bare key: LiteLLM's provider (bedrock_converse and vertex_ai-language-models route as
    # bedrock/ and vertex_ai/)
    return provider_prefix(re.sub(r"-converse$|(?<=^vertex-ai)-.+$", "", row.host) + "/")


def qualified_id(row: Row) -> str:
    """A provider row's id with its provider in front, as users type it: models.dev's
    ``provider/id``, a LiteLLM key (``bedrock/`` and the like before a bare one)."""
    key = row.ref.removeprefix("litellm: ")
    if key == row.ref:
        return row.ref.removeprefix("models.dev: providers/").replace("/models/", "/", 1)
    return key if "/" in key else f"{listing_provider(row)}/{key}"


def _smallest(row: Row, listed: list[Row]) -> Listing | None:
    """The row's figures lowered by the listings (``None`` when none is lower), with the refs of
    the listings that set a lowered figure, models.dev's first."""
    listed = sorted(listed, key=lambda r: (not r.ref.startswith("models.dev"), r.ref))
    window = min([row.context_window, *(r.context_window for r in listed if r.context_window)])
    cap = min([window, row.max_input_tokens, *(r.max_input_tokens for r in listed)])
    outputs = [o for o in (row.max_output_tokens, *(r.max_output_tokens for r in listed)) if o]
    output = min([*outputs, window]) if outputs else None
    if row.max_output_tokens is None and output == window:
        output = None  # an output cap no smaller than the window says nothing new
    figures = (cap, window, output)
    own = (row.max_input_tokens, row.context_window, row.max_output_tokens)
    unset = {i for i in range(3) if figures[i] != own[i]}
    if not unset:
        return None
    refs = []
    for r in listed:  # each listing that sets a lowered figure no earlier one set
        theirs = (r.max_input_tokens, r.context_window, r.max_output_tokens)
        sets = {i for i in unset if theirs[i] == figures[i]}
        if sets:
            refs.append(r.ref)
            unset -= sets
    return cap, window, output, "; ".join(refs)


def build_listings(
    rows: dict[str, Row], aliases: dict[str, str], candidates: Iterable[Row]
) -> dict[str, dict[str, Listing]]:
    """Row name -> provider -> its listing, for the listings smaller than the row."""
    by_row: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for candidate in candidates:
        if candidate.rank != RANK_HOST or not candidate.host:
            continue  # the maker's own API, or a row that is no provider's listing
        provider = listing_provider(candidate)
        name = aliases.get(candidate.id, candidate.id)
        if provider not in LOCAL_RUNTIMES and name in rows:
            by_row[(name, provider)].append(candidate)
    listings: dict[str, dict[str, Listing]] = defaultdict(dict)
    for (name, provider), listed in sorted(by_row.items()):
        listing = _smallest(rows[name], listed)
        if listing is not None:
            listings[name][provider] = listing
    return dict(listings)


def listing_problems(rows: dict[str, Row], listings: dict[str, dict[str, Listing]]) -> list[str]:
    """What breaks the listings' contract: each lowers its row, raises no figure of it, keeps
    ``0 < input <= window`` and an output within the window, and names its sources."""
    problems = []
    for name, by_provider in sorted(listings.items()):
        row = rows[name]
        own = (row.max_input_tokens, row.context_window, row.max_output_tokens)
        for provider, (cap, window, output, refs) in sorted(by_provider.items()):
            where = f"{name} at {provider}"
            if not (0 < cap <= window and (output or 0) <= window and refs):
                problems.append(f"{where}: needs 0 < input <= window, output <= window, refs")
            if cap > own[0] or window > own[1] or (output or 0) > (own[2] or window):
                problems.append(f"{where}: a listing must not raise the row's figures")
            if (cap, window, output) == own:
                problems.append(f"{where}: a listing no smaller than its row is not kept")
    return problems
