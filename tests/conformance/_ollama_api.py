"""A loopback emulator of Ollama's HTTP API (``/api/chat``, ``/api/show``, ``/api/ps``).

At the limit it behaves as the real server does: it does not refuse. A prompt longer than the
window it runs with (``options.num_ctx``, else the Modelfile's ``num_ctx``, else the server's
default, ``OLLAMA_CONTEXT_LENGTH``) is cut from the start, the system prompt first, and the reply's
``prompt_eval_count`` says how many prompt tokens were read. Each cut is recorded
(``Recorded.status`` :data:`TRUNCATED` marks it, so ``refusals`` lists silent cuts as the
failures they are).

How it counts the prompt: each message is ``4 + tokens(role) + tokens(content)`` in
``cl100k_base`` (Llama 3's tokenizer is a tiktoken BPE of the same family), plus the reply
priming 3.

``/api/show`` answers the Modelfile's parameters (``num_ctx`` when :attr:`modelfile_ctx` is set)
and ``model_info`` (``llama.context_length``, the trained length); ``/api/ps`` lists the model as
loaded with the ``context_length`` it runs with once a chat has loaded it (or when
:attr:`loaded` is set).
"""

from __future__ import annotations

from typing import Any

from session_migrator import TiktokenCounter
from tests.conformance._http import Answer, Emulator, Recorded, Refusal, pieces

#: Silent truncation, recorded as this status (the client sees a 200): ``refusals`` lists it.
TRUNCATED = 413
_counter = TiktokenCounter("cl100k_base")


def _tokens(message: dict[str, Any]) -> int:
    content = message.get("content") or ""
    return 4 + _counter.count_text(str(message.get("role", ""))) + _counter.count_text(content)


class OllamaEmulator(Emulator):
    """See the module docstring."""

    name = "ollama"

    def __init__(
        self, *, default_ctx: int = 4096, modelfile_ctx: int | None = None, trained: int = 131_072
    ) -> None:
        super().__init__()
        self.default_ctx = default_ctx
        self.modelfile_ctx = modelfile_ctx
        self.trained = trained
        self.loaded: dict[str, int] = {}
        self.says_window = True  # False: /api/ps and /api/show answer 404 (an older or a proxy)
        self.cut: list[list[dict[str, Any]]] = []  # the messages each silent cut dropped

    def bad_request(self, message: str) -> Refusal:
        return Refusal(400, {"error": message})

    probe_paths = frozenset({"/api/show"})

    def handle_probe(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        if not self.says_window:
            return None
        if path == "/api/ps":
            loaded = [
                {"name": name, "model": name, "context_length": ctx}
                for name, ctx in self.loaded.items()
            ]
            return {"models": loaded}
        if path == "/api/show":
            parameters = f"num_ctx {self.modelfile_ctx}" if self.modelfile_ctx else ""
            return {
                "parameters": parameters,
                "model_info": {"llama.context_length": self.trained},
                "details": {"family": "llama"},
            }
        return None

    def handle(
        self, path: str, headers: dict[str, str], body: dict[str, Any], rec: Recorded
    ) -> Answer:
        if path != "/api/chat":
            raise Refusal(404, {"error": f"404 page not found: {path}"})
        return self._chat(body, rec)

    def _chat(self, body: dict[str, Any], rec: Recorded) -> Answer:
        model = str(body.get("model") or "")
        options = body.get("options") or {}
        # (a num_ctx past the model's trained context is capped to it, as Ollama does)
        window = min(
            int(options.get("num_ctx") or self.modelfile_ctx or self.default_ctx), self.trained
        )
        self.loaded[model] = window
        messages = list(body.get("messages") or [])
        if not messages:
            raise self.bad_request("messages must not be empty")
        sizes = [_tokens(m) for m in messages]
        prompt = 3 + sum(sizes)
        rec.prompt_tokens, rec.window = prompt, window
        rec.max_tokens = options.get("num_predict")
        dropped: list[dict[str, Any]] = []
        while prompt > window and len(messages) > 1:  # the real server keeps the end
            dropped.append(messages.pop(0))
            prompt -= sizes.pop(0)
        if dropped:
            rec.status = TRUNCATED
            rec.error = {"dropped": len(dropped), "read": prompt}
            self.cut.append(dropped)
        reply = self.next_reply()
        done = {
            "model": model,
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": prompt,
            "eval_count": max(1, _counter.count_text(reply.text)),
        }
        if body.get("stream", True):
            lines: list[dict[str, Any]] = [
                {
                    "model": model,
                    "created_at": "2026-01-01T00:00:00Z",
                    "message": {"role": "assistant", "content": piece},
                    "done": False,
                }
                for piece in pieces(reply.text)
            ]
            return Answer(lines=[*lines, done])
        done["message"] = {"role": "assistant", "content": reply.text}
        return Answer(body=done)
