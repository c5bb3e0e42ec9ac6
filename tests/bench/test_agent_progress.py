"""Issue 32's outcome, kept: under the guard an agent finishes its turn in as many model calls as
without it, sync and async, streamed or not, and below where its turn fits it is refused with a
``BudgetError``, never left looping (the fake model of ``benchmarks._agent_brain`` calls again
every lookup whose result it cannot see)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from benchmarks._agent_brain import PER_ROUND, ROUNDS, TURNS, Tally
from benchmarks._agent_lc import create_agent_run, tool_node_run
from benchmarks._agent_li import li_run
from benchmarks.agent_progress import _model

pytestmark = [  # (LlamaIndex's workflows inspect their agents' pydantic fields)
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20:inspect"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211:inspect"),
    # (ReActAgent asks whether its workflow is running from within a step)
    pytest.mark.filterwarnings("ignore:is_running called from within a step:DeprecationWarning"),
]

#: What each setup takes a turn unguarded on a large window: a call a round and the answer
#: (ReAct: a call a lookup; the handoff workflow: the router's handoff first).
FUNCTION, REACT, HANDOFF = ROUNDS + 1, ROUNDS * PER_ROUND + 1, ROUNDS + 2

Run = Callable[[str, int], Tally]
SETUPS: dict[str, tuple[Run, int]] = {
    "create_agent invoke": (lambda n, w: create_agent_run(n, True), FUNCTION),
    "create_agent ainvoke": (lambda n, w: create_agent_run(n, True, "ainvoke"), FUNCTION),
    "create_agent astream": (lambda n, w: create_agent_run(n, True, "astream"), FUNCTION),
    "create_agent content blocks": (
        lambda n, w: create_agent_run(n, True, blocks=True),
        FUNCTION,
    ),
    "ToolNode loop": (lambda n, w: tool_node_run(n, True), FUNCTION),
    "ToolNode loop async streamed": (lambda n, w: tool_node_run(n, True, "astream"), FUNCTION),
    "FunctionAgent streamed": (lambda n, w: li_run("function", "session", n, w, True), FUNCTION),
    "FunctionAgent not streamed": (
        lambda n, w: li_run("function", "session", n, w, True, streaming=False),
        FUNCTION,
    ),
    "FunctionAgent FittedMemory": (lambda n, w: li_run("function", "fitted", n, w, True), FUNCTION),
    "FunctionAgent LlamaIndex Memory": (
        lambda n, w: li_run("function", "default", n, w, True),
        FUNCTION,
    ),
    "ReActAgent FittedMemory": (lambda n, w: li_run("react", "fitted", n, w, True), REACT),
    "ReActAgent not streamed": (
        lambda n, w: li_run("react", "fitted", n, w, True, streaming=False),
        REACT,
    ),
    # (a code step returns both lookups of a round in one message)
    "CodeActAgent streamed": (lambda n, w: li_run("codeact", "session", n, w, True), FUNCTION),
    "CodeActAgent FittedMemory not streamed": (
        lambda n, w: li_run("codeact", "fitted", n, w, True, streaming=False),
        FUNCTION,
    ),
    "AgentWorkflow handoff": (lambda n, w: li_run("handoff", "session", n, w, True), HANDOFF),
}


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_the_turn_finishes_in_as_many_calls_as_unguarded(setup: str) -> None:
    run, calls = SETUPS[setup]
    tally = run(_model(2048), 2048)  # one turn alone is about 4,500 tokens
    assert tally.failed == []
    assert tally.errors == []
    assert tally.calls_per_turn == [calls] * TURNS


@pytest.mark.parametrize(
    "setup", ["create_agent invoke", "FunctionAgent streamed", "CodeActAgent streamed"]
)
def test_below_the_turn_it_is_refused_not_looping(setup: str) -> None:
    run, _ = SETUPS[setup]
    tally = run(_model(768), 768)
    assert tally.failed == []  # no recursion or iteration limit reached
    assert len(tally.errors) == TURNS
    assert all("current turn" in e or "max_tokens" in e for e in tally.errors), tally.errors[:1]


@pytest.mark.parametrize("window", [4096, 3072])
@pytest.mark.parametrize(
    "setup", ["create_agent invoke", "ToolNode loop", "FunctionAgent streamed"]
)
def test_larger_windows_finish_too(setup: str, window: int) -> None:
    """A window where the recall index outlives several fits (a crash there once failed 6 of 8
    create_agent turns at 4,096)."""
    run, calls = SETUPS[setup]
    tally = run(_model(window), window)
    assert (tally.failed, tally.errors) == ([], [])
    assert tally.calls_per_turn == [calls] * TURNS


@pytest.mark.parametrize("mode", ["invoke", "astream"])
def test_create_agent_finishes_at_1024_tokens(mode: str) -> None:
    """Where the ``read_context`` tool's schema takes room the turn needs, the request goes
    without it, and then names it nowhere (its markers at their smallest leave the ids out)."""
    tally = create_agent_run(_model(1024), True, mode)
    assert (tally.failed, tally.errors) == ([], [])
    assert tally.calls_per_turn == [FUNCTION] * TURNS
    assert tally.without_reader > 0  # (the requests that needed its room)
    assert tally.naming_missing_reader == 0


def test_an_agent_that_compresses_its_old_work_finishes_its_turns() -> None:
    """``placeholder_tools=True`` and a model that compresses its earlier lookups' outputs when
    it sees them at a turn's start: it does, and every turn finishes (what it saves is measured
    in ``benchmarks.agent_progress``)."""
    window = 4096
    plain = create_agent_run(_model(window), True)
    compressing = create_agent_run(_model(window), True, compresses=True)
    assert (compressing.failed, compressing.errors) == ([], [])
    assert sum(compressing.calls_per_turn) > sum(plain.calls_per_turn)  # (the compress calls)


def test_an_agent_that_compresses_its_finished_work_fits_longer_tasks() -> None:
    """Issue 44: at 2,048 tokens a question needing 8 rounds of lookups is refused for the plain
    agent (its turn's steps, shrunk at their smallest, are over the room) and finished by one
    that compresses its turn's finished rounds, with what they found, as they pile up."""
    plain = create_agent_run(_model(2048), True, rounds=8, turns=2)
    assert plain.failed == []
    assert len(plain.errors) == 2
    assert all("current turn" in e for e in plain.errors)
    compressing = create_agent_run(_model(2048), True, compresses=True, rounds=8, turns=2)
    assert (compressing.failed, compressing.errors) == ([], [])
    # every lookup once, a compress call every other round (the last one after the last round:
    # nothing of the first question is left to compress at the second's start), the answer
    assert compressing.calls_per_turn == [8 + 4 + 1] * 2


@pytest.mark.parametrize("window", [1536, 1024])
def test_the_compressing_agent_fits_where_the_plain_one_does(window: int) -> None:
    """Its placeholder tools give way where the turn needs their room (nothing in the request
    names them then), so it finishes wherever the plain agent does."""
    compressing = create_agent_run(_model(window), True, compresses=True)
    assert (compressing.failed, compressing.errors) == ([], [])
    assert compressing.naming_missing_reader == 0
