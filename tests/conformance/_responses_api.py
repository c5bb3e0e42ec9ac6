"""A loopback emulator of OpenAI's Responses API (``POST /v1/responses``), beside the Chat
Completions API of :class:`~tests.conformance._openai_api.OpenAIEmulator` (it serves both).

What it checks, as the service does, with OpenAI's error body:

- the model is served (404 ``model_not_found``);
- ``input``: a string or a list of items: ``message`` (role ``system`` / ``developer`` /
  ``user`` / ``assistant``, content a string or ``input_text`` / ``output_text`` / image
  parts), ``function_call`` and ``function_call_output`` (each output answers an earlier call
  of the same ``call_id``: "No tool call found for function call output with call_id ..."; each
  call is answered: "No tool output found for function call ..."), ``reasoning`` items;
- ``max_output_tokens`` at most the model's output cap;
- the window: ``input + max_output_tokens <= window``, else 400 ``context_length_exceeded``:
  "Your input exceeds the context window of this model. Please adjust your input and try
  again.".

It counts as the Chat Completions emulator does (3 + role + texts per message item; a call 3 +
name + arguments + call id; an output its text and call id; ``instructions`` as a system
message; each tool's JSON + 8; 3 for the reply), so it never counts less than the guard does.
Answers: a ``response`` object with ``message`` / ``function_call`` output items, or with
``stream=true`` the SSE events ``response.created``, ``response.output_item.added``,
``response.output_text.delta``, ``response.function_call_arguments.delta``,
``response.output_item.done``, ``response.completed``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from tests.conformance._http import Answer, Calls, Recorded, Refusal, Reply, pieces
from tests.conformance._models import ServedModel
from tests.conformance._openai_api import IMAGE_TOKENS, OpenAIEmulator, _counter, _error

WINDOW_MESSAGE = (
    "Your input exceeds the context window of this model. Please adjust your input and try again."
)


def _texts(content: Any) -> tuple[list[str], int]:
    if content is None:
        return [], 0
    if isinstance(content, str):
        return [content], 0
    texts, images = [], 0
    for part in content:
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text"):
            texts.append(part.get("text", ""))
        elif kind in ("input_image", "image_url"):
            images += IMAGE_TOKENS
        else:
            texts.append(json.dumps(part, ensure_ascii=False))
    return texts, images


def items_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's input as a list of items."""
    given = body.get("input")
    if isinstance(given, str):
        return [{"type": "message", "role": "user", "content": given}]
    return [i for i in given or [] if isinstance(i, dict)]


def count_input(body: dict[str, Any], encoding: str) -> int:
    """The input's tokens by the formula of the module docstring."""
    c = _counter(encoding).count_text
    total = 3
    if body.get("instructions"):
        total += 3 + c("system") + c(str(body["instructions"]))
    for item in items_of(body):
        kind = item.get("type", "message")
        if kind == "message":
            texts, images = _texts(item.get("content"))
            total += 3 + c(str(item.get("role", ""))) + images + sum(c(t) for t in texts if t)
        elif kind == "function_call":
            total += 3 + c(item.get("name", "")) + c(item.get("arguments", ""))
            total += c(item.get("call_id", ""))
        elif kind == "function_call_output":
            output = item.get("output", "")
            total += 3 + c(output if isinstance(output, str) else json.dumps(output))
            total += c(item.get("call_id", ""))
        else:  # (a reasoning item, or another kind: its JSON)
            total += c(json.dumps(item, ensure_ascii=False))
    for tool in body.get("tools") or []:
        total += c(json.dumps(tool, ensure_ascii=False)) + 8
    return total


def _check_pairs(items: list[dict[str, Any]]) -> None:
    called: list[str] = []
    answered: set[str] = set()
    for item in items:
        if item.get("type") == "function_call":
            called.append(str(item.get("call_id")))
        elif item.get("type") == "function_call_output":
            call_id = str(item.get("call_id"))
            if call_id not in called:
                raise Refusal(
                    400,
                    _error(
                        f"No tool call found for function call output with call_id {call_id}.",
                        "input",
                        None,
                    ),
                )
            answered.add(call_id)
    for call_id in called:
        if call_id not in answered:
            raise Refusal(
                400, _error(f"No tool output found for function call {call_id}.", "input", None)
            )


class ResponsesEmulator(OpenAIEmulator):
    """OpenAI's Responses API (and Chat Completions) on loopback; see the module docstring."""

    name = "openai-responses"

    def handle(
        self, path: str, headers: dict[str, str], body: dict[str, Any], rec: Recorded
    ) -> Answer:
        if path.rstrip("/") not in ("/v1/responses", "/responses"):
            return super().handle(path, headers, body, rec)
        model = self.model_for(str(body.get("model")))
        if model is None:
            raise Refusal(
                404,
                _error(
                    f"The model `{body.get('model')}` does not exist or you do not have access "
                    "to it.",
                    "model",
                    "model_not_found",
                ),
            )
        items = items_of(body)
        if not items:
            raise Refusal(400, _error("Missing required parameter: 'input'.", "input", None))
        _check_pairs(items)
        rec.window = model.window
        rec.prompt_tokens = count_input(body, model.tokenizer)
        out = body.get("max_output_tokens")
        rec.max_tokens = out if isinstance(out, int) else None
        self._check_responses_window(model, rec)
        reply = self.next_reply()
        response = self._response(body, reply, rec)
        if body.get("stream"):
            return Answer(events=self._response_events(response))
        return Answer(body=response)

    @staticmethod
    def _check_responses_window(model: ServedModel, rec: Recorded) -> None:
        out = rec.max_tokens
        if out is not None and out > model.max_output:
            raise Refusal(
                400,
                _error(
                    f"Invalid 'max_output_tokens': integer above maximum value. Expected a value "
                    f"<= {model.max_output}, but got {out} instead.",
                    "max_output_tokens",
                    "integer_above_max_value",
                ),
            )
        if rec.prompt_tokens + (out or 0) > model.window:
            raise Refusal(400, _error(WINDOW_MESSAGE, "input", "context_length_exceeded"))

    def _response(self, body: dict[str, Any], reply: Reply, rec: Recorded) -> dict[str, Any]:
        output: list[dict[str, Any]] = []
        if reply.text:
            output.append(
                {
                    "type": "message",
                    "id": self.new_id("msg_"),
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
                }
            )
        if isinstance(reply, Calls):
            for name, args in reply.calls:
                output.append(
                    {
                        "type": "function_call",
                        "id": self.new_id("fc_"),
                        "call_id": self.new_id("call_"),
                        "name": name,
                        "arguments": json.dumps(args),
                        "status": "completed",
                    }
                )
        done = max(1, len(reply.text) // 4)
        return {
            "id": self.new_id("resp_"),
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": body["model"],
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [],
            "max_output_tokens": body.get("max_output_tokens"),
            "reasoning": body.get("reasoning"),
            "usage": {
                "input_tokens": rec.prompt_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": done,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": rec.prompt_tokens + done,
            },
        }

    @staticmethod
    def _response_events(response: dict[str, Any]) -> list[tuple[str | None, str]]:
        seq = iter(range(10_000))

        def event(kind: str, **data: Any) -> tuple[str, str]:
            return kind, json.dumps({"type": kind, "sequence_number": next(seq), **data})

        started = {**response, "status": "in_progress", "output": [], "usage": None}
        events = [event("response.created", response=started)]
        events.append(event("response.in_progress", response=started))
        for i, item in enumerate(response["output"]):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                events.append(
                    event(
                        "response.output_item.added",
                        output_index=i,
                        item={**item, "status": "in_progress", "content": []},
                    )
                )
                part = {"type": "output_text", "text": "", "annotations": []}
                events.append(
                    event(
                        "response.content_part.added",
                        item_id=item["id"], output_index=i, content_index=0, part=part,
                    )
                )  # fmt: skip
                for p in pieces(text):
                    events.append(
                        event(
                            "response.output_text.delta",
                            item_id=item["id"], output_index=i, content_index=0, delta=p,
                            logprobs=[],
                        )
                    )  # fmt: skip
                events.append(
                    event(
                        "response.output_text.done",
                        item_id=item["id"], output_index=i, content_index=0, text=text,
                        logprobs=[],
                    )
                )  # fmt: skip
                events.append(
                    event(
                        "response.content_part.done",
                        item_id=item["id"], output_index=i, content_index=0,
                        part={**part, "text": text},
                    )
                )  # fmt: skip
            else:
                events.append(
                    event(
                        "response.output_item.added",
                        output_index=i,
                        item={**item, "status": "in_progress", "arguments": ""},
                    )
                )
                for p in pieces(item["arguments"]):
                    events.append(
                        event(
                            "response.function_call_arguments.delta",
                            item_id=item["id"], output_index=i, delta=p,
                        )
                    )  # fmt: skip
                events.append(
                    event(
                        "response.function_call_arguments.done",
                        item_id=item["id"], output_index=i, arguments=item["arguments"],
                    )
                )  # fmt: skip
            events.append(event("response.output_item.done", output_index=i, item=item))
        events.append(event("response.completed", response=response))
        return events
