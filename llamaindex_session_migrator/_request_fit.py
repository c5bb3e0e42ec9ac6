"""Fitting one complete LLM request (messages and tool schemas) to one model's window.

The request is fitted by the core's :func:`~session_migrator.fit_request` (its
:class:`~session_migrator.RequestFitter`): every message, every tool schema (its OpenAI function
JSON plus a small framing cost) and, by the provider's rule, the output the request asks for
(read by :func:`~llamaindex_session_migrator._models.requested_output` where the LLM class keeps
it: ``max_tokens``, ``additional_kwargs``, ``num_output``; the core's default when it says
nothing). A request that fits goes out untouched (the same list, the same objects); else its
messages are fitted, and what was cut is reported. Past the budget, for Anthropic, the end of
the part the next request sends again (``MigrationReport.stable_through``) carries a
``CachePoint``, so the service reads that part from its prompt cache.

Messages a :class:`~llamaindex_session_migrator.SessionMigratorMemory` handed out are known by
their stored record (see ``_instrumentation``): they keep their stored id and cached token
count, and the memory's rolling summary of the session (in its store) is extended rather than
written afresh. When the memory handed out a compressed view (fitted to another model), its part
of the request is replaced by the whole stored log, so a larger model gets back what was cut
and recall ranks the whole session. Every other message is converted once per object and given
an id derived from its content, so the same request fitted twice gives the same result and a
rolling summary of a long agent run is extended call after call.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import CacheControl, CachePoint, ChatMessage

from llamaindex_session_migrator._convert import from_chat_message, to_chat_message
from llamaindex_session_migrator._instrumentation import lookup
from session_migrator import (
    TOKENS_PER_TOOL,
    Compressor,
    Message,
    MigrationReport,
    ModelWindow,
    Summarizer,
    Summary,
    TokenCounter,
    counter_for,
)
from session_migrator import RequestFitter as CoreRequestFitter

__all__ = ["TOKENS_PER_TOOL", "RequestFitter", "tool_schema"]


def with_cache_point(message: ChatMessage) -> ChatMessage:
    """A copy of ``message`` ending with a prompt-cache breakpoint (LlamaIndex's ``CachePoint``
    block, which the Anthropic LLM class sends as ``cache_control`` on the block before it)."""
    if any(isinstance(b, CachePoint) for b in message.blocks):
        return message
    marked = message.model_copy(deep=True)
    marked.blocks = [*marked.blocks, CachePoint(cache_control=CacheControl(type="ephemeral"))]
    return marked


def tool_schema(tool: Any) -> Any:
    """The schema a tool is sent as: a LlamaIndex tool's OpenAI function schema, a dict as is,
    anything else as its ``str``."""
    metadata = getattr(tool, "metadata", None)
    to_openai = getattr(metadata, "to_openai_tool", None)
    if callable(to_openai):
        try:
            return to_openai()
        except Exception:  # a tool whose schema cannot be built is counted by its text
            return str(tool)
    return tool


def _fingerprint(message: ChatMessage) -> tuple[Any, ...]:
    """What an in-place edit changes (LlamaIndex rewrites a block's text, appends blocks)."""
    return (
        message.role,
        tuple((id(b), getattr(b, "text", None)) for b in message.blocks),
        tuple(message.additional_kwargs),
    )


def _content_id(message: ChatMessage) -> str:
    digest = hashlib.blake2b(
        message.model_dump_json(exclude_none=True).encode(), digest_size=10
    ).hexdigest()
    return f"li-req-{digest}"


class RequestFitter:
    """Fits requests for one guard (thread-safe; see the module docstring)."""

    def __init__(
        self,
        *,
        strategy: str | Compressor,
        summarizer: Summarizer | None,
        reserve_output: int | None,
        reserve_tokens: int,
        max_summaries: int = 256,
        max_cached_messages: int = 20_000,
        embeddings: Any = None,
    ) -> None:
        self.core = CoreRequestFitter(
            strategy=strategy,
            summarizer=summarizer,
            reserve_output=reserve_output,
            reserve_tokens=reserve_tokens,
            max_summaries=max_summaries,
            embeddings=embeddings,
        )
        self.max_cached_messages = max_cached_messages
        self._lock = threading.Lock()
        self._converted: OrderedDict[int, tuple[ChatMessage, tuple[Any, ...], Message]] = (
            OrderedDict()
        )

    @property
    def last_report(self) -> MigrationReport | None:
        return self.core.last_report

    # -- counting ----------------------------------------------------------------------------

    @staticmethod
    def counter(window: ModelWindow) -> TokenCounter:
        return counter_for(window.tokenizer, model=window.name)

    # -- conversion --------------------------------------------------------------------------

    def _to_core(self, messages: Sequence[ChatMessage]) -> tuple[list[Message], Any, list[int]]:
        """The core messages, the memory (listener) whose messages the request carries, and
        the positions of its messages (an edited one keeps its stored id)."""
        out: list[Message] = []
        owner: Any = None
        span: list[int] = []
        seen: dict[str, int] = {}
        with self._lock:
            cache = self._converted
            for position, message in enumerate(messages):
                core: Message | None = None
                handout = lookup(message)
                publisher = handout.owner() if handout is not None else None
                if handout is not None and publisher is not None and owner in (None, publisher):
                    owner = publisher
                    span.append(position)
                    if message is handout.template or message == handout.template:
                        core = handout.core
                    else:  # edited in place since it was handed out (an agent's state)
                        core = from_chat_message(message, id=handout.core.id)
                if core is None:
                    fingerprint = _fingerprint(message)
                    hit = cache.get(id(message))
                    if hit is not None and hit[0] is message and hit[1] == fingerprint:
                        cache.move_to_end(id(message))
                        core = hit[2]
                    else:
                        core = from_chat_message(message, id=_content_id(message))
                        cache[id(message)] = (message, fingerprint, core)
                repeat = seen.get(core.id, 0)
                seen[core.id] = repeat + 1
                out.append(core if not repeat else core.replace(id=f"{core.id}-{repeat}"))
            while len(cache) > self.max_cached_messages:
                cache.popitem(last=False)
        return out, owner, span

    def _with_full_log(self, core: list[Message], owner: Any, span: list[int]) -> list[Message]:
        """``core`` with the memory's part replaced by its whole stored log up to the newest
        message it handed out, when the memory sent a compressed view (its summary or note):
        this model may have room for what the memory cut for another, and recall and the
        rolling summary then work on the whole session. Else ``core`` itself."""
        memory = getattr(owner, "memory", None)
        if (
            memory is None
            or not span
            or span != list(range(span[0], span[-1] + 1))
            or not any(core[i].marker is not None for i in span)
        ):
            return core
        log = memory.store.load(memory.session_id)
        position = {m.id: k for k, m in enumerate(log)}
        ours = {core[i].id: core[i] for i in span}
        found = [position[i] for i in ours if i in position]
        if not found:
            return core
        middle = [ours.get(m.id, m) for m in log[: max(found) + 1]]
        return [*core[: span[0]], *middle, *core[span[-1] + 1 :]]

    # -- the fit -----------------------------------------------------------------------------

    def fit(
        self,
        messages: Sequence[ChatMessage],
        window: ModelWindow,
        *,
        tools: Sequence[Any] = (),
        max_output_tokens: int | None = None,
        output_parameter: str = "max_tokens",
        provider: str | None = None,
    ) -> list[ChatMessage] | None:
        """The messages to send instead of ``messages``, or ``None`` when they fit as they are.

        ``tools`` are counted with their schemas; ``max_output_tokens`` is what the request asks
        for (``None``: it does not say).
        """
        counter = self.counter(window)
        sent, owner, span = self._to_core(messages)
        core = self._with_full_log(sent, owner, span)
        expanded = core is not sent
        fit = self.core.fit(
            core,
            window,
            previous_summary=self._previous_summary(core, owner),
            tools=[tool_schema(t) for t in tools],
            max_output_tokens=max_output_tokens,
            output_parameter=output_parameter,
            provider=provider,
            counter=counter,
        )
        if not fit.changed and not expanded:
            return None
        originals = {id(c): m for c, m in zip(sent, messages, strict=True)}
        out = [originals.get(id(m)) or to_chat_message(m) for m in fit.messages]
        through = fit.report.stable_through
        if provider == "anthropic" and through is not None:
            # Anthropic reads its prompt cache up to a marked block only: the end of what the
            # next request sends again, byte for byte (the kept turns' end), is marked
            at = next((k for k, m in enumerate(fit.messages) if m.id == through), None)
            if at is not None:
                out[at] = with_cache_point(out[at])
        return out

    def _previous_summary(self, core: Sequence[Message], owner: Any) -> Summary | None:
        """This guard's rolling summary of the conversation ``core`` starts, else the one the
        memory that handed the messages out keeps in its store."""
        held = self.core.summary_of(core)
        if held is not None:
            return held
        memory = getattr(owner, "memory", None)
        if memory is None:
            return None
        stored = memory.store.get_summary(memory.session_id)
        if stored is None:
            return None
        return Summary(
            stored.text, stored.first_id, stored.last_id, stored.covered_count, stored.strategy
        )

    def fit_prompt(
        self,
        prompt: str,
        window: ModelWindow,
        *,
        max_output_tokens: int | None = None,
        output_parameter: str = "max_tokens",
        provider: str | None = None,
    ) -> str | None:
        """A completion prompt that fits (cut inside, head and tail kept, with a marker), or
        ``None`` when ``prompt`` fits as it is."""
        fit = self.core.fit(
            [Message("user", prompt, id="li-prompt")],
            window,
            strategy="trim",
            max_output_tokens=max_output_tokens,
            output_parameter=output_parameter,
            provider=provider,
            counter=self.counter(window),
            fold_notes=False,
        )
        if not fit.changed:
            return None
        return "\n\n".join(m.text for m in fit.messages)
