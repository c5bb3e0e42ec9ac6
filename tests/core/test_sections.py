"""A cut output keeps the lines that mark its sections: each of several results a code step
printed stays in view (its header and end), so an agent's model sees every one came back."""

from __future__ import annotations

import itertools
import re

from hypothesis import given
from hypothesis import strategies as st

from session_migrator import Message, TiktokenCounter, truncate_text
from session_migrator.fitting._fit import least_form
from session_migrator.fitting._sections import cut_around, kept_spans
from session_migrator.fitting._tiers import TOOL_OUTPUT_CHARS, shrunk_output

COUNTER = TiktokenCounter("o200k_base")


def _result(key: str, rows: int = 35) -> str:
    lines = "\n".join(
        f"{key} row {i:03d}: amount {i * 7 % 97}.50 EUR, settled" for i in range(rows)
    )
    return f"RESULT {key}:\n{lines}\nEND {key}"


def _code_step(*keys: str) -> str:
    return "Result of executing the code given:\n\n" + "\n".join(_result(k) for k in keys)


def _headers(text: str) -> list[str]:
    return re.findall(r"RESULT (\w+):", text)


def test_a_shrunk_step_keeps_every_result_header_at_every_size() -> None:
    step = Message(role="user", content=_code_step("alpha", "beta", "gamma"))
    for keep in TOOL_OUTPUT_CHARS:
        cut = shrunk_output(step, keep)
        assert cut is not None
        assert _headers(cut.text) == ["alpha", "beta", "gamma"], keep
        assert cut.text.startswith("Result of executing the code given:")  # still a step result
        assert len(cut.text) < len(step.text) // 2
        marker = cut.extra["session_migrator"]
        assert marker["cut_chars"] == len(step.text) - sum(
            len(piece) for piece in re.split(r"\n\[\.\.\. [^\]]*\]\n", cut.text)
        )


def test_a_cut_to_tokens_keeps_every_result_header() -> None:
    text = _code_step("alpha", "beta")
    cut = truncate_text(text, 120, COUNTER)
    assert COUNTER.count_text(cut) <= 120
    assert _headers(cut) == ["alpha", "beta"]
    assert "END alpha" in cut


def test_a_steps_least_form_keeps_every_result_header() -> None:
    step = Message(role="user", content=_code_step("alpha", "beta"))
    least = least_form(step, COUNTER, step=True)
    assert _headers(least.text) == ["alpha", "beta"]
    assert COUNTER.count_message(least) < COUNTER.count_message(step) // 5


def test_prose_is_cut_to_its_head_and_tail_as_before() -> None:
    words = "the quick brown fox jumps over the lazy dog and runs away".split()
    lines = [" ".join([*words[i * 3 % 7 :], str(i)]) for i in range(200)]
    text = "\n".join(f"{w} {line}" for w, line in zip(words * 40, lines, strict=False))
    spans = kept_spans(text, 400)
    assert len(spans) == 2  # no section marks: head and tail only
    assert spans[0][0] == 0
    assert spans[-1][1] == len(text)


def test_one_result_is_cut_to_its_head_and_tail() -> None:
    spans = kept_spans(_result("alpha", 80), 400)
    assert len(spans) == 2


@given(
    st.lists(st.sampled_from(["a", "bb", "row 1", "row 2", "END x", ""]), max_size=300),
    st.integers(min_value=10, max_value=2_000),
)
def test_a_cut_keeps_its_spans_in_order_and_marks_every_gap(lines: list[str], keep: int) -> None:
    text = "\n".join(lines)
    spans = kept_spans(text, keep)
    assert spans[0][0] == 0
    assert spans[-1][1] == len(text)
    assert all(a <= b <= c for (a, b), (c, _) in itertools.pairwise(spans))
    gaps: list[str] = []

    def marker(gap: str) -> str:
        gaps.append(gap)
        return "\x00"

    joined = cut_around(text, spans, marker)
    kept = [text[a:b] for a, b in spans]
    assert joined.replace("\x00", "").replace("\n", "") == "".join(kept).replace("\n", "")
    assert sum(map(len, kept)) + sum(map(len, gaps)) <= len(text)
    assert all(gap.strip("\n") for gap in gaps)  # a marker stands for something cut
