"""A loopback emulator of Amazon Bedrock's Converse API (``POST /model/{modelId}/converse`` and
``/converse-stream``), serving Anthropic's models as Bedrock does.

What it checks, as the service does, and how it refuses (a 400 ``ValidationException``, the
error's type in the ``x-amzn-ErrorType`` header and ``{"message": ...}`` as the body, which is
what boto3 turns into ``botocore.exceptions.ClientError``):

- a SigV4 ``Authorization`` header (403 ``UnrecognizedClientException`` without one);
- the model id (``anthropic.claude-3-5-haiku-20241022-v1:0``, or a cross-region inference
  profile such as ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``) names a model of
  :mod:`tests.conformance._models` (else ``ResourceNotFoundException``);
- ``inferenceConfig.maxTokens`` at most the model's output cap;
- ``messages``: non-empty, ``user`` / ``assistant`` only, alternating, the first a user message
  ("A conversation must start with a user message", "A conversation must alternate between user
  and assistant roles"); every ``toolResult`` answers a ``toolUse`` of the message before;
- the window, by Anthropic's rules, which Bedrock passes on: "prompt is too long: N tokens >
  200000 maximum", and since Claude 3.7 "input length and `max_tokens` exceed context limit".
  Without ``maxTokens`` the service reserves 4,096 output tokens.

It counts the request as the Anthropic emulator does (:func:`count_input` of the same request in
the Messages API's shape: Bedrock sends Claude the same prompt).

A stream answers in AWS's binary event-stream framing (``application/vnd.amazon.eventstream``:
prelude, headers, JSON payload, CRC-32s): ``messageStart``, ``contentBlockStart`` (tool uses),
``contentBlockDelta``, ``contentBlockStop``, ``messageStop``, ``metadata``.
"""

from __future__ import annotations

import json
import re
import struct
import urllib.parse
import zlib
from typing import Any

from tests.conformance._anthropic_api import count_input
from tests.conformance._http import Answer, Calls, Emulator, Recorded, Refusal, Reply, pieces
from tests.conformance._models import ServedModel, served

#: what Bedrock reserves for the answer of a Claude request that sets no ``maxTokens``
DEFAULT_MAX_TOKENS = 4_096
_MODEL_ID = re.compile(r"^(?:(?:us|eu|apac|global)\.)?anthropic\.(?P<name>.+?)-v\d+(?::\d+)?$")


def _validation(message: str) -> Refusal:
    return Refusal(400, {"__type": "ValidationException", "message": message})


def model_of(model_id: str) -> ServedModel | None:
    """The served model a Bedrock model id (or inference profile id) names."""
    found = _MODEL_ID.match(model_id)
    model = served(found["name"]) if found else None
    return model if model is not None and model.provider == "anthropic" else None


def _block(block: dict[str, Any]) -> dict[str, Any]:
    """A Converse content block in the Messages API's shape (for the count)."""
    if "text" in block:
        return {"type": "text", "text": block["text"]}
    if "toolUse" in block:
        use = block["toolUse"]
        return {
            "type": "tool_use",
            "id": use.get("toolUseId", ""),
            "name": use.get("name", ""),
            "input": use.get("input", {}),
        }
    if "toolResult" in block:
        result = block["toolResult"]
        inner = [
            _block(b) if "text" in b else {"type": "text", "text": json.dumps(b.get("json"))}
            for b in result.get("content") or []
        ]
        return {"type": "tool_result", "tool_use_id": result.get("toolUseId", ""), "content": inner}
    if "image" in block:
        return {"type": "image"}
    return {"type": "text", "text": json.dumps(block)}


def as_messages_api(body: dict[str, Any]) -> dict[str, Any]:
    """The Converse request in the Messages API's shape: what Claude is sent."""
    tools = (body.get("toolConfig") or {}).get("tools") or []
    out: dict[str, Any] = {
        "system": [_block(b) for b in body.get("system") or [] if "text" in b],
        "messages": [
            {
                "role": m.get("role"),
                "content": [_block(b) for b in m.get("content") or [] if "cachePoint" not in b],
            }
            for m in body.get("messages") or []
        ],
        "tools": [
            {
                "name": t["toolSpec"].get("name"),
                "description": t["toolSpec"].get("description"),
                "input_schema": (t["toolSpec"].get("inputSchema") or {}).get("json"),
            }
            for t in tools
            if "toolSpec" in t
        ],
    }
    return out


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise _validation("The model returned the following errors: messages: at least one")
    previous: dict[str, Any] | None = None
    for m in messages:
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("user", "assistant"):
            raise _validation(f"1 validation error detected: Value '{role}' at 'messages.role'")
        if previous is None and role != "user":
            raise _validation("A conversation must start with a user message. Try again.")
        if previous is not None and previous.get("role") == role:
            raise _validation(
                "A conversation must alternate between user and assistant roles. Make sure the "
                "conversation alternates between user and assistant roles and try again."
            )
        asked = {
            b["toolUse"].get("toolUseId")
            for b in (previous or {}).get("content") or []
            if isinstance(b, dict) and "toolUse" in b
        }
        for b in m.get("content") or []:
            answered = isinstance(b, dict) and "toolResult" in b
            if answered and b["toolResult"].get("toolUseId") not in asked:
                raise _validation(
                    "The model returned the following errors: unexpected `tool_use_id` found "
                    "in `tool_result` blocks"
                )
        previous = m


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    value_length = struct.pack(">H", len(raw_value))
    return bytes([len(raw_name)]) + raw_name + b"\x07" + value_length + raw_value


def frame(event: str, payload: dict[str, Any]) -> bytes:
    """One message of AWS's event stream: prelude (total and header lengths, CRC-32), headers,
    the JSON payload, and the CRC-32 of all that."""
    headers = (
        _header(":event-type", event)
        + _header(":content-type", "application/json")
        + _header(":message-type", "event")
    )
    data = json.dumps(payload).encode()
    prelude = struct.pack(">II", 16 + len(headers) + len(data), len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + data
    return message + struct.pack(">I", zlib.crc32(message))


class BedrockEmulator(Emulator):
    """Bedrock's Converse API on loopback; see the module docstring."""

    name = "bedrock"

    def bad_request(self, message: str) -> Refusal:
        return _validation(message)

    def handle(
        self, path: str, headers: dict[str, str], body: dict[str, Any], rec: Recorded
    ) -> Answer:
        found = re.fullmatch(r"/model/(?P<id>[^/]+)/(?P<op>converse|converse-stream)", path)
        if found is None:
            raise Refusal(404, {"message": f"Not found: {path}"})
        if not headers.get("authorization", "").startswith("AWS4-HMAC-SHA256"):
            raise Refusal(
                403,
                {
                    "__type": "UnrecognizedClientException",
                    "message": "The security token included in the request is invalid.",
                },
            )
        model_id = urllib.parse.unquote(found["id"])
        body["model"] = model_id  # (for the report)
        model = model_of(model_id)
        if model is None:
            raise Refusal(
                404,
                {"__type": "ResourceNotFoundException", "message": "Model not found."},
            )
        asked = (body.get("inferenceConfig") or {}).get("maxTokens")
        out = asked if isinstance(asked, int) else DEFAULT_MAX_TOKENS
        rec.window, rec.max_tokens = model.window, asked if isinstance(asked, int) else None
        if out > model.max_output:
            raise _validation(
                f"The maximum tokens you requested exceeds the model limit of {model.max_output}. "
                "Try again with a maximum tokens value that is lower than "
                f"{model.max_output}."
            )
        _check_messages(body.get("messages"))
        rec.prompt_tokens = prompt = count_input(as_messages_api(body))
        if prompt > model.max_input:
            raise _validation(f"prompt is too long: {prompt} tokens > {model.max_input} maximum")
        if model.sum_rule and prompt + out > model.window:
            raise _validation(
                f"input length and `max_tokens` exceed context limit: {prompt} + {out} > "
                f"{model.window}, decrease input length or `max_tokens` and try again"
            )
        reply = self.next_reply()
        if found["op"] == "converse-stream":
            return Answer(raw=("application/vnd.amazon.eventstream", self._stream(reply, prompt)))
        return Answer(body=self._answer(reply, prompt))

    def _content(self, reply: Reply) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = [{"text": reply.text}] if reply.text else []
        if isinstance(reply, Calls):
            for name, args in reply.calls:
                use = {"toolUseId": self.new_id("tooluse_"), "name": name, "input": args}
                content.append({"toolUse": use})
        return content

    @staticmethod
    def _usage(reply: Reply, prompt: int) -> dict[str, int]:
        out = max(1, len(reply.text))
        return {"inputTokens": prompt, "outputTokens": out, "totalTokens": prompt + out}

    def _answer(self, reply: Reply, prompt: int) -> dict[str, Any]:
        return {
            "output": {"message": {"role": "assistant", "content": self._content(reply)}},
            "stopReason": "tool_use" if isinstance(reply, Calls) else "end_turn",
            "usage": self._usage(reply, prompt),
            "metrics": {"latencyMs": 5},
        }

    def _stream(self, reply: Reply, prompt: int) -> bytes:
        frames = [frame("messageStart", {"role": "assistant"})]
        for index, block in enumerate(self._content(reply)):
            if "text" in block:
                for piece in pieces(block["text"]):
                    delta = {"contentBlockIndex": index, "delta": {"text": piece}}
                    frames.append(frame("contentBlockDelta", delta))
            else:
                use = block["toolUse"]
                start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
                frames.append(
                    frame("contentBlockStart", {"contentBlockIndex": index, "start": start})
                )
                delta = {"toolUse": {"input": json.dumps(use["input"])}}
                frames.append(
                    frame("contentBlockDelta", {"contentBlockIndex": index, "delta": delta})
                )
            frames.append(frame("contentBlockStop", {"contentBlockIndex": index}))
        stop = "tool_use" if isinstance(reply, Calls) else "end_turn"
        frames.append(frame("messageStop", {"stopReason": stop}))
        meta = {"usage": self._usage(reply, prompt), "metrics": {"latencyMs": 5}}
        frames.append(frame("metadata", meta))
        return b"".join(frames)
