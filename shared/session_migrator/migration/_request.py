"""Fitting one whole provider request: :func:`fit_request` and :class:`RequestFitter`.

A request is more than its messages: the provider also counts the tool schemas, the
response-format schema and, by its own rule, the output the request asks for
(``max_tokens``). :func:`fit_request` takes all of them and returns the messages to send, so
that the provider accepts the request:

- **OpenAI** (and the OpenAI-compatible APIs): prompt + ``max_tokens`` ≤ the window, and the
  prompt ≤ the input cap (gpt-5: 272,000 of 400,000).
- **Anthropic**, since Claude 3.7: input + ``max_tokens`` ≤ the window, else a validation error.
  Before 3.7 the service shortened ``max_tokens`` itself, so only the input is checked (a
  short reply's room is still held back).
- **Gemini**: the input cap and the output cap are separate; the output does not take input room.

The output reserve is what the request asks for when it says (``max_tokens``,
``max_completion_tokens``, ``max_output_tokens``: the adapters read it where each provider class
keeps it), else a default that leaves the input most of the window: the model's output cap, at
most a quarter of the window (:data:`~session_migrator.models._windows.DEFAULT_OUTPUT_FRACTION`). A
request asking for more output than the window leaves room for raises
:class:`OutputReserveError` before anything is sent, naming the number to lower.

:class:`RequestFitter` keeps what one guard learns across calls: the rolling summary of each
conversation (keyed by its first non-system message), so each call summarizes only the newly
cut messages.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from session_migrator._errors import BudgetError, OutputReserveError
from session_migrator.counting._counter import TokenCounter
from session_migrator.fitting._fits import PendingToolCalls
from session_migrator.fitting._units import DEFAULT_SLACK, Ledger, is_step_result
from session_migrator.messages._messages import ContentPart, Message, as_messages
from session_migrator.migration._kept import Kept, conversation_key
from session_migrator.migration._migrate import default_counter, fit_messages, resolve_target
from session_migrator.migration._options import FitOptions
from session_migrator.migration._report import MigrationReport
from session_migrator.migration._strategies import Compressor
from session_migrator.models._output import check_tokens, output_reserve
from session_migrator.models._windows import ModelWindow
from session_migrator.recall._embeddings import as_embeddings
from session_migrator.summaries._summarizers import Summarizer, Summary

__all__ = ["TOKENS_PER_TOOL", "RequestFit", "RequestFitter", "fit_request", "schema_tokens"]

#: Tokens counted per tool (or schema) on top of its JSON (name, framing).
TOKENS_PER_TOOL = 8
#: How often a fit is redone with the overshoot held back (folding a note into the system
#: message costs a token or two the fit did not count).
_FOLD_RETRIES = 3


def schema_tokens(schemas: Iterable[Any], counter: TokenCounter) -> int:
    """The tokens of ``schemas`` (tools, functions, a response format) as they go over the wire:
    the JSON of each, plus :data:`TOKENS_PER_TOOL` for its framing (scaled, as the text is, by
    an estimating counter's multiplier: an estimate scales every overhead, as it does a
    message's)."""
    multiplier = getattr(counter, "multiplier", None)
    framing = TOKENS_PER_TOOL
    if isinstance(multiplier, int | float) and multiplier > 1:
        framing = math.ceil(TOKENS_PER_TOOL * multiplier)
    total = 0
    for schema in schemas:
        if isinstance(schema, str):
            text = schema
        else:
            try:
                text = json.dumps(schema, ensure_ascii=False, default=str)
            except (TypeError, ValueError):
                text = str(schema)
        total += counter.count_text(text) + framing
    return total


@dataclass(frozen=True)
class RequestFit:
    """What :func:`fit_request` decided.

    ``messages`` is what to send (the same objects, in the same order, when ``changed`` is
    ``False``); ``report`` the fit's report (its ``reserved_output`` is the output held back);
    ``reserve_source`` where that number came from (``"request"``, ``"default"``,
    ``"explicit"``, ``"separate"``); ``schema_tokens`` what the tools and schemas cost;
    ``summary`` the summary made, for a rolling summary on the next call.
    """

    messages: list[Message]
    report: MigrationReport
    changed: bool
    reserve_source: str
    schema_tokens: int
    summary: Summary | None = None


def fit_request(
    messages: Sequence[Message],
    target: str | ModelWindow,
    *,
    tools: Sequence[Any] = (),
    response_format: Any = None,
    max_output_tokens: int | None = None,
    output_parameter: str = "max_tokens",
    provider: str | None = None,
    reserve_output: int | None = None,
    reserve_tokens: int = 0,
    strategy: str | Compressor = "auto",
    summarizer: Summarizer | None = None,
    counter: TokenCounter | None = None,
    previous_summary: Summary | None = None,
    query: str | None = None,
    fold_notes: bool = True,
    pending_tool_calls: PendingToolCalls = "drop",
    embeddings: Any = None,
) -> RequestFit:
    """Fit a whole provider request to ``target``: its messages, ``tools`` (JSON schemas, as
    sent), ``response_format`` and the output it asks for (``max_output_tokens``: the request's
    ``max_tokens``; ``None`` when it sends none), by the provider's rule (see the module
    docstring; ``provider`` names it when the window's own is not the one serving the request).

    ``reserve_output`` overrides the output held back whatever the request asks; ``reserve_tokens``
    holds back more (what a provider adds that is not in the request). ``output_parameter``
    names the request's setting in the error that asks to lower it. With ``fold_notes`` the
    library's notes (the summary of the cut part) are folded into the first system message, as
    providers that take one system prompt want it. Raises :class:`OutputReserveError` when the
    output asked for leaves too little room for the input that must go (the system prompt and
    the newest turn), and :class:`~session_migrator.BudgetError` when nothing fits at all.
    ``embeddings``: an embedding model recall fuses with bm25, as for :func:`migrate`.

    >>> from session_migrator import Message
    >>> fit = fit_request([Message("user", "hi")], "gpt-4", max_output_tokens=4096)
    >>> fit.changed, fit.report.reserved_output, fit.reserve_source
    (False, 4096, 'request')
    """
    return _fit_request(
        messages, target, None, tools=tools, response_format=response_format,
        max_output_tokens=max_output_tokens, output_parameter=output_parameter,
        provider=provider, reserve_output=reserve_output, reserve_tokens=reserve_tokens,
        strategy=strategy, summarizer=summarizer, counter=counter,
        previous_summary=previous_summary, query=query, fold_notes=fold_notes,
        pending_tool_calls=pending_tool_calls, embeddings=embeddings,
    )  # fmt: skip


def _fit_request(
    messages: Sequence[Message],
    target: str | ModelWindow,
    kept: Kept | None,
    *,
    tools: Sequence[Any] = (),
    response_format: Any = None,
    max_output_tokens: int | None = None,
    output_parameter: str = "max_tokens",
    provider: str | None = None,
    reserve_output: int | None = None,
    reserve_tokens: int = 0,
    strategy: str | Compressor = "auto",
    summarizer: Summarizer | None = None,
    counter: TokenCounter | None = None,
    previous_summary: Summary | None = None,
    query: str | None = None,
    fold_notes: bool = True,
    pending_tool_calls: PendingToolCalls = "drop",
    embeddings: Any = None,
) -> RequestFit:
    """:func:`fit_request`; with ``kept`` (a :class:`RequestFitter`'s), the conversation's
    ledger is kept from one call to the next, and past the budget the prompt's head stays the
    same (see :mod:`session_migrator.migration._stable`)."""
    window = resolve_target(target)
    counter = counter or default_counter(window)
    reserve_tokens = check_tokens("reserve_tokens", reserve_tokens) or 0
    if reserve_output is not None:
        reserve, source = check_tokens("reserve_output", reserve_output) or 0, "explicit"
    else:
        reserve, source = output_reserve(window, max_output_tokens, provider=provider)
    schemas = [*tools, *([response_format] if response_format is not None else [])]
    extra = schema_tokens(schemas, counter)
    if source == "request":
        _check_room(window, reserve, extra + reserve_tokens, output_parameter)
    originals = list(as_messages(messages))
    taken = kept.take(originals, window, counter) if kept is not None else None
    try:
        return _fit_to(
            originals, window, counter, taken[1] if taken else None, reserve, source, extra,
            reserve_tokens, output_parameter, strategy, query, summarizer, previous_summary,
            pending_tool_calls, embeddings, fold_notes,
        )  # fmt: skip
    finally:
        if kept is not None and taken is not None:
            kept.give(*taken)


def _fit_to(
    originals: list[Message],
    window: ModelWindow,
    counter: TokenCounter,
    ledger: Ledger | None,
    reserve: int,
    source: str,
    extra: int,
    reserve_tokens: int,
    output_parameter: str,
    strategy: str | Compressor,
    query: str | None,
    summarizer: Summarizer | None,
    previous_summary: Summary | None,
    pending_tool_calls: PendingToolCalls,
    embeddings: Any,
    fold_notes: bool,
) -> RequestFit:
    held = extra + reserve_tokens
    limit: int | None = None
    for _ in range(_FOLD_RETRIES):
        try:
            options = FitOptions(
                strategy=strategy,
                query=query,
                summarizer=summarizer,
                reserve_output=reserve,
                counter=counter,
                previous_summary=previous_summary,
                extra_reserved=held,
                pending_tool_calls=pending_tool_calls,
                embeddings=embeddings,
            )
            result = fit_messages(originals, window, options, ledger)
        except BudgetError as exc:
            if source != "request":
                raise
            raise _reserve_error(window, reserve, exc, output_parameter) from exc
        if source == "request":
            _check_question(
                originals, result.report, window, reserve, held, counter, output_parameter
            )
        if _unchanged(result.messages, originals):
            return RequestFit(originals, result.report, False, source, extra, result.summary)
        sent = _folded(result.messages) if fold_notes else list(result.messages)
        if limit is None:
            limit = result.report.budget
        over = counter.count_messages(sent) - limit
        if over <= 0:
            break
        held += over
    result.report.tokens_after = counter.count_messages(sent)
    result.report.messages_after = len(sent)
    return RequestFit(sent, result.report, True, source, extra, result.summary)


def _check_room(window: ModelWindow, reserve: int, extra: int, parameter: str) -> None:
    """A request whose output alone (with its schemas) takes the whole window is refused here."""
    room = min(window.max_input_tokens, window.context_window - reserve) - extra
    if room > 0:
        return
    most = max(0, window.context_window - extra - 1)
    raise OutputReserveError(
        f"{parameter}={reserve:,} leaves no room for input in {window.name}'s "
        f"{window.context_window:,}-token window (the tools and schemas take {extra:,}): lower "
        f"{parameter} to well under {most:,}, so the conversation has room; the provider would "
        "refuse this request",
        budget=max(0, room),
        needed=1,
        requested=reserve,
        most=most,
        parameter=parameter,
    )


def _check_question(
    messages: Sequence[Message],
    report: MigrationReport,
    window: ModelWindow,
    reserve: int,
    held: int,
    counter: TokenCounter,
    parameter: str,
) -> None:
    """The output asked for must leave room for the question whole (the newest user message
    in the user's own words, not a step's result): a question cut to make room for a long
    answer is refused here, naming the number to lower (a question too long for the input cap
    itself is cut inside, as any fit does, and so is one cut for the room its turn's tool steps
    take)."""
    newest = next(
        (m for m in reversed(messages) if m.role == "user" and not is_step_result(m)), None
    )
    if newest is None or newest.id not in report.truncated_ids:
        return
    needed = counter.count_messages([m for m in messages if m.role == "system"] + [newest])
    if needed + held >= window.max_input_tokens:
        return  # too long for the input cap whatever the output: cut inside, as any fit does
    if needed <= report.budget:
        return  # it fits beside the output asked for: cut for its turn's steps, not the output
    raise _reserve_error(
        window,
        reserve,
        BudgetError("", budget=report.budget, needed=needed + held),
        parameter,
    )


def _reserve_error(
    window: ModelWindow, reserve: int, exc: BudgetError, parameter: str
) -> OutputReserveError:
    short = max(0, exc.needed - exc.budget)
    most = max(0, reserve - short)
    fix = (
        f"lower {parameter} from {reserve:,} to at most {most:,}"
        if most > 0
        else "shorten the system prompt or the newest message"
    )
    what = (
        "the system prompt and the current turn's tool steps, their results shrunk,"
        if "current turn" in str(exc)
        else "the system prompt and the newest turn alone"
    )
    return OutputReserveError(
        f"{parameter}={reserve:,} leaves {exc.budget:,} tokens of {window.name}'s "
        f"{window.context_window:,}-token window for input, and {what} need {exc.needed:,}: "
        f"{fix}",
        budget=exc.budget,
        needed=exc.needed,
        requested=reserve,
        most=most,
        parameter=parameter,
    )


def _unchanged(fitted: Sequence[Message], originals: Sequence[Message]) -> bool:
    return len(fitted) == len(originals) and all(
        a is b for a, b in zip(fitted, originals, strict=True)
    )


def _folded(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with the library's leading notes (a summary of the cut part, a note that
    turns were left out) folded into the first system message, or made one."""
    leading = 0
    while leading < len(messages) and messages[leading].role == "system":
        leading += 1
    head = messages[:leading]
    notes = [m for m in head if m.marker is not None and m.marker.get("kind") != "truncated"]
    if not notes:
        return list(messages)
    others = [m for m in head if m not in notes]
    text = "\n\n".join(n.text for n in notes)
    own = next((m for m in others if m.marker is None), None)
    if own is None:
        merged = notes[0].replace(content=text)
        return [merged, *others, *messages[leading:]]
    if isinstance(own.content, str):
        content: Any = f"{own.content}\n\n{text}" if own.content else text
    else:
        content = (*own.content, ContentPart("text", text))
    merged = own.replace(content=content)
    return [merged if m is own else m for m in others] + list(messages[leading:])


class RequestFitter:
    """:func:`fit_request` for one guard, keeping each conversation's rolling summary and its
    counts (keyed by its first non-system message's id; at most ``max_summaries``, the least
    recent go first). Thread-safe; the settings given here are each call's defaults.

    ``slack``: past the budget, the cut stays put while the conversation grows by less than
    this share of the room, so that consecutive requests share their head and a provider's
    prompt cache serves it (see :mod:`session_migrator.migration._stable`); an agent's turn in
    progress is cut afresh at every call all the same. ``0`` cuts afresh at every call, as
    :func:`fit_request` does.
    """

    def __init__(
        self,
        *,
        strategy: str | Compressor = "auto",
        summarizer: Summarizer | None = None,
        reserve_output: int | None = None,
        reserve_tokens: int = 0,
        max_summaries: int = 256,
        embeddings: Any = None,
        slack: float = DEFAULT_SLACK,
    ) -> None:
        check_tokens("reserve_output", reserve_output)
        check_tokens("reserve_tokens", reserve_tokens)
        self.strategy = strategy
        self.summarizer = summarizer
        self.reserve_output = reserve_output
        self.reserve_tokens = reserve_tokens
        self.max_summaries = max_summaries
        # (wrapped once: the model's vectors are kept between fits)
        self.embeddings = None if embeddings is None else as_embeddings(embeddings)
        self.last_report: MigrationReport | None = None
        self.last_fit: RequestFit | None = None
        self._lock = threading.Lock()
        self._summaries: OrderedDict[str, Summary] = OrderedDict()
        self._kept = Kept(max_summaries, slack)

    def summary_of(self, messages: Sequence[Message]) -> Summary | None:
        """The rolling summary kept for the conversation ``messages`` start."""
        key = conversation_key(messages)
        if key is None:
            return None
        with self._lock:
            return self._summaries.get(key)

    def fit(
        self,
        messages: Sequence[Message],
        target: str | ModelWindow,
        *,
        previous_summary: Summary | None = None,
        **request: Any,
    ) -> RequestFit:
        """:func:`fit_request` with this fitter's settings and the conversation's rolling
        summary (``previous_summary`` wins); ``request`` is the request's own parts (``tools``,
        ``response_format``, ``max_output_tokens``, ``provider``, ...)."""
        key = conversation_key(messages)
        if previous_summary is None:
            previous_summary = self.summary_of(messages)
        settings: dict[str, Any] = {
            "strategy": self.strategy,
            "summarizer": self.summarizer,
            "reserve_output": self.reserve_output,
            "reserve_tokens": self.reserve_tokens,
            "embeddings": self.embeddings,
        }
        fit = _fit_request(
            messages,
            target,
            self._kept if self._kept.slack > 0 else None,
            previous_summary=previous_summary,
            **{**settings, **request},
        )
        self.last_report, self.last_fit = fit.report, fit
        if fit.summary is not None and key is not None:
            with self._lock:
                self._summaries[key] = fit.summary
                self._summaries.move_to_end(key)
                while len(self._summaries) > self.max_summaries:
                    self._summaries.popitem(last=False)
        return fit
