"""A loopback emulator of OpenAI's Chat Completions API (``POST /v1/chat/completions``).

What it checks, as the service does, and the error body it answers with (OpenAI's own):

- the model is one of :mod:`tests.conformance._models` (else 404 ``model_not_found``);
- ``messages`` is a non-empty list of system/developer/user/assistant/tool messages;
- tool pairs: a ``role="tool"`` message must answer a ``tool_calls`` id of the assistant message
  before it (400 "Invalid parameter: messages with role 'tool' must be a response to a
  preceeding message with 'tool_calls'."), and an assistant message with ``tool_calls`` must be
  followed by a tool message for each id (400 "An assistant message with 'tool_calls' must be
  followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did
  not have response messages: ...");
- ``response_format: {"type": "json_object"}`` needs the word "json" in the messages;
- ``max_tokens`` / ``max_completion_tokens`` at most the model's output cap (400
  ``invalid_value``);
- the window: ``prompt + (max_completion_tokens or max_tokens or 0) <= window``, else 400
  ``context_length_exceeded`` with "This model's maximum context length is 8192 tokens. However,
  you requested N tokens (P in the messages, M in the completion). ..." (with no max_tokens:
  "However, your messages resulted in P tokens.").

How it counts the prompt (the cookbook's formula, "How to count tokens with tiktoken", with the
model's encoding loaded offline as session-migrator loads it, through ``TiktokenCounter``)::

    prompt = 3                                           # the reply priming
           + sum over messages of:
               3 + tokens(role) + tokens(text of the content parts)
               + (1 + tokens(name))                      if the message has a name
               + sum over tool_calls of 3 + tokens(name) + tokens(arguments) + tokens(id)
               + tokens(tool_call_id)                    for a tool message
           + sum over tools / functions of tokens(json.dumps(tool)) + 8
           + tokens(json.dumps(response_format.json_schema)) + 8   for a json_schema format

An image part counts 765 tokens (a 1024x1024 high-detail image). The message part is
session-migrator's own formula plus the call ids; tools and schemas count their whole JSON (the
``{"type": "function", ...}`` wrapper included) plus session-migrator's 8 tokens each. So it never
counts less than session-migrator does: a request the guard fitted and this emulator refuses is
a guard that is wrong, not an emulator that is strict.

Answers: scripted with :meth:`Emulator.script`; ``stream=true`` answers in
``chat.completion.chunk`` SSE frames (role first, content or tool-call deltas, a finish_reason
chunk, then a ``choices: []`` usage chunk when ``stream_options.include_usage``, then
``[DONE]``).
"""

from __future__ import annotations

import json
import time
from typing import Any

from session_migrator import TiktokenCounter
from tests.conformance._http import Answer, Calls, Emulator, Recorded, Refusal, Reply, pieces
from tests.conformance._models import ServedModel, served

ROLES = {"system", "developer", "user", "assistant", "tool", "function"}
IMAGE_TOKENS = 765
_counters: dict[str, TiktokenCounter] = {}


def _counter(encoding: str) -> TiktokenCounter:
    if encoding not in _counters:
        _counters[encoding] = TiktokenCounter(encoding)
    return _counters[encoding]


def _error(message: str, param: str | None, code: str | None) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    }


def _content_text(content: Any) -> tuple[list[str], int]:
    """The texts of a content field, and the image tokens."""
    if content is None:
        return [], 0
    if isinstance(content, str):
        return [content], 0
    texts, images = [], 0
    for part in content:
        kind = part.get("type")
        if kind == "text":
            texts.append(part.get("text", ""))
        elif kind == "image_url":
            images += IMAGE_TOKENS
        else:
            texts.append(json.dumps(part, ensure_ascii=False))
    return texts, images


def count_prompt(body: dict[str, Any], encoding: str) -> int:
    """The prompt's tokens by the formula of the module docstring."""
    c = _counter(encoding).count_text
    total = 3
    for m in body.get("messages", []):
        texts, images = _content_text(m.get("content"))
        total += 3 + c(str(m.get("role", ""))) + images + sum(c(t) for t in texts if t)
        if m.get("name"):
            total += 1 + c(m["name"])
        for call in m.get("tool_calls") or []:
            fn = call.get("function", {})
            total += 3 + c(fn.get("name", "")) + c(fn.get("arguments", "")) + c(call.get("id", ""))
        if m.get("tool_call_id"):
            total += c(m["tool_call_id"])
    for tool in [*(body.get("tools") or []), *(body.get("functions") or [])]:
        total += c(json.dumps(tool, ensure_ascii=False)) + 8
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        total += c(json.dumps(fmt.get("json_schema"), ensure_ascii=False)) + 8
    return total


def _check_tool_pairs(messages: list[dict[str, Any]]) -> None:
    pending: list[str] = []  # ids of the latest assistant tool_calls not answered yet
    answerable: set[str] = set()
    for m in messages:
        role = m.get("role")
        if role == "tool":
            call_id = m.get("tool_call_id")
            if call_id not in answerable:
                raise Refusal(
                    400,
                    _error(
                        "Invalid parameter: messages with role 'tool' must be a response to a "
                        "preceeding message with 'tool_calls'.",
                        "messages.[].role",
                        None,
                    ),
                )
            answerable.discard(call_id)
            if call_id in pending:
                pending.remove(call_id)
            continue
        if pending:
            raise _unanswered(pending)
        answerable = set()
        if role == "assistant" and m.get("tool_calls"):
            pending = [c.get("id") for c in m["tool_calls"]]
            answerable = set(pending)
    if pending:
        raise _unanswered(pending)


def _unanswered(ids: list[str]) -> Refusal:
    return Refusal(
        400,
        _error(
            "An assistant message with 'tool_calls' must be followed by tool messages responding "
            "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
            + ", ".join(ids),
            "messages.[].role",
            None,
        ),
    )


class OpenAIEmulator(Emulator):
    """OpenAI's Chat Completions API on loopback; see the module docstring."""

    name = "openai"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def bad_request(self, message: str) -> Refusal:
        return Refusal(400, _error(message, None, None))

    def model_for(self, name: str) -> ServedModel | None:
        """The model ``name`` this server serves, ``None`` for a 404."""
        model = served(name)
        return model if model is not None and model.provider == "openai" else None

    def handle(
        self, path: str, headers: dict[str, str], body: dict[str, Any], rec: Recorded
    ) -> Answer:
        if path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            raise Refusal(404, _error(f"Unknown request URL: POST {path}.", None, "unknown_url"))
        model = self.model_for(str(body.get("model")))
        if model is None:
            raise Refusal(
                404,
                _error(
                    f"The model `{body.get('model')}` does not exist or you do not have access "
                    "to it.",
                    None,
                    "model_not_found",
                ),
            )
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Refusal(400, _error(f"{messages!r} is too short - 'messages'", "messages", None))
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or m.get("role") not in ROLES:
                raise Refusal(
                    400, _error(f"Invalid value: '{m}'.", f"messages.[{i}].role", "invalid_value")
                )
        _check_tool_pairs(messages)
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_object":
            said = json.dumps([m.get("content") for m in messages]).lower()
            if "json" not in said:
                raise Refusal(
                    400,
                    _error(
                        "'messages' must contain the word 'json' in some form, to use "
                        "'response_format' of type 'json_object'.",
                        "messages",
                        None,
                    ),
                )
        rec.window = model.window
        rec.prompt_tokens = count_prompt(body, model.tokenizer)
        out_param = "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"
        out = body.get(out_param)
        rec.max_tokens = out if isinstance(out, int) else None
        self._check_window(model, rec, out_param)
        reply = self.next_reply()
        if body.get("stream"):
            return Answer(events=self._chunks(body, reply, rec))
        return Answer(body=self._completion(body, reply, rec))

    def _check_window(self, model: ServedModel, rec: Recorded, out_param: str) -> None:
        out = rec.max_tokens
        if out is not None and out > model.max_output:
            raise Refusal(
                400,
                _error(
                    f"max_tokens is too large: {out}. This model supports at most "
                    f"{model.max_output} completion tokens, whereas you provided {out}.",
                    out_param,
                    "invalid_value",
                ),
            )
        prompt = rec.prompt_tokens
        if prompt + (out or 0) <= model.window:
            return
        if out is None:
            detail = f"However, your messages resulted in {prompt} tokens."
        else:
            detail = (
                f"However, you requested {prompt + out} tokens ({prompt} in the messages, "
                f"{out} in the completion)."
            )
        raise Refusal(
            400,
            _error(
                f"This model's maximum context length is {model.window} tokens. {detail} "
                "Please reduce the length of the messages or completion.",
                "messages",
                "context_length_exceeded",
            ),
        )

    # -- answers ------------------------------------------------------------------------------

    def _tool_calls(self, reply: Reply) -> list[dict[str, Any]]:
        if not isinstance(reply, Calls):
            return []
        return [
            {
                "id": self.new_id("call_"),
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for name, args in reply.calls
        ]

    @staticmethod
    def _usage(rec: Recorded, text: str) -> dict[str, int]:
        done = max(1, len(text) // 4)
        return {
            "prompt_tokens": rec.prompt_tokens,
            "completion_tokens": done,
            "total_tokens": rec.prompt_tokens + done,
        }

    def _completion(self, body: dict[str, Any], reply: Reply, rec: Recorded) -> dict[str, Any]:
        calls = self._tool_calls(reply)
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        message["refusal"] = None
        if calls:
            message["tool_calls"] = calls
        return {
            "id": self.new_id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": self._usage(rec, reply.text),
            "system_fingerprint": None,
        }

    def _chunks(
        self, body: dict[str, Any], reply: Reply, rec: Recorded
    ) -> list[tuple[str | None, str]]:
        cid, created, model = self.new_id("chatcmpl-"), int(time.time()), body["model"]
        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, str]:
            frame: dict[str, Any] = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": None,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }
            if with_usage:
                frame["usage"] = None
            return None, json.dumps(frame)

        events = [chunk({"role": "assistant", "content": "", "refusal": None})]
        calls = self._tool_calls(reply)
        if reply.text:
            events += [chunk({"content": p}) for p in pieces(reply.text)]
        for i, call in enumerate(calls):
            head = {"index": i, "id": call["id"], "type": "function"}
            head["function"] = {"name": call["function"]["name"], "arguments": ""}
            events.append(chunk({"tool_calls": [head]}))
            for p in pieces(call["function"]["arguments"]):
                events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}))
        events.append(chunk({}, "tool_calls" if calls else "stop"))
        if with_usage:
            last = {"id": cid, "object": "chat.completion.chunk", "created": created}
            last.update(model=model, system_fingerprint=None, choices=[])
            last["usage"] = self._usage(rec, reply.text)
            events.append((None, json.dumps(last)))
        events.append((None, "[DONE]"))
        return events
