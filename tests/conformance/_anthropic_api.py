"""A loopback emulator of Anthropic's Messages API (``POST /v1/messages``).

What it checks, as the service does, and the error body it answers with (Anthropic's own,
``{"type": "error", "error": {"type": "invalid_request_error", "message": ...}}``):

- the ``x-api-key`` and ``anthropic-version`` headers (401 / 400);
- the model is one of :mod:`tests.conformance._models` (else 404 ``not_found_error``);
- ``max_tokens`` is given ("max_tokens: Field required") and at most the model's output cap
  ("max_tokens: 8192 > 4096, which is the maximum allowed number of output tokens for ...");
- ``messages``: non-empty, roles ``user`` / ``assistant`` only (a ``system`` role is refused:
  the system prompt is the top-level ``system``), the first one a user message;
- tool pairs: every ``tool_result`` block answers a ``tool_use`` of the assistant message right
  before ("unexpected `tool_use_id` found in `tool_result` blocks"), and every ``tool_use`` is
  answered in the next message ("`tool_use` ids were found without `tool_result` blocks
  immediately after");
- the window: ``input > window`` is "prompt is too long: N tokens > 200000 maximum"; for models
  since Claude 3.7 (``sum_rule``), ``input + max_tokens > window`` is "input length and
  `max_tokens` exceed context limit: P + M > W, decrease input length or `max_tokens` and try
  again". Claude 3 / 3.5 models (``claude-3-haiku-20240307``) check the input alone.

How it counts: Anthropic publishes no tokenizer, so the count is conservative: the o200k count
(offline, through session-migrator's ``TiktokenCounter``) of each message by OpenAI's chat formula
(3 + role + texts; a ``tool_use`` counts 3 + name + the JSON of its input + id; a
``tool_result`` its content and ``tool_use_id``; an image 1,600), the top-level ``system`` as a
message, the tools' JSON + 8 each, an ``output_format`` schema's JSON + 8, 3 for the reply, each
message's count multiplied by 1.43 and rounded up. 1.43 is the highest ratio of Claude's
tokenizer to o200k that session-migrator's table records (0.98 to 1.43 for Claude 3 to 4.6); the
point of this emulator is the window rule, not the exact count.

Extended thinking (``thinking: {"type": "enabled", "budget_tokens": N}``), as the service checks
it: ``N`` at least 1,024 and below ``max_tokens``; the final assistant message of the lastmost
tool loop must open with its ``thinking`` block ("Expected `thinking` or `redacted_thinking`, but
found `tool_use`..."), and a thinking block's ``signature`` must be the one the service gave it
("Invalid `signature` in `thinking` block"). Thinking blocks of earlier turns are not counted
(the service strips them); the reply opens with a thinking block and its signature.

``stream=true`` answers with Anthropic's SSE events: ``message_start``, then per content block
``content_block_start`` / ``content_block_delta`` (``text_delta`` or ``input_json_delta``) /
``content_block_stop``, ``message_delta`` (stop_reason, output usage), ``message_stop``.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from session_migrator import TiktokenCounter
from tests.conformance._http import Answer, Calls, Emulator, Recorded, Refusal, Reply, pieces
from tests.conformance._models import served

CLAUDE_PER_O200K = 1.43
IMAGE_TOKENS = 1_600
_o200k: list[TiktokenCounter] = []


def _count(text: str) -> int:
    if not _o200k:
        _o200k.append(TiktokenCounter("o200k_base"))
    return _o200k[0].count_text(text) if text else 0


def _error(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _block_tokens(block: dict[str, Any]) -> int:
    kind = block.get("type")
    if kind == "text":
        return _count(block.get("text", ""))
    if kind == "tool_use":
        name, args = block.get("name", ""), json.dumps(block.get("input", {}), ensure_ascii=False)
        return 3 + _count(name) + _count(args) + _count(block.get("id", ""))
    if kind == "tool_result":
        inner = sum(_block_tokens(b) for b in _blocks(block.get("content", "")))
        return inner + _count(block.get("tool_use_id", ""))
    if kind == "image":
        return IMAGE_TOKENS
    return _count(json.dumps(block, ensure_ascii=False))


def count_input(body: dict[str, Any]) -> int:
    """The input's tokens by the formula of the module docstring."""

    def scaled(n: int) -> int:
        return math.ceil(n * CLAUDE_PER_O200K)

    total = scaled(3)
    system = body.get("system")
    if system:
        total += scaled(3 + _count("system") + sum(_block_tokens(b) for b in _blocks(system)))
    messages = body.get("messages", [])
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    for i, m in enumerate(messages):
        # (the thinking of earlier turns is stripped by the service, not counted)
        blocks = sum(
            _block_tokens(b)
            for b in _blocks(m.get("content"))
            if i == last or b.get("type") not in ("thinking", "redacted_thinking")
        )
        total += scaled(3 + _count(str(m.get("role", ""))) + blocks)
    for tool in body.get("tools") or []:
        total += scaled(_count(json.dumps(tool, ensure_ascii=False)) + 8)
    for key in ("output_format", "output_config"):
        if isinstance(body.get(key), dict):
            total += scaled(_count(json.dumps(body[key], ensure_ascii=False)) + 8)
    return total


#: Anthropic's least cacheable prefix (Sonnet and Opus; Haiku's is 2,048), and how many blocks
#: before a breakpoint the service looks back for an earlier cached prefix
CACHE_LEAST = 1_024
CACHE_LOOKBACK = 20


class PromptCache:
    """Anthropic's prompt cache as the service keeps it: a prefix of the prompt's blocks (the
    tools, then the system's, then each message's, in order) up to a block marked with
    ``cache_control`` is written; a later request reads the longest prefix written before that
    ends at one of its own breakpoints or up to :data:`CACHE_LOOKBACK` blocks before one; below
    :data:`CACHE_LEAST` tokens nothing is cached."""

    def __init__(self) -> None:
        self.written: dict[str, int] = {}

    @staticmethod
    def _blocks(body: dict[str, Any]) -> list[tuple[dict[str, Any], int]]:
        """Each block with its tokens (a message's overhead on its first block)."""
        out: list[tuple[dict[str, Any], int]] = []
        for tool in body.get("tools") or []:
            out.append(
                (
                    tool,
                    math.ceil(
                        (_count(json.dumps(tool, ensure_ascii=False)) + 8) * CLAUDE_PER_O200K
                    ),
                )
            )
        for k, block in enumerate(_blocks(body.get("system"))):
            extra = 3 + _count("system") if k == 0 else 0
            out.append((block, math.ceil((extra + _block_tokens(block)) * CLAUDE_PER_O200K)))
        for m in body.get("messages", []):
            for k, block in enumerate(_blocks(m.get("content"))):
                extra = 3 + _count(str(m.get("role", ""))) if k == 0 else 0
                tagged = dict(block, _role=m.get("role"), _first=k == 0)
                out.append((tagged, math.ceil((extra + _block_tokens(block)) * CLAUDE_PER_O200K)))
        return out

    def use(self, body: dict[str, Any]) -> tuple[int, int]:
        """(tokens read from the cache, tokens written to it) for this request."""
        blocks = self._blocks(body)
        keys: list[str] = []
        sizes: list[int] = []
        digest = hashlib.sha256()
        total = 0
        for block, tokens in blocks:
            plain = {k: v for k, v in block.items() if k != "cache_control"}
            digest.update(json.dumps(plain, sort_keys=True, ensure_ascii=False).encode())
            keys.append(digest.copy().hexdigest())
            total += tokens
            sizes.append(total)
        marks = [i for i, (block, _) in enumerate(blocks) if block.get("cache_control")]
        read = 0
        for b in marks:
            for i in range(b, max(-1, b - CACHE_LOOKBACK - 1), -1):
                if keys[i] in self.written:
                    read = max(read, sizes[i])
                    break
        written = 0
        for b in marks:
            if sizes[b] >= CACHE_LEAST:
                self.written[keys[b]] = sizes[b]
                written = max(written, sizes[b] - read)
        return read, max(written, 0)


def signature_of(thinking: str) -> str:
    """The signature the emulator gives a thinking block (and checks it against)."""
    return "sig_" + hashlib.sha256(thinking.encode()).hexdigest()[:40]


_THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


def _check_thinking(body: dict[str, Any], max_tokens: int) -> bool:
    """The extended-thinking rules (see the module docstring); whether thinking is on."""
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return False
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or budget < 1024:
        raise Refusal(
            400,
            _error("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"),
        )
    if max_tokens <= budget:
        raise Refusal(
            400,
            _error(
                "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                f"documentation at {_THINKING_DOCS}#max-tokens-and-context-window-size"
            ),
        )
    messages = body.get("messages") or []
    for i, m in enumerate(messages):
        for j, b in enumerate(_blocks(m.get("content"))):
            if b.get("type") == "thinking" and b.get("signature") != signature_of(
                str(b.get("thinking", ""))
            ):
                raise Refusal(
                    400,
                    _error(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"),
                )
    # the lastmost tool loop: its assistant message opens with its thinking
    k = len(messages) - 1
    while k >= 0 and messages[k].get("role") == "user" and _ids(messages[k], "tool_result"):
        k -= 1
    if k < len(messages) - 1 and k >= 0 and messages[k].get("role") == "assistant":
        first = _blocks(messages[k].get("content"))
        kind = first[0].get("type") if first else "text"
        if kind not in ("thinking", "redacted_thinking"):
            raise Refusal(
                400,
                _error(
                    f"messages.{k}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                    f"but found `{kind}`. When `thinking` is enabled, a final `assistant` message "
                    "must start with a thinking block (preceeding the lastmost set of `tool_use` "
                    "and `tool_result` blocks). We recommend you include thinking blocks from "
                    "previous turns. To avoid this requirement, disable `thinking`. Please "
                    f"consult our documentation at {_THINKING_DOCS}"
                ),
            )
    return True


def _ids(message: dict[str, Any], kind: str) -> list[str]:
    key = "id" if kind == "tool_use" else "tool_use_id"
    return [b.get(key, "") for b in _blocks(message.get("content")) if b.get("type") == kind]


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise Refusal(400, _error("messages: at least one message is required"))
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role == "system":
            raise Refusal(
                400,
                _error(
                    'messages: Unexpected role "system". The Messages API accepts a top-level '
                    '`system` parameter, not "system" as an input message role.'
                ),
            )
        if role not in ("user", "assistant"):
            raise Refusal(400, _error(f"messages.{i}.role: Input should be 'user' or 'assistant'"))
    if messages[0]["role"] != "user":
        raise Refusal(400, _error('messages: first message must use the "user" role'))
    for i, m in enumerate(messages):
        results = _ids(m, "tool_result")
        if results:
            before = messages[i - 1] if i else {}
            uses = set(_ids(before, "tool_use")) if before.get("role") == "assistant" else set()
            stray = [r for r in results if r not in uses]
            if stray:
                raise Refusal(
                    400,
                    _error(
                        f"messages.{i}.content.0: unexpected `tool_use_id` found in "
                        f"`tool_result` blocks: {', '.join(stray)}. Each `tool_result` block "
                        "must have a corresponding `tool_use` block in the previous message."
                    ),
                )
        uses = _ids(m, "tool_use") if m["role"] == "assistant" else []
        if uses:
            after = messages[i + 1] if i + 1 < len(messages) else {}
            answered = set(_ids(after, "tool_result")) if after.get("role") == "user" else set()
            missing = [u for u in uses if u not in answered]
            if missing:
                raise Refusal(
                    400,
                    _error(
                        f"messages.{i + 1}: `tool_use` ids were found without `tool_result` "
                        f"blocks immediately after: {', '.join(missing)}. Each `tool_use` block "
                        "must have a corresponding `tool_result` block in the next message."
                    ),
                )


class AnthropicEmulator(Emulator):
    """Anthropic's Messages API on loopback; see the module docstring."""

    name = "anthropic"
    cache: PromptCache

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cache = PromptCache()

    @property
    def base_url(self) -> str:
        return self.url

    def bad_request(self, message: str) -> Refusal:
        return Refusal(400, _error(message))

    def handle(
        self, path: str, headers: dict[str, str], body: dict[str, Any], rec: Recorded
    ) -> Answer:
        if path.rstrip("/") != "/v1/messages":
            raise Refusal(404, _error(f"Not found: {path}", "not_found_error"))
        if not headers.get("x-api-key") and not headers.get("authorization"):
            raise Refusal(401, _error("x-api-key header is required", "authentication_error"))
        if not headers.get("anthropic-version"):
            raise Refusal(400, _error("anthropic-version: header is required"))
        name = str(body.get("model"))
        model = served(name)
        if model is None or model.provider != "anthropic":
            raise Refusal(404, _error(f"model: {name}", "not_found_error"))
        out = body.get("max_tokens")
        rec.window, rec.max_tokens = model.window, out if isinstance(out, int) else None
        if not isinstance(out, int):
            raise Refusal(400, _error("max_tokens: Field required"))
        if out > model.max_output:
            raise Refusal(
                400,
                _error(
                    f"max_tokens: {out} > {model.max_output}, which is the maximum allowed "
                    f"number of output tokens for {name}"
                ),
            )
        _check_messages(body.get("messages"))
        thinks = _check_thinking(body, out)
        rec.prompt_tokens = prompt = count_input(body)
        if prompt > model.max_input:
            raise Refusal(
                400, _error(f"prompt is too long: {prompt} tokens > {model.max_input} maximum")
            )
        if model.sum_rule and prompt + out > model.window:
            raise Refusal(
                400,
                _error(
                    f"input length and `max_tokens` exceed context limit: {prompt} + {out} > "
                    f"{model.window}, decrease input length or `max_tokens` and try again"
                ),
            )
        read, written = self.cache.use(body)
        rec.cache_read, rec.cache_written = read, written
        reply = self.next_reply()
        message = self._message(body, reply, rec)
        if thinks:
            thought = f"The user asks; I weigh it ({len(body.get('messages') or [])} messages)."
            message["content"].insert(
                0, {"type": "thinking", "thinking": thought, "signature": signature_of(thought)}
            )
        if body.get("stream"):
            return Answer(events=self._events(message))
        return Answer(body=message)

    def _message(self, body: dict[str, Any], reply: Reply, rec: Recorded) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        if isinstance(reply, Calls):
            for name, args in reply.calls:
                block = {"type": "tool_use", "id": self.new_id("toolu_"), "name": name}
                block["input"] = args
                content.append(block)
        return {
            "id": self.new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "tool_use" if isinstance(reply, Calls) else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": max(0, rec.prompt_tokens - rec.cache_read - rec.cache_written),
                "cache_read_input_tokens": rec.cache_read,
                "cache_creation_input_tokens": rec.cache_written,
                "output_tokens": max(1, len(reply.text)),
            },
        }

    @staticmethod
    def _events(message: dict[str, Any]) -> list[tuple[str | None, str]]:
        def event(kind: str, **data: Any) -> tuple[str, str]:
            return kind, json.dumps({"type": kind, **data})

        start = {**message, "content": [], "stop_reason": None}
        start["usage"] = {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1}
        events = [event("message_start", message=start)]
        for i, block in enumerate(message["content"]):
            if block["type"] == "thinking":
                events.append(
                    event(
                        "content_block_start",
                        index=i,
                        content_block={"type": "thinking", "thinking": "", "signature": ""},
                    )
                )
                for p in pieces(block["thinking"]):
                    delta = {"type": "thinking_delta", "thinking": p}
                    events.append(event("content_block_delta", index=i, delta=delta))
                delta = {"type": "signature_delta", "signature": block["signature"]}
                events.append(event("content_block_delta", index=i, delta=delta))
            elif block["type"] == "text":
                events.append(
                    event("content_block_start", index=i, content_block=dict(block, text=""))
                )
                for p in pieces(block["text"]):
                    delta = {"type": "text_delta", "text": p}
                    events.append(event("content_block_delta", index=i, delta=delta))
            else:
                events.append(
                    event("content_block_start", index=i, content_block=dict(block, input={}))
                )
                for p in pieces(json.dumps(block["input"])):
                    delta = {"type": "input_json_delta", "partial_json": p}
                    events.append(event("content_block_delta", index=i, delta=delta))
            events.append(event("content_block_stop", index=i))
        stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
        events.append(event("message_delta", delta=stop, usage=message["usage"]))
        events.append(event("message_stop"))
        return events
