"""The MCP tools' output schemas, as pydantic models (imported by the server only: it needs the
``[mcp]`` extra, which brings pydantic). Each tool publishes one as its ``outputSchema`` and its
``structuredContent`` is checked against it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AppendAnswer",
    "ContextAnswer",
    "FactAnswer",
    "FactDeleted",
    "FactList",
    "HandoffAnswer",
    "ImportAnswer",
    "MigrateAnswer",
    "ModelList",
    "Page",
    "PlaceholderAnswer",
    "PlaceholderInfo",
    "PlaceholderList",
    "SessionList",
    "UsageAnswer",
    "UserFactInfo",
    "WindowInfo",
]


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


class WindowInfo(_Out):
    """A model's window facts."""

    name: str = Field(description="The model's name in the table.")
    provider: str
    context_window: int = Field(description="The total window in tokens (input and output).")
    max_input_tokens: int = Field(description="The most tokens the model takes as input.")
    max_output_tokens: int = Field(description="The most tokens it writes in one reply.")
    tokenizer: str = Field(description="The tokenizer its counts use (or are estimated by).")
    source: str = Field(description="Where the facts come from.")
    as_of: str | None = Field(description="When the source stated them.")


class ModelList(_Out):
    """Known models."""

    count: int = Field(description="How many models matched.")
    returned: int = Field(description="How many are listed here (at most 'limit').")
    truncated: bool = Field(description="Whether 'limit' cut the list.")
    models: list[WindowInfo]


class Page(_Out):
    """Which of the fitted messages this answer carries."""

    offset: int = Field(description="The position of the first message returned.")
    returned: int = Field(description="How many messages this answer carries.")
    total: int = Field(description="How many messages the fitted conversation has.")
    complete: bool = Field(description="Whether this answer carries the rest of them.")
    next_offset: int | None = Field(description="Pass this as 'offset' for the next page.")
    hint: str | None = Field(default=None, description="How to get the rest, when cut.")


class MigrateAnswer(_Out):
    """A conversation fitted to a model."""

    decision: Literal["fits", "compressed"] = Field(
        description="'fits': sent as is (but for repairs a model needs, in report.notes); "
        "'compressed': cut to the budget."
    )
    tokens_before: int = Field(description="The whole conversation's tokens.")
    tokens_after: int = Field(description="The fitted conversation's tokens.")
    budget: int = Field(description="The model's input budget in tokens.")
    report: dict[str, Any] = Field(
        description="The migration report: strategy, reserves, exactness, dropped / "
        "summarized / recalled ids, fallbacks and notes."
    )
    messages: list[dict[str, Any]] = Field(
        description="The messages to send, in OpenAI chat format (this page of them)."
    )
    page: Page


class ContextAnswer(MigrateAnswer):
    """A stored session fitted to a model."""

    session_id: str


class AppendAnswer(_Out):
    """What an append stored."""

    session_id: str
    workspace: str = Field(description="The session's workspace.")
    received: int = Field(description="Messages sent in this call.")
    appended: int = Field(description="Messages stored by this call.")
    already_stored: int = Field(description="Messages skipped: already stored.")
    message_count: int = Field(description="The session's messages now.")


class Compaction(_Out):
    """Background compaction of a session (a server given a summarizer)."""

    state: str = Field(description="off, idle, pending, ready, failed: ..., waiting: ...")
    written: int = Field(description="Summaries written ahead of need.")
    seconds: float = Field(description="How long the last one took.")


class UsageAnswer(_Out):
    """How much of a model's input budget a session takes."""

    session_id: str
    model: str
    messages: int
    tokens: int
    session_tokens: int
    budget: int
    share: float = Field(description="tokens / budget (over 1.0: it does not fit as is).")
    fits: bool
    exact: bool = Field(description="False when the counts are estimates for this model.")
    compaction: Compaction


class ContextPage(_Out):
    """A page of a stored message's whole text."""

    session_id: str
    id: str
    offset: int
    text: str = Field(description="The page; it ends with how to read the next one, if any.")


class HandoffAnswer(_Out):
    """A session handed off to another agent."""

    session_id: str
    path: str = Field(description="The session file written for the target agent.")
    command: str = Field(description="The command that resumes it in the target agent.")
    commands: list[str] = Field(
        default_factory=list,
        description="Every command that resumes it: interactive, then headless "
        "(claude -p ... --resume, codex exec resume).",
    )
    brief: str = Field(
        default="",
        description="A short Markdown brief of the session: its goal, the files touched, the "
        "facts and decisions, the last exchange.",
    )
    cwd: str
    messages: int
    source_messages: int
    source_path: str = Field(default="", description="The session file that was continued.")
    source_format: str = Field(default="", description="Its format: codex or claude-code.")
    stored_session_id: str | None = Field(
        default=None,
        description="The whole source session's id in the store (harness included): "
        "session_context and read_context read it.",
    )
    harness_left_out: dict[str, int] = Field(
        default_factory=dict,
        description="What of the source agent's own harness was left out (the target sends "
        "its own), by kind: base_instructions, <permissions instructions>, AGENTS.md, "
        "<system-reminder>, ...",
    )
    harness_tokens: int = Field(default=0, description="The tokens of what was left out.")
    decision: str
    tokens_after: int
    budget: int


class ImportAnswer(_Out):
    """A coding agent's session file imported into the store."""

    session_id: str = Field(description="The session's id in the store.")
    path: str = Field(description="The session file read.")
    source_format: str = Field(description="codex or claude-code.")
    source_model: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    title: str | None = None
    messages: int = Field(description="The messages of the session.")
    tool_calls: int
    stored: int = Field(description="How many were newly stored (0 when imported before).")
    warnings: list[str] = Field(default_factory=list, description="The first few warnings.")
    brief: str = Field(
        default="",
        description="A short Markdown brief of the session: its goal, the files touched, the "
        "facts and decisions, the last exchange.",
    )
    next: str = ""


class SessionList(_Out):
    """The stored sessions."""

    workspace: str | None
    count: int = Field(description="How many sessions there are (in the workspace, if given).")
    returned: int = Field(description="How many are listed here (at most 'limit').")
    next_offset: int | None = Field(description="Pass this as 'offset' for the next page.")
    sessions: list[dict[str, Any]] = Field(
        description="id, workspace, message_count, created_at, updated_at, metadata; most "
        "recently active first."
    )


class PlaceholderInfo(_Out):
    """A placeholder the agent put: a range (or one tool's outputs) compressed to a summary."""

    id: str = Field(description="What restore_context takes.")
    first_message_id: str
    last_message_id: str
    summary: str
    created: str
    covered: int = Field(description="How many messages (or tool outputs) it stands for.")
    tool: str | None = None
    restored: str | None = None


class PlaceholderAnswer(_Out):
    """A placeholder put or restored."""

    session_id: str
    placeholder: PlaceholderInfo
    note: str


class PlaceholderList(_Out):
    """The placeholders in force, oldest first."""

    session_id: str
    count: int
    omitted: int = Field(description="The oldest ones left out to keep the answer short.")
    placeholders: list[PlaceholderInfo]


class UserFactInfo(_Out):
    """One fact a user stated."""

    key: str = Field(description="What it is about; a later fact with this key replaces it.")
    text: str
    source_id: str | None = Field(description="The message it was read from (null: by hand).")
    stated_at: str | None = Field(description="When it was stated (ISO 8601).")


class FactList(_Out):
    """A user's facts, oldest statement first."""

    user_id: str
    count: int
    facts: list[UserFactInfo]


class FactAnswer(_Out):
    """A fact kept (or replaced)."""

    user_id: str
    fact: UserFactInfo


class FactDeleted(_Out):
    """A fact forgotten."""

    user_id: str
    key: str
    deleted: bool = Field(description="false: the user had no fact with this key.")
