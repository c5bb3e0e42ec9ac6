"""``FitToModelLLM``: a LlamaIndex LLM that fits every request to its own model's window."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms import LLM
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import ToolSelection

from llamaindex_session_migrator._memory_options import embeddings_for
from llamaindex_session_migrator._models import provider_of, requested_output, window_for
from llamaindex_session_migrator._request_fit import RequestFitter
from llamaindex_session_migrator._summarizer import LlamaIndexSummarizer
from session_migrator import (
    Compressor,
    MigrationReport,
    ModelWindow,
    Summarizer,
    check_strategy,
    narrowed,
    note_prompt_read,
)

if TYPE_CHECKING:
    from llama_index.core.tools.types import BaseTool

__all__ = ["FitToModelLLM"]

_Reply = TypeVar("_Reply")

#: The fields of an LLM that shape how ``predict``/``stream`` format a prompt: the guard takes
#: the wrapped LLM's, so its prompts are the ones the wrapped LLM would build.
_PROMPT_FIELDS = (
    "callback_manager",
    "system_prompt",
    "messages_to_prompt",
    "completion_to_prompt",
    "output_parser",
    "pydantic_program_mode",
    "query_wrapper_prompt",
)


class FitToModelLLM(FunctionCallingLLM):
    """Wraps a LlamaIndex LLM and fits every request to that LLM's own window, just before it
    is sent: the final message list (whatever an engine or agent put in it: its prompt, the
    retrieved context, the history, the scratchpad), the tool schemas bound to the call, and the
    output it asks for (``metadata.num_output``, in full: LlamaIndex sends it as ``max_tokens``).

    - A request that fits goes to the wrapped LLM untouched (the same list, the same objects).
    - Otherwise its messages are fitted with ``strategy`` (``auto``, ``trim``, ``summarize``,
      ``recall`` or a core compressor): system messages, a summary or note of what was cut, the
      older turns relevant to the latest question, the newest turns; a tool call and its results
      stay or go together; the result is a conversation OpenAI and Anthropic accept.
    - A completion prompt (``complete`` and its variants) over the window is cut inside, its
      head and tail kept, with a marker.

    Every other call is the wrapped LLM's: ``metadata`` (so engines and agents size their work by
    the real model), tool preparation and ``get_tool_calls_from_response``, and the
    instrumentation events (they show what was really sent). Messages a
    :class:`~llamaindex_session_migrator.SessionMigratorMemory` handed out are recognised: the
    fit reuses their stored counts and the session's rolling summary. Wrap each agent's LLM in a
    workflow, and each fits its own model while they share one memory.

    ``summarizer`` is a core summarizer or a LlamaIndex LLM; ``reserve_output`` overrides the
    output held back; ``reserve_tokens`` holds back more (provider-side additions);
    :attr:`last_report` is the report of the newest call that was fitted or checked.

    >>> from llama_index.core.llms import ChatMessage, MockLLM
    >>> llm = FitToModelLLM(MockLLM(max_tokens=8))
    >>> llm.metadata.context_window
    3900
    >>> llm.chat([ChatMessage(role="user", content="Hi")]).message.content
    'text text text text text text text text'
    """

    _llm: LLM = PrivateAttr()
    _fitter: RequestFitter = PrivateAttr()

    def __init__(
        self,
        llm: LLM,
        *,
        strategy: str | Compressor = "auto",
        summarizer: Summarizer | LLM | None = None,
        reserve_output: int | None = None,
        reserve_tokens: int = 0,
        embeddings: Any = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(llm, LLM):
            raise TypeError(
                f"FitToModelLLM wraps a LlamaIndex LLM (llama_index.core.llms.LLM), got "
                f"{type(llm).__name__}"
            )
        check_strategy(strategy)
        for label, value in (
            ("reserve_output", reserve_output),
            ("reserve_tokens", reserve_tokens),
        ):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"{label} must be a whole number of tokens, got {value!r}")
            if value is not None and value < 0:
                raise ValueError(f"{label} must not be negative, got {value}")
        fields = {name: getattr(llm, name, None) for name in _PROMPT_FIELDS}
        fields = {k: v for k, v in fields.items() if v is not None}
        super().__init__(**{**fields, **kwargs})
        self._llm = llm
        self._fitter = RequestFitter(
            strategy=strategy,
            summarizer=(
                LlamaIndexSummarizer(summarizer) if isinstance(summarizer, LLM) else summarizer
            ),
            reserve_output=reserve_output,
            reserve_tokens=reserve_tokens,
            embeddings=embeddings_for(embeddings),
        )

    @classmethod
    def class_name(cls) -> str:
        return "FitToModelLLM"

    # -- what is the wrapped LLM's -------------------------------------------------------------

    @property
    def llm(self) -> LLM:
        """The wrapped LLM."""
        return self._llm

    @property
    def metadata(self) -> LLMMetadata:
        return self._llm.metadata

    @property
    def model_window(self) -> ModelWindow:
        """The window requests are fitted to (the wrapped LLM's metadata, read now), narrowed
        to what its runtime was seen to read (a silent cut, see :meth:`_read_check`)."""
        return narrowed(window_for(self._llm))

    @property
    def last_report(self) -> MigrationReport | None:
        """The report of the newest fitted or checked request."""
        return self._fitter.last_report

    def _function_llm(self) -> FunctionCallingLLM:
        if not isinstance(self._llm, FunctionCallingLLM):
            raise TypeError(
                f"{type(self._llm).__name__} does not call tools (it is not a "
                "FunctionCallingLLM): give the agent an LLM that does, or use a ReActAgent"
            )
        return self._llm

    def get_tool_calls_from_response(
        self, response: ChatResponse, error_on_no_tool_call: bool = True, **kwargs: Any
    ) -> list[ToolSelection]:
        return self._function_llm().get_tool_calls_from_response(
            response, error_on_no_tool_call=error_on_no_tool_call, **kwargs
        )

    def _prepare_chat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        prepared = self._function_llm()._prepare_chat_with_tools_compat(
            tools,
            user_msg=user_msg,
            chat_history=chat_history,
            verbose=verbose,
            allow_parallel_tool_calls=allow_parallel_tool_calls,
            tool_required=tool_required,
            **kwargs,
        )
        return dict(prepared)

    def _validate_chat_with_tools_response(
        self,
        response: ChatResponse,
        tools: Sequence[BaseTool],
        allow_parallel_tool_calls: bool = False,
        **kwargs: Any,
    ) -> ChatResponse:
        return self._function_llm()._validate_chat_with_tools_response(
            response, tools, allow_parallel_tool_calls=allow_parallel_tool_calls, **kwargs
        )

    # -- the fit -------------------------------------------------------------------------------

    def fit_messages(
        self, messages: Sequence[ChatMessage], tools: Sequence[Any] = ()
    ) -> Sequence[ChatMessage]:
        """``messages`` as they will be sent with ``tools``: themselves when they fit."""
        return self._fit(messages, self._sent_tools(tools, {}), {})

    def _sent_tools(self, tools: Sequence[Any], options: Mapping[str, Any]) -> list[Any]:
        """``tools`` as the wrapped LLM will send them: its own ``_prepare_chat_with_tools``
        builds the schemas (llama-index-llms-openai adds ``strict`` and
        ``additionalProperties`` to each, Anthropic's are its own format), so what is counted is
        what goes over the wire. Tools the LLM cannot prepare are counted by their OpenAI
        schema (``_request_fit.tool_schema``)."""
        llm = self._llm
        if not tools or not isinstance(llm, FunctionCallingLLM):
            return list(tools)
        if any(not hasattr(t, "metadata") for t in tools):
            return list(tools)  # already schemas (a chat(..., tools=[...]) call)
        try:  # a provider class's own preparation must not break a request
            prepared = llm._prepare_chat_with_tools_compat(
                list(tools), user_msg=None, chat_history=[], **options
            )
        except Exception:
            return list(tools)
        specs = dict(prepared).get("tools")
        if not isinstance(specs, list | tuple) or len(specs) != len(tools):
            return list(tools)
        return list(specs)

    def _fit(
        self, messages: Sequence[ChatMessage], tools: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> Sequence[ChatMessage]:
        asked, parameter = requested_output(self._llm, kwargs)
        fitted = self._fitter.fit(
            messages,
            self.model_window,
            tools=tools,
            max_output_tokens=asked,
            output_parameter=parameter,
            provider=provider_of(self._llm),
        )
        return messages if fitted is None else fitted

    def _fit_prompt(self, prompt: str, kwargs: Mapping[str, Any] | None = None) -> str:
        asked, parameter = requested_output(self._llm, kwargs)
        fitted = self._fitter.fit_prompt(
            prompt,
            self.model_window,
            max_output_tokens=asked,
            output_parameter=parameter,
            provider=provider_of(self._llm),
        )
        return prompt if fitted is None else fitted

    @staticmethod
    def _history(
        user_msg: str | ChatMessage | None, chat_history: list[ChatMessage] | None
    ) -> list[ChatMessage]:
        messages = list(chat_history or [])
        if isinstance(user_msg, str):
            messages.append(ChatMessage(role=MessageRole.USER, content=user_msg))
        elif user_msg is not None:
            messages.append(user_msg)
        return messages

    def _with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None,
        chat_history: list[ChatMessage] | None,
        **options: Any,
    ) -> dict[str, Any]:
        """The wrapped LLM's ``*_with_tools`` arguments, the history fitted with ``tools``."""
        sent = self._sent_tools(tools, options)
        fitted = self._fit(self._history(user_msg, chat_history), sent, options)
        return {"tools": tools, "user_msg": None, "chat_history": list(fitted), **options}

    # -- chat ----------------------------------------------------------------------------------

    def _read_check(self, response: _Reply) -> _Reply:
        """``response``, after noting the prompt tokens it says the runtime read (Ollama's
        ``prompt_eval_count``): fewer than were sent is a silent cut (warned once; the next
        requests are fitted to what was read)."""
        raw = getattr(response, "raw", None)
        read = raw.get("prompt_eval_count") if isinstance(raw, Mapping) else None
        report = self.last_report
        if isinstance(read, int) and report is not None:
            note_prompt_read(window_for(self._llm), report.tokens_after, read)
        return response

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        fitted = self._fit(messages, kwargs.get("tools") or (), kwargs)
        return self._read_check(self._llm.chat(fitted, **kwargs))

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        fitted = self._fit(messages, kwargs.get("tools") or (), kwargs)
        return self._read_check(await self._llm.achat(fitted, **kwargs))

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        fitted = self._fit(messages, kwargs.get("tools") or (), kwargs)
        return self._llm.stream_chat(fitted, **kwargs)

    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        fitted = self._fit(messages, kwargs.get("tools") or (), kwargs)
        return await self._llm.astream_chat(fitted, **kwargs)

    # -- chat with tools: fitted here, prepared and sent by the wrapped LLM ------------------------

    def chat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> ChatResponse:
        return self._read_check(
            self._function_llm().chat_with_tools(
                **self._with_tools(
                    tools,
                    user_msg,
                    chat_history,
                    verbose=verbose,
                    allow_parallel_tool_calls=allow_parallel_tool_calls,
                    tool_required=tool_required,
                    **kwargs,
                )
            )
        )

    async def achat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> ChatResponse:
        return await self._function_llm().achat_with_tools(
            **self._with_tools(
                tools,
                user_msg,
                chat_history,
                verbose=verbose,
                allow_parallel_tool_calls=allow_parallel_tool_calls,
                tool_required=tool_required,
                **kwargs,
            )
        )

    def stream_chat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> ChatResponseGen:
        return self._function_llm().stream_chat_with_tools(
            **self._with_tools(
                tools,
                user_msg,
                chat_history,
                verbose=verbose,
                allow_parallel_tool_calls=allow_parallel_tool_calls,
                tool_required=tool_required,
                **kwargs,
            )
        )

    async def astream_chat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> ChatResponseAsyncGen:
        return await self._function_llm().astream_chat_with_tools(
            **self._with_tools(
                tools,
                user_msg,
                chat_history,
                verbose=verbose,
                allow_parallel_tool_calls=allow_parallel_tool_calls,
                tool_required=tool_required,
                **kwargs,
            )
        )

    # -- completion ----------------------------------------------------------------------------

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        fitted = self._fit_prompt(prompt, kwargs)
        return self._read_check(self._llm.complete(fitted, formatted=formatted, **kwargs))

    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        return await self._llm.acomplete(
            self._fit_prompt(prompt, kwargs), formatted=formatted, **kwargs
        )

    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        return self._llm.stream_complete(
            self._fit_prompt(prompt, kwargs), formatted=formatted, **kwargs
        )

    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseAsyncGen:
        fitted = self._fit_prompt(prompt, kwargs)
        return await self._llm.astream_complete(fitted, formatted=formatted, **kwargs)
