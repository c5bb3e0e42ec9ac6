"""``FitToModelMiddleware``: fit each model call of a LangChain v1 agent to the model it uses."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, TypeVar, cast

from langchain.agents.middleware.types import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain.agents.structured_output import (
    AutoStrategy,
    OutputToolBinding,
    ProviderStrategy,
    ToolStrategy,
)
from langchain.tools import InjectedState
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool

from langchain_session_migrator._context_tools import (
    READ_CONTEXT_DESCRIPTION,
    READ_CONTEXT_NAME,
    page_of,
)
from langchain_session_migrator._convert import messages_to_core
from langchain_session_migrator._models import model_map, unwrap_model, window_for
from langchain_session_migrator._request import (
    RequestFitter,
    binding_payloads,
    payload_tokens,
    provider_of,
    requested_output,
    tool_payload,
)
from langchain_session_migrator._state_placeholders import (
    PlaceholderState,
    with_placeholders,
)
from langchain_session_migrator._state_placeholders import (
    placeholder_tools as _placeholder_tools,
)
from langchain_session_migrator._summarizer import as_summarizer
from session_migrator import (
    BudgetError,
    Compressor,
    MigrationReport,
    ModelWindow,
    Summarizer,
    default_counter,
    narrowed,
    note_prompt_read,
)

__all__ = ["FitToModelMiddleware", "response_format_payloads", "state_read_context_tool"]

_R = TypeVar("_R")


class FitToModelMiddleware(AgentMiddleware[PlaceholderState, Any, Any]):
    """Fits ``request.messages`` to ``request.model`` just before every model call of an agent.

    ``wrap_model_call`` / ``awrap_model_call`` read the window of the model that is about to run
    (its ``profile``, else its name; ``models`` maps names to windows or models for the rest),
    count the system message, the messages, the tool schemas and the structured-output schemas
    (``response_format``: a ``ToolStrategy``'s tools, a ``ProviderStrategy``'s JSON schema, or
    for a bare schema the larger of the two, as the agent binds them after this middleware ran)
    with that model's counter, and:

    - when everything fits the input budget, pass the request on untouched (same objects),
      unless it holds a broken tool pair (a result without its call, a call whose results never
      came), which a copy leaves out;
    - otherwise pass on a copy whose messages are fitted with ``strategy`` (``auto``, ``trim``,
      ``summarize``, ``recall``, or a core compressor): the system message, a summary or a note
      on the cut part (folded into the system message, so providers that want one leading
      system message accept it), older turns relevant to the latest question, and the newest
      turns. An AI message with tool calls and its tool results stay or go together, so no
      orphan tool message is ever sent.

    The agent's state is never changed: the full history stays in the graph's state (and its
    checkpointer); only what this one call sends is fitted. Put this middleware *last* in
    ``create_agent(middleware=[...])`` so it sees the model any other middleware chose (a
    router, ``ModelFallbackMiddleware``): the first middleware is the outermost.

    ``summarizer`` is a core summarizer or any LangChain chat model; rolling summaries are kept
    in memory per conversation (the ``max_summaries`` newest), so each call summarizes only the
    newly cut messages. The conversions of the ``max_cached_messages`` most recently seen message
    objects are kept, so each step of a long run converts and counts only what is new.
    ``reserve_output`` overrides the output tokens held back, ``reserve_tokens`` holds back more
    (e.g. for provider-side additions), ``count_tools=False`` leaves tool and structured-output
    schemas uncounted. :attr:`last_report` is the report of the newest call.

    ``tools`` holds a ``read_context`` tool, which ``create_agent`` gives the model: an old tool
    output the fit shrank leaves a marker naming its id (``read_context(id="...")``), and the
    tool reads a page of the original back from the agent's state. It is sent only beside
    other tools (an agent without tools has no tool output to cut). ``context_tools=False``
    leaves it out (``tools == []``). ``placeholder_tools=True`` adds ``compress_context``,
    ``list_placeholders`` and ``restore_context``: the agent compresses a range of its own
    context (or one tool's outputs) into a summary placeholder, kept in the graph's state; each
    call's fit sends it as one line, until the agent restores it (see
    :mod:`langchain_session_migrator._state_placeholders`). These tools give way first at a
    small window: a request that does not fit beside their schemas goes without them when
    nothing in it names them (see :meth:`fit_request`).

    >>> from langchain.agents import create_agent
    >>> middleware = FitToModelMiddleware(strategy="trim")
    >>> middleware.name
    'FitToModelMiddleware'
    """

    #: the agent's state, with the placeholders ``placeholder_tools`` keep
    state_schema = PlaceholderState

    def __init__(
        self,
        *,
        strategy: str | Compressor = "auto",
        summarizer: Summarizer | BaseChatModel | Runnable[Any, Any] | None = None,
        reserve_output: int | None = None,
        reserve_tokens: int = 0,
        models: Mapping[str, Any] | Sequence[Any] | None = None,
        count_tools: bool = True,
        max_summaries: int = 256,
        max_cached_messages: int = 50_000,
        embeddings: Any = None,
        context_tools: bool = True,
        placeholder_tools: bool = False,
    ) -> None:
        super().__init__()
        self._fitter = RequestFitter(
            strategy=strategy,
            summarizer=as_summarizer(summarizer),
            reserve_output=reserve_output,
            reserve_tokens=reserve_tokens,
            max_summaries=max_summaries,
            max_cached_messages=max_cached_messages,
            embeddings=embeddings,
        )
        self.count_tools = count_tools
        self._reader_tools = [state_read_context_tool()] if context_tools else []
        self._placeholder_tools = _placeholder_tools() if placeholder_tools else []
        self.tools = [*self._reader_tools, *self._placeholder_tools]
        self._registry: dict[str, ModelWindow] = {
            name: window_for(model) for name, model in model_map(models).items()
        }

    @property
    def strategy(self) -> str | Compressor:
        """The strategy a request that does not fit is fitted with."""
        return self._fitter.strategy

    @property
    def summarizer(self) -> Summarizer | None:
        """The summarizer of the cut part (``None``: the strategy's offline default)."""
        return self._fitter.summarizer

    @property
    def last_report(self) -> MigrationReport | None:
        """The report of the newest call's fit."""
        return self._fitter.last_report

    # -- the hooks ---------------------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        request = self._tools_for(request)
        return self._read_check(handler(self.fit_request(request)), request)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        request = self._tools_for(request)
        fitted = await asyncio.to_thread(self.fit_request, request)
        return self._read_check(await handler(fitted), request)

    def _tools_for(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """``request`` without this middleware's ``read_context`` tool when it is the only tool:
        an agent without tools has no tool output to cut, and its model binds no tools."""
        if self.tools and all(t in self.tools for t in request.tools) and request.tools:
            return request.override(tools=[])
        return request

    def _read_check(self, response: _R, request: ModelRequest[Any]) -> _R:
        """``response``, after noting the prompt tokens the reply says the runtime read
        (Ollama's ``prompt_eval_count``): fewer than were sent is a silent cut (warned once;
        the next requests are fitted to what was read)."""
        result = getattr(response, "result", None)
        replies = result if isinstance(result, list) else [response]
        metadata = getattr(replies[-1], "response_metadata", None) if replies else None
        read = metadata.get("prompt_eval_count") if isinstance(metadata, Mapping) else None
        report = self.last_report
        if isinstance(read, int) and report is not None:
            note_prompt_read(self.window(request.model), report.tokens_after, read)
        return response

    # -- the fit -----------------------------------------------------------------------------

    def window(self, model: Any) -> ModelWindow:
        """The window of ``model`` (registered names first), narrowed to what its runtime was
        seen to read (a silent cut, see :meth:`_read_check`)."""
        return narrowed(window_for(model, registry=self._registry))

    def fit_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """``request`` itself when it fits ``request.model``, else a copy with fitted messages.

        This middleware's own tools give way first. Where the request does not fit beside the
        ``read_context`` schema (it takes room a small window's turn needs), it is fitted
        without it, then without the placeholder tools too; such a fit is sent, those tools
        left out, only when nothing in it names them (a marker of a cut output that names
        ``read_context``, a placeholder's line): the model is never told of a tool it lacks.
        Else the first refusal stands."""
        try:
            return self._fit_with(request, request.tools)
        except BudgetError as refused:
            kept = list(request.tools)
            left_out: list[str] = []
            for group in (self._reader_tools, self._placeholder_tools):
                ours = {id(t) for t in group}
                if not any(id(t) in ours for t in kept):
                    continue
                kept = [t for t in kept if id(t) not in ours]
                left_out += [t.name for t in group]
                try:
                    fitted = self._fit_with(request, kept)
                except BudgetError:
                    continue
                if _names_any(fitted, left_out):
                    break
                return fitted.override(tools=kept)
            raise refused from None

    def _fit_with(self, request: ModelRequest[Any], tools: Sequence[Any]) -> ModelRequest[Any]:
        window = self.window(request.model)
        payloads: list[Any] = []
        if self.count_tools:
            # create_agent binds the tools strict beside a ProviderStrategy (and langchain-openai
            # makes them strict beside any response_format): counted in that form
            strict = request.model_settings.get("strict")
            if isinstance(request.response_format, ProviderStrategy):
                strict = True
            payloads = [
                tool_payload(t, strict=strict if isinstance(strict, bool) else None) for t in tools
            ]
            payloads += binding_payloads(request.model_settings)
            payloads += response_format_payloads(request.response_format, window)
        asked, parameter = requested_output(unwrap_model(request.model), request.model_settings)
        placed = with_placeholders(request.messages, request.state)
        fitted = self._fitter.fit(
            request.system_message,
            request.messages if placed is None else placed,
            window,
            payloads=payloads,
            max_output_tokens=asked,
            output_parameter=parameter,
            provider=provider_of(unwrap_model(request.model)),
        )
        if fitted is None:
            if placed is None:
                return request
            return request.override(messages=cast(list[AnyMessage], placed))
        system, messages = fitted
        return request.override(messages=cast(list[AnyMessage], messages), system_message=system)


def _names_any(request: ModelRequest[Any], names: Sequence[str]) -> bool:
    """Whether a message of ``request`` (or its system message) names one of the tools
    ``names`` as a call (``name(``)."""
    texts = [str(m.content) for m in request.messages]
    if request.system_message is not None:
        texts.append(str(request.system_message.content))
    return any(f"{name}(" in text for text in texts for name in names)


def state_read_context_tool() -> BaseTool:
    """The ``read_context`` tool of a LangChain v1 agent: a page of a message the fit cut, read
    from the graph's state (``state["messages"]``, injected by the agent's tool node, never
    shown to the model). Ids are the core ids the middleware fitted the messages under: a
    message's own ``id`` (the agent's state gives every message one), else one derived from its
    position, as :func:`~langchain_session_migrator.messages_to_core` derives it."""

    def read_context(
        id: str,
        state_messages: Annotated[list[BaseMessage], InjectedState("messages")],
        offset: int = 0,
    ) -> str:
        return page_of(lambda: messages_to_core(state_messages), id, offset)

    return StructuredTool.from_function(
        read_context, name=READ_CONTEXT_NAME, description=READ_CONTEXT_DESCRIPTION
    )


def response_format_payloads(response_format: Any, window: ModelWindow) -> list[Any]:
    """The schemas ``create_agent`` binds for ``response_format`` (after the middleware ran):
    a ``ToolStrategy``'s tools, a ``ProviderStrategy``'s ``response_format``; for a bare schema
    (``AutoStrategy``), the larger of the two, as either may be chosen for the model."""
    if response_format is None:
        return []
    if isinstance(response_format, ToolStrategy):
        return [
            tool_payload(OutputToolBinding.from_schema_spec(spec).tool)
            for spec in response_format.schema_specs
        ]
    if isinstance(response_format, ProviderStrategy):
        return [response_format.to_model_kwargs()["response_format"]]
    schema = (
        response_format.schema if isinstance(response_format, AutoStrategy) else response_format
    )
    as_tools = response_format_payloads(ToolStrategy(schema=schema), window)
    as_provider = response_format_payloads(ProviderStrategy(schema=schema), window)
    counter = default_counter(window)
    if payload_tokens(as_tools, counter) >= payload_tokens(as_provider, counter):
        return as_tools
    return as_provider
