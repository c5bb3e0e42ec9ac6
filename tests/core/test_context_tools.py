import pytest

from session_migrator import Message
from session_migrator.context_tools import read_context


def test_read_context_pages_the_original_text() -> None:
    log = "x" * 50 + "y" * 50
    messages = [Message("user", "hi", id="u1"), Message("tool", log, id="t1", tool_call_id="c1")]
    first = read_context(messages, "t1", limit=50)
    assert first.startswith("x" * 50)
    assert 'read_context(id="t1", offset=50)' in first
    assert read_context(messages, "t1", offset=50, limit=50) == "y" * 50


def test_read_context_says_what_to_do_on_bad_input() -> None:
    messages = [Message("user", "hi", id="u1")]
    with pytest.raises(KeyError, match="marker names"):
        read_context(messages, "nope")
    with pytest.raises(ValueError, match="offset=0"):
        read_context(messages, "u1", offset=-1)


def _chat(n: int) -> list[Message]:
    out = [Message("system", "You plan trips.", id="sys")]
    for k in range(n):
        out.append(Message("user", f"Day {k}: what about museum {k}? " * 8, id=f"u{k}"))
        out.append(Message("assistant", f"Museum {k} opens at nine. " * 8, id=f"a{k}"))
    return out


@pytest.mark.parametrize("strategy", ["trim", "summarize"])
def test_a_cut_part_is_named_so_read_context_reads_it_back(strategy: str) -> None:
    """The note (trim) and the summary of what a session's fit cut name the run of messages
    they cover, and read_context reads that run back, each message with its id."""
    import re

    from session_migrator import ModelWindow, SessionFitter

    messages = _chat(60)
    window = ModelWindow("small", "example", 2_000, 2_000, 0, "o200k_base", "explicit")
    fitter = SessionFitter("trip", store="memory://", strategy=strategy, reserve_output=0)
    fitter.append(messages)
    lead = fitter.fit(window).messages[1]
    assert lead.marker is not None
    named = re.search(r'read_context\(id="([^"]+)"\) reads them back', lead.text)
    assert named is not None, lead.text
    first, last = named.group(1).split("..")
    assert (first, last) == (lead.marker["first_id"], lead.marker["last_id"])
    page = read_context(messages, named.group(1), limit=100_000)
    assert page.startswith("[u0] user: Day 0: what about museum 0?")
    assert f"[{last}] " in page
    assert "[sys]" not in page


def test_a_run_of_messages_must_be_in_order() -> None:
    messages = _chat(3)
    with pytest.raises(KeyError, match="first id"):
        read_context(messages, "a2..u0")
    with pytest.raises(KeyError, match="first id"):
        read_context(messages, "u0..nope")
    assert read_context(messages, "u1..u1").startswith("[u1] user: Day 1")
