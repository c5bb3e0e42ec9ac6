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
    with pytest.raises(KeyError, match="list_placeholders"):
        read_context(messages, "nope")
    with pytest.raises(ValueError, match="offset=0"):
        read_context(messages, "u1", offset=-1)
