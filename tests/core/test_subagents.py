"""Sub-agents: a child session (its metadata names a ``parent_session_id``) is told what its
parent has done so far, within its own budget; the parent is given the child's answer, not its
transcript. Imported Claude Code sub-agents are children of their parent session."""

from __future__ import annotations

from pathlib import Path

from session_migrator import Message, ModelWindow, SessionFitter, ToolCall, counter_for
from session_migrator.context_tools import child_result, parent_note
from session_migrator.importers import import_claude_code
from session_migrator.store import open_store

WINDOW = ModelWindow("small", "example", 4_000, 4_000, 0, "o200k_base", "explicit")
PARALLEL_SID = "7e1f3a20-5c4b-4d8e-9f10-2a3b4c5d6e7f"
FIXTURES = Path(__file__).resolve().parents[1] / "importers" / "fixtures"


def _parent(store: object) -> SessionFitter:
    parent = SessionFitter("lead", store=store, reserve_output=0)
    parent.append([Message("system", "You lead the migration of the billing service.")])
    for n in range(40):
        parent.append(
            [
                Message("user", f"Step {n}: move table invoices_{n} to the new cluster."),
                Message("assistant", f"Moved invoices_{n}; 1,20{n % 10} rows checked."),
            ]
        )
    return parent


def test_a_child_session_is_told_what_its_parent_did() -> None:
    store = open_store("memory://")
    _parent(store).fit(WINDOW)  # (past its budget: the parent's summary is stored)
    child = SessionFitter(
        "lead/worker-1", store=store, metadata={"parent_session_id": "lead"}, reserve_output=0
    )
    child.append([Message("system", "You are a worker."), Message("user", "Check invoices_39.")])
    fitted = child.fit(WINDOW)
    counter = counter_for("o200k_base")
    assert counter.count_messages(fitted.messages) <= fitted.report.budget
    note = fitted.messages[1]
    assert note.role == "system"
    assert note.text.startswith("[session-migrator: you are a sub-agent of session lead")
    assert "invoices_39" in note.text  # what the parent did last
    assert counter.count_message(note) <= 0.15 * WINDOW.max_input_tokens
    assert fitted.messages[-1].text == "Check invoices_39."  # the task, its own
    # a session with no parent, or a parent that is not stored, gets no note
    orphan = SessionFitter("x", store=store, metadata={"parent_session_id": "nope"})
    orphan.append([Message("user", "Hi.")])
    assert [m.text for m in orphan.fit(WINDOW).messages] == ["Hi."]


def test_the_parent_is_given_the_childs_answer_not_its_transcript() -> None:
    work = [Message("user", "Find the validators.")]
    for k in range(30):
        call = ToolCall(f"c{k}", "grep", "{}")
        work += [
            Message("assistant", "", tool_calls=(call,)),
            Message(
                "tool", f"src/file_{k}.py: def validate_email(...)\n" * 40, tool_call_id=f"c{k}"
            ),
        ]
    work.append(Message("assistant", "Two validators: src/auth.py and src/signup.py."))
    result = child_result(work)
    assert result.startswith("Two validators: src/auth.py and src/signup.py.")
    assert "30 tool call(s)" in result
    assert len(result) < 300
    long = child_result([Message("assistant", "x" * 10_000)], limit=500)
    assert len(long) < 700
    assert "characters ..." in long


def test_an_imported_claude_code_sub_agent_gets_its_parents_note() -> None:
    store = open_store("memory://")
    project = FIXTURES / "claude_code_2x" / "-home-dev-api"
    parent = import_claude_code(project / f"{PARALLEL_SID}.jsonl")
    child = import_claude_code(project / PARALLEL_SID / "subagents" / "agent-a4e80a2.jsonl")
    for imported in (parent, child):
        session = imported.session
        store.append(session.id, session.messages, metadata=session.metadata)
    fitter = SessionFitter(child.session.id, store=store, reserve_output=0)
    sent = fitter.fit(WINDOW).messages
    notes = [m for m in sent if m.text.startswith("[session-migrator: you are a sub-agent")]
    assert len(notes) == 1
    assert PARALLEL_SID in notes[0].text
    assert parent_note(store, PARALLEL_SID, WINDOW, counter_for("o200k_base")) is not None
