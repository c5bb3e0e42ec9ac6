"""``create_agent(response_format=...)``: the structured-output schemas the agent binds after the
middleware ran are counted in the fit (issue 21, point 2)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel, Field

from langchain_session_migrator import FitToModelMiddleware, messages_from_core


class Report(BaseModel):
    """A structured quarterly report for the finance team."""

    title: str = Field(description="The report's title, as the board will read it. " * 25)
    summary: str = Field(description="The summary of revenue, churn and hiring. " * 25)
    risks: list[str] = Field(description="Every risk named, most severe first. " * 25)


ANSWER = {"title": "Q3", "summary": "Fine.", "risks": ["none"]}


def reply(strategy: str) -> AIMessage:
    if strategy == "tool":
        return AIMessage("", tool_calls=[{"name": "Report", "args": ANSWER, "id": "report-1"}])
    return AIMessage(json.dumps(ANSWER))


@pytest.mark.parametrize("strategy", ["tool", "provider"])
@pytest.mark.parametrize("counted", [True, False])
def test_structured_output_schemas_are_counted(strategy: str, counted: bool, kit: Any) -> None:
    small = kit.make_model("gpt-4o-mini", 1_500, 200, replies=iter([reply(strategy)]))
    budget, _ = kit.budget_of(small)
    response_format = ToolStrategy(Report) if strategy == "tool" else ProviderStrategy(Report)
    fit = FitToModelMiddleware(strategy="trim", count_tools=counted)
    agent = create_agent(small, [], response_format=response_format, middleware=[fit])
    history = list(messages_from_core(kit.conversation(12)))
    result = agent.invoke({"messages": [*history, HumanMessage("Write the Q3 report.")]})
    assert result["structured_response"] == Report(**ANSWER)

    sent = kit.openai_tokens(small.received[0]) + kit.schema_tokens(small.received_kwargs[0])
    assert kit.schema_tokens(small.received_kwargs[0]) > 400
    if counted:
        assert sent <= budget
        assert fit.last_report is not None
        assert fit.last_report.decision == "compressed"
    else:  # the schemas are what a fit that leaves them out goes over by
        assert sent > budget
