"""Token counting: exact against tiktoken's own encodings, the chat format's overhead, estimates
flagged, the no-encoding fallback, caching and calibration."""

from __future__ import annotations

import math
import tracemalloc
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken_ext.openai_public

from session_migrator import (
    ContentPart,
    EstimateWarning,
    EstimatingCounter,
    Message,
    TiktokenCounter,
    TokenCount,
    TokenCounter,
    ToolCall,
    calibrate,
)
from session_migrator.counting import _encodings, _tokens
from session_migrator.counting._counter import (
    REPLY_PRIMING,
    TOKENS_PER_MESSAGE,
    TOKENS_PER_NAME,
    TOKENS_PER_TOOL_CALL,
)
from session_migrator.counting._tokens import (
    FAMILY_MULTIPLIERS,
    HeuristicCounter,
    counter_for,
    heuristic_tokens,
    remembered_count,
)

SAMPLES = [
    "",
    "hello world",
    "tiktoken is great!",
    "The quick brown fox jumps over the lazy dog. " * 20,
    "def f(x):\n    return {'a': [1, 2, 3], \"b\": x ** 2}\n",
    '{"city": "Zürich", "temp_c": -3.5, "tags": ["snow", "wind"]}',
    "數據模型在東京發布了。我們明天再談。",
    "Emoji 🙂👍🏽 and accents: naïve café, Ωμέγα, ß.",
    "<|endoftext|> is text here, not a special token",
    "   leading and trailing spaces \n\n\t tabs  ",
    "<|fim_prefix|>x<|endofprompt|> special tokens' text, all of them",
    "a lone surrogate \udc80 is replaced, as tiktoken replaces it",
]


@pytest.fixture(scope="module")
def reference() -> dict[str, tiktoken.Encoding]:
    """tiktoken's own encodings, built by tiktoken_ext from llama-index-core's bundled files
    (the cache dir tiktoken reads before downloading), so nothing touches the network."""
    static = next(p for p in _encodings.encoding_search_paths() if p.name == "tiktoken_cache")
    constructors: dict[str, Callable[[], dict[str, Any]]] = (
        tiktoken_ext.openai_public.ENCODING_CONSTRUCTORS
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(static))
        encodings = {
            name: tiktoken.Encoding(**constructors[name]())
            for name in ("o200k_base", "cl100k_base")
        }
    return encodings


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
@pytest.mark.parametrize("text", SAMPLES)
def test_exact_counts_equal_tiktokens_own(
    reference: dict[str, tiktoken.Encoding], encoding: str, text: str
) -> None:
    counter = TiktokenCounter(encoding)
    assert counter.exact is True
    assert counter.count_text(text) == len(reference[encoding].encode_ordinary(text))
    assert counter.count_texts([text, text]) == [counter.count_text(text)] * 2


@pytest.mark.parametrize("text", SAMPLES)
def test_counts_without_tiktokens_buffer_are_the_same(text: str) -> None:
    counter = TiktokenCounter("o200k_base")
    with_buffer = counter.count_text(text)
    counter._buffer = None  # a tiktoken without encode_to_tiktoken_buffer
    assert counter.count_text(text) == with_buffer


def test_counting_a_long_text_makes_no_python_object_per_token() -> None:
    text = SAMPLES[3] * 600
    counter = TiktokenCounter("o200k_base")
    expected = len(counter._encoding.encode_ordinary(text))
    tracemalloc.start()
    try:
        tokens = counter.count_text(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert tokens == expected == 120_001
    # a list of token ids would be at least 8 bytes a token (960 KB)
    assert peak < 64 * 1024


def test_remembered_counts_are_each_counters_own(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "數據模型在東京發布了。 Zürich, 4,821 invoices. " * 40
    o200k, cl100k = TiktokenCounter("o200k_base"), TiktokenCounter("cl100k_base")
    exact = {c.name: c.count_text(text) for c in (o200k, cl100k)}
    assert exact["o200k_base"] != exact["cl100k_base"]
    _tokens._text_counts.clear()
    assert remembered_count(o200k, text) == exact["o200k_base"]
    assert remembered_count(cl100k, text) == exact["cl100k_base"]
    estimating = EstimatingCounter("claude", 1.25)
    assert remembered_count(estimating, text) == math.ceil(exact["o200k_base"] * 1.25)

    def no_tokenizing(self: TiktokenCounter, text: str) -> int:
        raise AssertionError("counted again")

    monkeypatch.setattr(TiktokenCounter, "count_text", no_tokenizing)
    assert remembered_count(o200k, text) == exact["o200k_base"]
    assert remembered_count(cl100k, text) == exact["cl100k_base"]
    assert len(_tokens._text_counts) == 2


def test_known_fixed_counts() -> None:
    assert TiktokenCounter("o200k_base").count_text("hello world") == 2
    assert TiktokenCounter("cl100k_base").count_text("tiktoken is great!") == 6
    assert TiktokenCounter("o200k_base").count_text("tiktoken is great!") == 6
    assert TiktokenCounter("cl100k_base").count_text("數據模型") == 7
    assert TiktokenCounter("o200k_base").count_text("數據模型") == 3


# the OpenAI cookbook's example ("How to count tokens with tiktoken"); the API billed 129 prompt
# tokens for it on gpt-4-0613 and 124 on gpt-4o
COOKBOOK = [
    Message(
        "system",
        "You are a helpful, pattern-following assistant that translates corporate jargon into "
        "plain English.",
    ),
    Message("system", "New synergies will help drive top-line growth.", name="example_user"),
    Message(
        "system",
        "Things working well together will increase revenue.",
        name="example_assistant",
    ),
    Message(
        "system",
        "Let's circle back when we have more bandwidth to touch base on opportunities for "
        "increased leverage.",
        name="example_user",
    ),
    Message(
        "system",
        "Let's talk later when we're less busy about how to do better.",
        name="example_assistant",
    ),
    Message(
        "user",
        "This late pivot means we don't have time to boil the ocean for the client deliverable.",
    ),
]


@pytest.mark.parametrize(("encoding", "billed"), [("cl100k_base", 129), ("o200k_base", 124)])
def test_message_counts_match_what_openai_bills(encoding: str, billed: int) -> None:
    assert TiktokenCounter(encoding).count_messages(COOKBOOK) == billed


def test_per_message_overhead() -> None:
    c = TiktokenCounter("o200k_base")
    role = c.count_text("user")
    assert c.count_message(Message("user", "hello world")) == TOKENS_PER_MESSAGE + role + 2
    assert c.count_message(Message("user", "")) == TOKENS_PER_MESSAGE + role
    named = Message("user", "hello world", name="alice")
    assert c.count_message(named) == (
        TOKENS_PER_MESSAGE + role + 2 + TOKENS_PER_NAME + c.count_text("alice")
    )
    pair = [Message("user", "hello world"), Message("assistant", "hi")]
    assert c.count_messages(pair) == REPLY_PRIMING + sum(c.count_message(m) for m in pair)
    assert c.count_messages([]) == REPLY_PRIMING


def test_tool_calls_results_and_images_are_counted() -> None:
    c = TiktokenCounter("o200k_base")
    base = TOKENS_PER_MESSAGE + c.count_text("assistant")
    call = Message("assistant", "", tool_calls=(ToolCall("call_1", "get_weather", '{"c": 1}'),))
    assert c.count_message(call) == (
        base
        + TOKENS_PER_TOOL_CALL
        + c.count_text("get_weather")
        + c.count_text('{"c": 1}')
        + c.count_text("call_1")
    )
    result = Message("tool", "18 degrees", tool_call_id="call_1")
    assert c.count_message(result) == (
        TOKENS_PER_MESSAGE
        + c.count_text("tool")
        + c.count_text("18 degrees")
        + c.count_text("call_1")
    )

    def image(detail: str | None) -> ContentPart:
        url: dict[str, str] = {"url": "https://x.test/a.png"}
        if detail:
            url["detail"] = detail
        return ContentPart("image", None, {"type": "image_url", "image_url": url})

    user = TOKENS_PER_MESSAGE + c.count_text("user")
    parts = (ContentPart("text", "look"), image(None), image("low"), image("high"))
    # an image by URL costs the most its detail allows: 8 tiles of gpt-4o's 170, or the base 85
    worst, low = 85 + 8 * 170, 85
    with_images = Message("user", parts)
    assert c.count_message(with_images) == user + c.count_text("look") + worst + low + worst
    assert c.count([with_images]).exact is False  # an image's cost is an estimate
    assert c.count([Message("user", "look")]).exact is True


def test_estimates_are_flagged_and_scaled_from_o200k() -> None:
    exact = TiktokenCounter("o200k_base")
    for family in ("claude", "gemini", "mistral", "llama", "qwen", "deepseek"):
        counter = counter_for(family)
        assert counter.exact is False
        assert isinstance(counter, EstimatingCounter)
        assert counter.multiplier == FAMILY_MULTIPLIERS[family]
        for text in SAMPLES:
            expected = math.ceil(exact.count_text(text) * FAMILY_MULTIPLIERS[family])
            assert counter.count_text(text) == expected
        assert counter.count(COOKBOOK) == TokenCount(
            counter.count_messages(COOKBOOK), False, counter.name
        )
        assert counter.count_messages(COOKBOOK) > exact.count_messages(COOKBOOK)
    unknown = counter_for("some-new-family")
    assert unknown.exact is False
    assert isinstance(unknown, EstimatingCounter)
    assert unknown.multiplier == FAMILY_MULTIPLIERS["other"]
    assert counter_for("o200k_base").exact is True
    assert counter_for("cl100k_base").exact is True


def test_counters_are_shared_and_satisfy_the_protocol() -> None:
    assert counter_for("o200k_base") is counter_for("o200k_base")
    assert counter_for("claude") is counter_for("claude")
    for counter in (counter_for("o200k_base"), counter_for("claude"), TiktokenCounter()):
        assert isinstance(counter, TokenCounter)
    with pytest.raises(ValueError, match="positive"):
        EstimatingCounter("x", 0)
    with pytest.raises(ValueError, match="unknown encoding"):
        _encodings.get_encoding("p50k_base")


class _Spy(TiktokenCounter):
    def __init__(self) -> None:
        super().__init__("o200k_base")
        self._name = "spy:o200k_base"
        self.texts: list[str] = []

    def count_text(self, text: str) -> int:
        self.texts.append(text)
        return super().count_text(text)


def test_counts_are_cached_per_message_and_by_content() -> None:
    spy = _Spy()
    first = Message("user", "a sentence worth counting once", id="a")
    n = spy.count_message(first)
    assert "a sentence worth counting once" in spy.texts
    spy.texts.clear()
    assert spy.count_message(first) == n
    twin = Message("user", "a sentence worth counting once", id="b")  # same content, new object
    assert spy.count_message(twin) == n
    assert spy.texts == []
    assert spy.cached(twin) == n
    assert spy.cached(Message("user", "never seen")) is None
    assert spy.texts == []


def test_prime_seeds_the_cache_without_tokenizing() -> None:
    spy = _Spy()
    message = Message("user", "counted elsewhere")
    spy.prime({message: 77})
    assert spy.count_message(message) == 77
    assert spy.texts == []


# -- no encoding file: the documented estimate -------------------------------------------------


@pytest.fixture
def no_encodings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "no-encodings"
    empty.mkdir()
    monkeypatch.setattr(_encodings, "encoding_search_paths", lambda: [empty])
    # fresh caches and registries for this test only; the originals come back afterwards
    monkeypatch.setattr(_encodings, "_cache", {})
    monkeypatch.setattr(_tokens, "_tiktoken_counters", {})
    monkeypatch.setattr(_tokens, "_estimating", {})
    monkeypatch.setattr(_tokens, "_heuristic", {})
    monkeypatch.setattr(_tokens, "_warned", set())


@pytest.mark.usefixtures("no_encodings")
def test_without_any_encoding_counts_are_estimated_with_one_warning() -> None:
    assert _encodings.get_encoding("o200k_base") is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        o200k = counter_for("o200k_base")
        claude = counter_for("claude")
        gemini = counter_for("gemini")
        for counter in (o200k, claude, gemini):
            counter.count_messages(COOKBOOK)
        counter_for("o200k_base")
    estimates = [w for w in caught if issubclass(w.category, EstimateWarning)]
    assert len(estimates) == 1, [str(w.message) for w in caught]
    message = str(estimates[0].message)
    assert "o200k_base" in message
    assert "TIKTOKEN_CACHE_DIR" in message
    assert isinstance(o200k, HeuristicCounter)
    assert o200k.exact is False
    assert claude.exact is False
    assert o200k.count_text("hello world") == heuristic_tokens("hello world") == 4
    assert claude.name.startswith("estimate:claude:chars")
    assert claude.count_text("hello world") == math.ceil(4 * FAMILY_MULTIPLIERS["claude"])
    with pytest.raises(LookupError, match="TIKTOKEN_CACHE_DIR"):
        TiktokenCounter("cl100k_base")


def test_the_heuristic_over_counts_prose() -> None:
    exact = TiktokenCounter("o200k_base")
    prose = "The quick brown fox jumps over the lazy dog, again and again. " * 30
    assert heuristic_tokens(prose) >= exact.count_text(prose)
    assert heuristic_tokens("數據ab") == 2 + 2 + 1  # two CJK characters at two each, "ab"


def test_the_heuristic_over_counts_every_sample() -> None:
    # the module docstring promises a conservative estimate on every kind of text
    samples = [
        *SAMPLES,
        '{"a": [1, 2, 3], "b": {"c": "ddd", "e": [null, true, 1.5]}}',
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYAAAAAMAASsJTYQAAAAASUVORK5CYII=",
    ]
    for encoding in ("o200k_base", "cl100k_base"):
        exact = TiktokenCounter(encoding)
        for text in samples:
            assert heuristic_tokens(text) >= exact.count_text(text), (encoding, text)


def test_a_corrupt_encoding_file_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / _encodings._cache_key("o200k_base")).write_bytes(b"not the encoding")
    monkeypatch.setattr(_encodings, "encoding_search_paths", lambda: [bad])
    monkeypatch.setattr(_encodings, "_cache", {})
    assert _encodings.get_encoding("o200k_base") is None


def test_tiktoken_cache_dir_is_searched_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "/somewhere/else")
    paths = _encodings.encoding_search_paths()
    assert paths[0] == Path("/somewhere/else")
    assert any(p.name == "tiktoken_cache" for p in paths)


# -- calibration -------------------------------------------------------------------------------


def estimating(tokenizer: str, model: str) -> EstimatingCounter:
    counter = counter_for(tokenizer, model=model)
    assert isinstance(counter, EstimatingCounter)
    return counter


def test_calibration_scales_the_estimate_of_that_model_only() -> None:
    before = estimating("claude", "claude-x")
    assert before.multiplier == FAMILY_MULTIPLIERS["claude"]
    assert calibrate("claude-x", estimated=100, observed=120) == pytest.approx(1.1)
    after = estimating("claude", "claude-x")
    assert after.multiplier == round(FAMILY_MULTIPLIERS["claude"] * 1.1, 4)
    assert after.name != before.name, "a calibrated counter must not share cached counts"
    assert estimating("claude", "claude-y").multiplier == FAMILY_MULTIPLIERS["claude"]
    text = "The quick brown fox jumps over the lazy dog."
    assert after.count_text(text) >= before.count_text(text)
    # exact counters ignore calibration
    calibrate("gpt-4o", estimated=100, observed=300)
    assert counter_for("o200k_base", model="gpt-4o") is counter_for("o200k_base")


def test_calibration_is_bounded() -> None:
    for _ in range(20):
        factor = calibrate("wild", estimated=10, observed=10_000)
    assert factor == 2.0
    assert calibrate("wild", estimated=0, observed=5) == 2.0  # nonsense input changes nothing
