"""Loopback emulators of the self-hosted servers that speak OpenAI's Chat Completions API: vLLM,
SGLang, Hugging Face TGI, llama.cpp's server (and llamafile, which is that server) and LM Studio.

Each serves one model with the window it was started with, says so where the real server does
(vLLM and SGLang: ``max_model_len`` in ``/v1/models``; TGI: ``max_total_tokens`` in ``/info``;
llama.cpp: ``n_ctx`` in ``/props``; LM Studio: ``loaded_context_length`` in
``/api/v0/models/<id>``), counts the prompt as
:mod:`tests.conformance._openai_api` does (``cl100k_base``), and refuses an over-long request
with its own 400:

- vLLM: ``{"object": "error", "message": "This model's maximum context length is N tokens.
  However, you requested M tokens (P in the messages, O in the completion). Please reduce the
  length of the messages or completion.", "type": "BadRequestError", "code": 400}``;
- SGLang: the same shape, "Requested token count exceeds the model's maximum context length of
  N tokens. You requested a total of M tokens: P tokens from the input messages and O tokens for
  the completion. Please reduce the number of tokens in the input messages or the completion to
  fit within the limit.";
- TGI: 422 ``{"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= N.
  Given: P `inputs` tokens and O `max_new_tokens`", "error_type": "validation"}``;
- llama.cpp: ``{"error": {"code": 400, "message": "the request exceeds the available context
  size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": P,
  "n_ctx": N}}``;
- LM Studio: ``{"error": "Trying to keep the first P tokens when context the overflows. However,
  the model is loaded with context length of only N tokens, which is not enough. ..."}``.
"""

from __future__ import annotations

from typing import Any

from tests.conformance._http import Recorded, Refusal
from tests.conformance._models import ServedModel
from tests.conformance._openai_api import OpenAIEmulator

RUNTIMES = ("vllm", "sglang", "tgi", "llama.cpp", "lmstudio")


class ServingEmulator(OpenAIEmulator):
    """One self-hosted ``runtime`` serving ``model`` with a ``window``-token context."""

    def __init__(self, runtime: str, model: str, window: int) -> None:
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {RUNTIMES}")
        super().__init__()
        self.name = "openai"  # counted as the OpenAI emulator counts (COUNT_TOLERANCE)
        self.runtime = runtime
        self.model = ServedModel(model, runtime, window, window, window, True, "cl100k_base")

    def model_for(self, name: str) -> ServedModel | None:
        return self.model if name == self.model.name else None

    def handle_probe(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        m = self.model
        if path == "/v1/models":
            entry: dict[str, Any] = {"id": m.name, "object": "model", "owned_by": self.runtime}
            if self.runtime in ("vllm", "sglang"):
                entry["max_model_len"] = m.window
            return {"object": "list", "data": [entry]}
        if path == "/info" and self.runtime == "tgi":
            return {
                "model_id": m.name,
                "max_input_tokens": m.window - 1,
                "max_total_tokens": m.window,
                "router": "text-generation-router",
            }
        if path == "/props" and self.runtime == "llama.cpp":
            return {"default_generation_settings": {"n_ctx": m.window}, "total_slots": 1}
        if path == f"/api/v0/models/{m.name}" and self.runtime == "lmstudio":
            return {"id": m.name, "loaded_context_length": m.window, "max_context_length": 131072}
        return None

    def _check_window(self, model: ServedModel, rec: Recorded, out_param: str) -> None:
        prompt, out = rec.prompt_tokens, rec.max_tokens or 0
        if prompt + out <= model.window:
            return
        if self.runtime == "vllm":
            raise Refusal(
                400,
                {
                    "object": "error",
                    "message": f"This model's maximum context length is {model.window} tokens. "
                    f"However, you requested {prompt + out} tokens ({prompt} in the messages, "
                    f"{out} in the completion). Please reduce the length of the messages or "
                    "completion.",
                    "type": "BadRequestError",
                    "param": None,
                    "code": 400,
                },
            )
        if self.runtime == "sglang":
            raise Refusal(
                400,
                {
                    "object": "error",
                    "message": "Requested token count exceeds the model's maximum context length "
                    f"of {model.window} tokens. You requested a total of {prompt + out} tokens: "
                    f"{prompt} tokens from the input messages and {out} tokens for the "
                    "completion. Please reduce the number of tokens in the input messages or "
                    "the completion to fit within the limit.",
                    "type": "BadRequestError",
                    "param": None,
                    "code": 400,
                },
            )
        if self.runtime == "tgi":
            raise Refusal(
                422,
                {
                    "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be "
                    f"<= {model.window}. Given: {prompt} `inputs` tokens and {out} "
                    "`max_new_tokens`",
                    "error_type": "validation",
                },
            )
        if self.runtime == "llama.cpp":
            raise Refusal(
                400,
                {
                    "error": {
                        "code": 400,
                        "message": "the request exceeds the available context size, try "
                        "increasing it",
                        "type": "exceed_context_size_error",
                        "n_prompt_tokens": prompt,
                        "n_ctx": model.window,
                    }
                },
            )
        raise Refusal(
            400,
            {
                "error": f"Trying to keep the first {prompt} tokens when context the overflows. "
                f"However, the model is loaded with context length of only {model.window} "
                "tokens, which is not enough. Try to load the model with a larger context "
                "length, or provide a shorter input"
            },
        )
