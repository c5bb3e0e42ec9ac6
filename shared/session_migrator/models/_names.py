"""Model names: how a name was routed and its bare form (the windows layer's vocabulary).

Pure functions over strings, with no import of the rest of the package: shared by the lookup
(``_models``), the bundled table (``_model_table``), the live cache (``_live``), the tokenizer
families (``_tokenizers``) and the script that builds the table, so all agree on what a name means.

>>> normalize_model_name("us.anthropic.claude-3-5-sonnet-20241022-v2:0")
'claude-3-5-sonnet'
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

__all__ = [
    "QUANTIZED",
    "name_candidates",
    "normalize_model_name",
    "provider_prefix",
    "route_name",
    "spelling_key",
]

# -- name normalisation --------------------------------------------------------------------------

_BEDROCK_REGIONS = frozenset({"us", "eu", "apac", "au", "jp", "global", "us-gov", "ca", "sa"})
_BEDROCK_VENDORS = frozenset(
    {
        "ai21", "amazon", "anthropic", "cohere", "deepseek", "google", "meta", "minimax",
        "mistral", "moonshotai", "nvidia", "openai", "qwen", "twelvelabs", "writer", "xai", "zai",
    }
)  # fmt: skip
#: Routing tags (OpenRouter's :free, :beta, :thinking ..., Ollama's :latest); any other tag is a
#: size or variant (Ollama's llama3:70b, phi3:mini) and stays as ``-70b``, ``-mini``.
_TAG = re.compile(r":(?:free|beta|thinking|extended|nitro|floor|online|exacto|latest|default)$")
#: The providers a framework names before a colon (LangChain's
#: ``init_chat_model("provider:model")``).
_FRAMEWORK_PROVIDERS = frozenset(
    "openai anthropic azure_openai azure_ai google_vertexai google_genai google_anthropic_vertex "
    "bedrock bedrock_converse cohere fireworks together mistralai huggingface groq ollama "
    "deepseek ibm nvidia xai perplexity upstage".split()
)
_BEDROCK_VERSION = re.compile(r"-v?\d+:\d+$")  # -v1:0, -v2:0, -1:0
_VERTEX_AT = re.compile(r"@([a-z0-9-]+)$")
_CLAUDE_LEGACY = re.compile(r"claude-(?:[12](?:[.-]|$)|instant|v\d)")
_CLAUDE_SWAPPED = re.compile(r"^claude-(\d+)(?:-(\d))?-(opus|sonnet|haiku)(?=-|$)")
_SUFFIXES = (
    re.compile(r"-\d{4}-\d{2}-\d{2}$"),  # -2024-08-06
    re.compile(r"-20\d{6}$"),  # -20250514
    re.compile(r"-latest$"),
    re.compile(r"-0\d\d$"),  # -001, -002
    re.compile(r"-(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])$"),  # -0613 (MMDD)
    re.compile(r"-2[3-9](?:0[1-9]|1[0-2])$"),  # -2411 (YYMM)
)


@functools.lru_cache(maxsize=4096)
def route_name(name: str) -> str:
    """``name`` lowercased, without how it was routed; dates and versions are kept.

    Removes provider prefixes (anything up to the last ``/``, and a framework's ``provider:``
    such as LangChain's ``ollama:llama3.1:8b``), fine-tune wrappers
    (``ft:BASE:org::id``), Bedrock region and vendor prefixes and API versions (``-v1:0``),
    Vertex ``@`` versions (``@20240620`` becomes ``-20240620``; ``@001``, ``@default`` go),
    ``:free``-style tags; spells Claude ids the way Anthropic does (``claude-3.5-sonnet`` ->
    ``claude-3-5-sonnet``, ``claude-4-opus`` -> ``claude-opus-4``).

    >>> route_name("bedrock/us.anthropic.claude-3-haiku-20240307-v1:0")
    'claude-3-haiku-20240307'
    """
    s = name.strip().lower().rsplit("/", 1)[-1]
    head, colon, rest = s.partition(":")
    if colon and rest and head in _FRAMEWORK_PROVIDERS:  # init_chat_model("ollama:llama3.1:8b")
        s = rest
    if s.startswith("ft:"):
        s = s.split(":")[1] or s
    s = _TAG.sub("", s)
    head, dot, rest = s.partition(".")
    if dot and head in _BEDROCK_REGIONS:
        head2, dot2, rest2 = rest.partition(".")
        if dot2 and head2 in _BEDROCK_VENDORS:
            head, s = head2, rest2
    elif dot and head in _BEDROCK_VENDORS:
        s = rest
    if head == "deepseek" and not s.startswith("deepseek"):
        s = f"deepseek-{s}"  # Bedrock's deepseek.v3.2, deepseek.r1
    match = _BEDROCK_VERSION.search(s)
    if match and "-" in s[: match.start()]:
        s = s[: match.start()]
    match = _VERTEX_AT.search(s)
    if match:
        tag = match.group(1)
        drop = tag in ("default", "latest") or re.fullmatch(r"\d{3}", tag)
        s = s[: match.start()] + ("" if drop else f"-{tag}")
    s = re.sub(r"-v\d+(?=-20\d{6}$)", "", s)  # Vertex claude-3-5-sonnet-v2@20241022
    if ":" in s and not s.rsplit(":", 1)[1].isdigit():
        s = s.replace(":", "-")  # ollama size tags: llama3:70b
    s = re.sub(r"^(?:anthropic-(?=claude-)|openai-(?=gpt-|o\d))", "", s)
    if s.startswith("claude-") and not _CLAUDE_LEGACY.match(s):
        s = re.sub(r"(?<=\d)\.(?=\d)", "-", s)
        s = re.sub(r"^(claude-[a-z]+-\d)(\d)(?=-|$)", r"\1-\2", s)  # copilot's claude-opus-41
        swapped = _CLAUDE_SWAPPED.match(s)
        if swapped and int(swapped.group(1)) >= 4:
            major, minor, tier = swapped.groups()
            version = f"{major}-{minor}" if minor else major
            s = f"claude-{tier}-{version}{s[swapped.end() :]}"
    return s or name.strip().lower()


@functools.lru_cache(maxsize=4096)
def provider_prefix(name: str) -> str:
    """The provider ``name`` is qualified with: its first path segment, lowercased, ``_`` as
    ``-`` (LiteLLM's ``github_copilot/`` and models.dev's ``github-copilot/`` are one
    provider); ``""`` for a bare name. Whether the table knows that provider is the table's
    business (``models/gemini-1.5-pro`` names none).

    >>> provider_prefix("github_copilot/claude-sonnet-4"), provider_prefix("gpt-4o")
    ('github-copilot', '')
    """
    head, slash, _ = name.strip().lower().partition("/")
    return head.replace("_", "-") if slash else ""


def _strip_steps(name: str) -> Iterator[str]:
    """Successive forms of ``name`` with one date/version/-latest suffix removed each time."""
    current = name
    while True:
        for pattern in _SUFFIXES:
            match = pattern.search(current)
            if match and match.start() > 0:
                current = current[: match.start()]
                yield current
                break
        else:
            return


@functools.lru_cache(maxsize=4096)
def normalize_model_name(name: str) -> str:
    """The bare model name: :func:`route_name` without date, version and ``-latest`` suffixes.

    >>> normalize_model_name("ft:gpt-4o-mini-2024-07-18:acme::abc123")
    'gpt-4o-mini'
    >>> normalize_model_name("models/gemini-1.5-pro-latest")
    'gemini-1.5-pro'
    """
    routed = route_name(name)
    last = routed
    for last in _strip_steps(routed):  # noqa: B007 - the final form is wanted
        pass
    return last


@functools.lru_cache(maxsize=4096)
def name_candidates(name: str) -> tuple[str, ...]:
    """The forms of ``name`` a lookup tries, most specific first, without repeats."""
    routed = route_name(name)
    forms = [name.strip().lower(), routed, *_strip_steps(routed)]
    bare = QUANTIZED.sub("", routed)
    if bare != routed:  # Ollama's llama3.1:8b-instruct-q4_K_M, a host's -fp8
        forms += [bare, *_strip_steps(bare)]
    forms.append(spelling_key(routed))
    return tuple(dict.fromkeys(forms))


#: Quantization and serving suffixes: the same model's weights, the same window.
QUANTIZED = re.compile(
    r"(?:-(?:fp8|fp16|fp32|fp4|bf16|f16|f32|int4|int8|awq|gptq|w4a16|w8a8|gguf|mlx|nvfp4"
    r"|q[2-8](?:_[0-9a-z]+)*|iq[1-4](?:_[0-9a-z]+)*))+$"
)
_LLAMA = re.compile(r"^(?:meta-)?llama-?v?(\d+)(?:[.p-](\d))?(?=-\d+(?:\.\d+)?b(?:-|$)|-|$)")


@functools.lru_cache(maxsize=8192)
def spelling_key(name: str) -> str:
    """What every spelling of one model shares: routed, then without a maker prefix
    (``meta-llama-3.1`` -> ``llama-3.1``; ``llama3.1``, ``llama-v3p1``, ``llama3-1`` alike),
    quantization suffixes, ``-instruct`` / ``-it`` / ``-hf``, expert counts (``-16e``); dates and
    versions are kept. Two names with one key are one model: the bundled table gives them the
    same facts.

    >>> spelling_key("meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo")
    'llama-3.1-8b'
    >>> spelling_key("ollama/llama3.1:8b-instruct-q4_K_M")
    'llama-3.1-8b'
    """
    s = route_name(name)
    s = _LLAMA.sub(lambda m: f"llama-{m[1]}" + (f".{m[2]}" if m[2] else ""), s)
    s = re.sub(r"-instruct-turbo$", "-instruct", s)
    s = QUANTIZED.sub("", s)
    s = re.sub(r"-v0(\d)$", r"-v0.\1", s)  # mistral-7b-instruct-v03
    s = re.sub(r"-\d+e(?=-|$)", "", s)  # llama-4-scout-17b-16e
    s = re.sub(r"-(?:instruct|it|hf)(?=-|$)", "", s)
    return s or route_name(name)
