"""A Codex 0.169 rollout written line by line, as the CLI writes one (for the brief's and the
hand-off's tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CWD = "/home/dev/web"
AGENTS_MD = (
    f"# AGENTS.md instructions for {CWD}\n\n<INSTRUCTIONS>\n## Skills\n"
    "A skill is a set of local instructions to follow that is stored in a `SKILL.md` file.\n"
    "- Always run the linter before you commit, never skip it.\n"
    "- We will use two-space indentation; do not use tabs.\n"
    "- Prefer named exports rather than default exports.\n"
    "</INSTRUCTIONS>"
)
ENVIRONMENT = (
    f"<environment_context>\n  <cwd>{CWD}</cwd>\n  <shell>bash</shell>\n</environment_context>"
)
SKILL = (
    "<skill>\n<name>release-notes</name>\n<path>/home/dev/.codex/skills/release-notes/SKILL.md"
    "</path>\n---\nname: release-notes\n---\nAlways write the notes in the past tense. Never "
    "mention internal ticket numbers.\n</skill>"
)


class Rollout:
    """A Codex 0.169 rollout, line by line."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.second = 0
        self.calls = 0
        self._line(
            "session_meta",
            {
                "id": "019d0000-0000-7000-8000-000000000046",
                "timestamp": "2026-04-01T10:00:00.000Z",
                "cwd": CWD,
                "originator": "codex_cli_rs",
                "cli_version": "0.169.0",
                "model_provider": "openai",
                "base_instructions": {"text": "You are Codex, a coding agent based on GPT-5."},
                "git": {"branch": "main", "commit_hash": "4b1d2c3"},
            },
        )
        self._item({"type": "message", "role": "developer", "content": [
            {"type": "input_text", "text": "<permissions instructions>workspace-write"
             "</permissions instructions>"}]})  # fmt: skip
        self._item({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": AGENTS_MD},
            {"type": "input_text", "text": ENVIRONMENT}]})  # fmt: skip

    def _line(self, kind: str, payload: dict[str, Any]) -> None:
        self.second += 1
        stamp = f"2026-04-01T10:{self.second // 60:02d}:{self.second % 60:02d}.000Z"
        self.lines.append({"timestamp": stamp, "type": kind, "payload": payload})

    def _item(self, payload: dict[str, Any]) -> None:
        self._line("response_item", payload)

    def user(self, text: str, *, injected: str = "") -> None:
        if injected:
            self._item({"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": injected}]})  # fmt: skip
        self._item({"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": text}]})  # fmt: skip
        self._line("event_msg", {"type": "user_message", "message": text, "images": []})
        self._line("turn_context", {"cwd": CWD, "model": "gpt-5.3-codex"})

    def shell(self, command: str, exit_code: int = 0, output: str = "") -> None:
        self.calls += 1
        call = f"call_{self.calls:03d}"
        args = {"cmd": command, "workdir": CWD}
        self._item({"type": "function_call", "name": "exec_command",
                    "arguments": json.dumps(args), "call_id": call})  # fmt: skip
        text = (
            f"Chunk ID: c{self.calls}\nWall time: 0.2 seconds\n"
            f"Process exited with code {exit_code}\nOutput:\n{output}"
        )
        self._item({"type": "function_call_output", "call_id": call, "output": text})

    def patch(self, patch: str) -> None:
        self.calls += 1
        call = f"call_{self.calls:03d}"
        self._item({"type": "custom_tool_call", "name": "apply_patch", "input": patch,
                    "call_id": call, "status": "completed"})  # fmt: skip
        self._item({"type": "custom_tool_call_output", "call_id": call,
                    "output": "Success. Updated the following files:\nM x\n"})  # fmt: skip

    def plan(self, steps: list[tuple[str, str]]) -> None:
        self.calls += 1
        call = f"call_{self.calls:03d}"
        args = {"plan": [{"step": s, "status": st} for s, st in steps]}
        self._item({"type": "function_call", "name": "update_plan",
                    "arguments": json.dumps(args), "call_id": call})  # fmt: skip
        self._item({"type": "function_call_output", "call_id": call, "output": "Plan updated"})

    def answer(self, text: str) -> None:
        self._line("event_msg", {"type": "agent_message", "message": text})
        self._item({"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": text}]})  # fmt: skip

    def write(self, folder: Path) -> Path:
        path = folder / "rollout-2026-04-01T10-00-00-019d0000-0000-7000-8000-000000000046.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path
