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
most a quarter of the window (:data:`~session_migrator._windows.DEFAULT_OUTPUT_FRACTION`). A
request asking for more output than the window leaves room for raises
:class:`OutputReserveError` before anything is sent, naming the number to lower.

:class:`RequestFitter` keeps what one guard learns across calls: the rolling summary of each
conversation (keyed by its first non-system message), so each call summarizes only the newly
cut messages.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from session_migrator._errors import BudgetError, OutputReserveError
from session_migrator._fits import PendingToolCalls
from session_migrator._messages import ContentPart, Message
from session_migrator._migrate import (
    MigrationReport,
    default_counter,
    migrate,
    resolve_target,
)
from session_migrator._strategies import Compressor
from session_migrator._summarizers import Summarizer, Summary
from session_migrator._tokens import TokenCounter
from session_migrator._windows import DEFAULT_OUTPUT_FRACTION, ModelWindow

__all__ = [
    "OUTPUT_SETTINGS",
    "TOKENS_PER_TOOL",
    "OutputReserveError",
    "OutputRule",
    "RequestFit",
    "RequestFitter",
    "fit_request",
    "output_reserve",
    "output_rule",
    "requested_output",
    "schema_tokens",
]

#: Tokens counted per tool (or schema) on top of its JSON (name, framing).
TOKENS_PER_TOOL = 8
#: How the output a request asks for shares the window with its input (see the module docstring).
OutputRule = Literal["shared", "clamped", "separate"]
#: The fewest output tokens held back when a request says nothing: room for a short reply.
MIN_REPLY_TOKENS = 256
#: How often a fit is redone with the overshoot held back (folding a note into the system
#: message costs a token or two the fit did not count).
_FOLD_RETRIES = 3
_OLD_CLAUDE = re.compile(r"claude-(instant|2|3-(opus|sonnet|haiku)|3-5)", re.IGNORECASE)
_GEMINI_PROVIDERS = frozenset({"google", "gemini", "vertex", "vertex_ai", "google_genai"})
_ANTHROPIC_PROVIDERS = frozenset({"anthropic", "bedrock_anthropic"})


#: Where provider classes and their request kwargs keep the output a request asks for, most
#: specific first: OpenAI's ``max_completion_tokens``, the common ``max_tokens``, Gemini's
#: ``max_output_tokens``, Ollama's ``num_predict``, Hugging Face's ``max_new_tokens``.
OUTPUT_SETTINGS = (
    "max_completion_tokens",
    "max_tokens",
    "max_output_tokens",
    "num_predict",
    "max_new_tokens",
)


def requested_output(
    *sources: Mapping[str, Any] | None, model: Any = None
) -> tuple[int | None, str]:
    """The output tokens a request asks for, and the setting's name: the first positive whole
    number under one of :data:`OUTPUT_SETTINGS` in ``sources`` (a call's kwargs, bound kwargs,
    a class's extra kwargs: most specific first), then among ``model``'s attributes;
    ``(None, "max_tokens")`` when none says.

    >>> requested_output({"temperature": 0}, {"max_completion_tokens": 3000})
    (3000, 'max_completion_tokens')
    """
    for source in sources:
        if isinstance(source, Mapping):
            for key in OUTPUT_SETTINGS:
                found = _positive(source.get(key))
                if found is not None:
                    return found, key
    if model is not None:
        for key in OUTPUT_SETTINGS:
            found = _positive(getattr(model, key, None))
            if found is not None:
                return found, key
    return None, "max_tokens"


def _positive(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def output_rule(window: ModelWindow, provider: str | None = None) -> OutputRule:
    """How ``window``'s provider counts the output a request asks for.

    ``provider`` (e.g. ``"anthropic"``, as a framework names it) wins over the window's own.

    >>> from session_migrator import lookup_model
    >>> output_rule(lookup_model("gpt-4o")), output_rule(lookup_model("claude-sonnet-4"))
    ('shared', 'shared')
    >>> output_rule(lookup_model("claude-3-haiku-20240307"))
    'clamped'
    >>> output_rule(lookup_model("gemini-2.5-pro"))
    'separate'
    """
    name = (provider or window.provider or "").lower().replace("-", "_")
    if name in _GEMINI_PROVIDERS or (not provider and window.tokenizer == "gemini"):
        return "separate"
    if name in _ANTHROPIC_PROVIDERS or "claude" in window.name.lower():
        return "clamped" if _OLD_CLAUDE.search(window.name) else "shared"
    return "shared"


def default_reserve(window: ModelWindow) -> int:
    """The output held back when a request does not say: the model's output cap, at most a
    quarter of the window, at least a short reply's room (and never the whole window)."""
    quarter = int(window.context_window * DEFAULT_OUTPUT_FRACTION)
    cap = window.max_output_tokens if window.max_output_tokens is not None else quarter
    floor = min(MIN_REPLY_TOKENS, cap, window.context_window // 2)
    return max(min(cap, quarter), floor)


def output_reserve(
    window: ModelWindow, requested: int | None = None, *, provider: str | None = None
) -> tuple[int, str]:
    """The output tokens to hold back from ``window``'s input for a request that asks for
    ``requested`` (``None``: it does not say), and where the number came from: ``"request"`` or
    ``"default"`` (see :func:`default_reserve`).

    Under the ``separate`` rule (Gemini) the output takes no input room: the reserve is 0,
    ``"separate"``. Under ``clamped`` (Claude before 3.7) the service shortens the output
    itself: the reserve is the smaller of ``requested`` and the default.
    """
    requested = _check_tokens("max_tokens", requested)
    rule = output_rule(window, provider)
    if rule == "separate":
        return 0, "separate"
    if requested is None:
        return default_reserve(window), "default"
    if rule == "clamped":
        return min(requested, default_reserve(window)), "request"
    return requested, "request"


def schema_tokens(schemas: Iterable[Any], counter: TokenCounter) -> int:
    """The tokens of ``schemas`` (tools, functions, a response format) as they go over the wire:
    the JSON of each, plus :data:`TOKENS_PER_TOOL` for its framing."""
    total = 0
    for schema in schemas:
        if isinstance(schema, str):
            text = schema
        else:
            try:
                text = json.dumps(schema, ensure_ascii=False, default=str)
            except (TypeError, ValueError):
                text = str(schema)
        total += counter.count_text(text) + TOKENS_PER_TOOL
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

    >>> from session_migrator import Message
    >>> fit = fit_request([Message("user", "hi")], "gpt-4", max_output_tokens=4096)
    >>> fit.changed, fit.report.reserved_output, fit.reserve_source
    (False, 4096, 'request')
    """
    window = resolve_target(target)
    counter = counter or default_counter(window)
    reserve_tokens = _check_tokens("reserve_tokens", reserve_tokens) or 0
    if reserve_output is not None:
        reserve, source = _check_tokens("reserve_output", reserve_output) or 0, "explicit"
    else:
        reserve, source = output_reserve(window, max_output_tokens, provider=provider)
    schemas = [*tools, *([response_format] if response_format is not None else [])]
    extra = schema_tokens(schemas, counter)
    if source == "request":
        _check_room(window, reserve, extra + reserve_tokens, output_parameter)
    originals = list(messages)
    held = extra + reserve_tokens
    limit: int | None = None
    for _ in range(_FOLD_RETRIES):
        try:
            result = migrate(
                originals,
                window,
                strategy=strategy,
                query=query,
                summarizer=summarizer,
                reserve_output=reserve,
                counter=counter,
                previous_summary=previous_summary,
                extra_reserved=held,
                pending_tool_calls=pending_tool_calls,
            )
        except OutputReserveError:
            raise
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


def _check_tokens(label: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{label} must be a whole number of tokens, got {value!r}")
    if value < 0:
        raise ValueError(f"{label} must not be negative, got {value}")
    return value


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
    """The output asked for must leave room for the newest user message whole: a question cut
    to make room for a long answer is refused here, naming the number to lower (a question too
    long for the input cap itself is cut inside, as any fit does)."""
    newest = next((m for m in reversed(messages) if m.role == "user"), None)
    if newest is None or newest.id not in report.truncated_ids:
        return
    needed = counter.count_messages([m for m in messages if m.role == "system"] + [newest])
    if needed + held >= window.max_input_tokens:
        return  # too long for the input cap whatever the output: cut inside, as any fit does
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
    return OutputReserveError(
        f"{parameter}={reserve:,} leaves {exc.budget:,} tokens of {window.name}'s "
        f"{window.context_window:,}-token window for input, and the system prompt and the newest "
        f"turn alone need {exc.needed:,}: {fix}",
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
    """:func:`fit_request` for one guard, keeping each conversation's rolling summary (keyed by
    its first non-system message's id; at most ``max_summaries``, the least recent go first).
    Thread-safe; the settings given here are each call's defaults.
    """

    def __init__(
        self,
        *,
        strategy: str | Compressor = "auto",
        summarizer: Summarizer | None = None,
        reserve_output: int | None = None,
        reserve_tokens: int = 0,
        max_summaries: int = 256,
    ) -> None:
        _check_tokens("reserve_output", reserve_output)
        _check_tokens("reserve_tokens", reserve_tokens)
        self.strategy = strategy
        self.summarizer = summarizer
        self.reserve_output = reserve_output
        self.reserve_tokens = reserve_tokens
        self.max_summaries = max_summaries
        self.last_report: MigrationReport | None = None
        self.last_fit: RequestFit | None = None
        self._lock = threading.Lock()
        self._summaries: OrderedDict[str, Summary] = OrderedDict()

    def summary_of(self, messages: Sequence[Message]) -> Summary | None:
        """The rolling summary kept for the conversation ``messages`` start."""
        key = _key(messages)
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
        key = _key(messages)
        if previous_summary is None:
            previous_summary = self.summary_of(messages)
        settings: dict[str, Any] = {
            "strategy": self.strategy,
            "summarizer": self.summarizer,
            "reserve_output": self.reserve_output,
            "reserve_tokens": self.reserve_tokens,
        }
        fit = fit_request(
            messages, target, previous_summary=previous_summary, **{**settings, **request}
        )
        self.last_report, self.last_fit = fit.report, fit
        if fit.summary is not None and key is not None:
            with self._lock:
                self._summaries[key] = fit.summary
                self._summaries.move_to_end(key)
                while len(self._summaries) > self.max_summaries:
                    self._summaries.popitem(last=False)
        return fit


def _key(messages: Sequence[Message]) -> str | None:
    return next((m.id for m in messages if m.role != "system"), None)
