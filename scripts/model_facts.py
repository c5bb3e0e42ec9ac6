"""Hand-checked facts for ``build_model_table.py``: retired models, open-weight models from their
makers' model cards, and Ollama's library names.

Open-weight models are served by many hosts, each with its own limit (16k, 127k, 131k for Llama
3.1 8B); the model's own window is the one its maker publishes (the model card, or
``max_position_embeddings`` in its ``config.json``). These rows rank above every provider row.
"""

from __future__ import annotations

_ANTHROPIC_DOCS = "Anthropic models overview (legacy models)"
_GEMINI_DOCS = "Gemini API models page (Gemini 1.x)"

#: (name, provider, max input, max output, reference): retired models missing from LiteLLM.
RETIRED: tuple[tuple[str, str, int, int | None, str], ...] = (
    ("claude-3-5-haiku-20241022", "anthropic", 200_000, 8_192, _ANTHROPIC_DOCS),
    ("claude-3-5-sonnet-20240620", "anthropic", 200_000, 8_192, _ANTHROPIC_DOCS),
    ("claude-3-5-sonnet-20241022", "anthropic", 200_000, 8_192, _ANTHROPIC_DOCS),
    ("claude-3-sonnet-20240229", "anthropic", 200_000, 4_096, _ANTHROPIC_DOCS),
    ("claude-2.1", "anthropic", 200_000, 4_096, _ANTHROPIC_DOCS),
    ("claude-2.0", "anthropic", 100_000, 4_096, _ANTHROPIC_DOCS),
    ("claude-instant-1.2", "anthropic", 100_000, 4_096, _ANTHROPIC_DOCS),
    ("gemini-1.5-pro", "google", 2_097_152, 8_192, _GEMINI_DOCS),
    ("gemini-1.5-flash", "google", 1_048_576, 8_192, _GEMINI_DOCS),
    ("gemini-1.5-flash-8b", "google", 1_048_576, 8_192, _GEMINI_DOCS),
    ("gemini-1.0-pro", "google", 30_720, 2_048, _GEMINI_DOCS),
)

_META = "Meta model card (meta-llama on Hugging Face: context length)"
_MISTRAL = "Mistral AI model card (mistralai on Hugging Face: context length)"
_QWEN = "Qwen model card (config.json max_position_embeddings; 128k only with YaRN)"
_GEMMA = "Google Gemma model card (context length)"
_PHI = "Microsoft Phi model card (context length)"
_MINIMAX = "MiniMax-M1 model card (1M context; -40k/-80k: the thinking budget)"

#: (name, provider, window, max output or None, reference): open weights, per their makers.
OPEN_WEIGHTS: tuple[tuple[str, str, int, int | None, str], ...] = (
    *((f"llama-2-{size}-chat", "meta-llama", 4_096, None, _META) for size in ("7b", "13b", "70b")),
    *((f"llama-3-{size}-instruct", "meta-llama", 8_192, None, _META) for size in ("8b", "70b")),
    *(
        (f"llama-3.1-{size}-instruct", "meta-llama", 131_072, None, _META)
        for size in ("8b", "70b", "405b")
    ),
    *((f"llama-3.2-{size}-instruct", "meta-llama", 131_072, None, _META) for size in ("1b", "3b")),
    *(
        (f"llama-3.2-{size}-vision-instruct", "meta-llama", 131_072, None, _META)
        for size in ("11b", "90b")
    ),
    ("llama-3.3-70b-instruct", "meta-llama", 131_072, None, _META),
    *(
        (f"codellama-{size}-instruct", "meta-llama", 16_384, None, _META)
        for size in ("7b", "13b", "34b")
    ),
    ("mistral-7b-instruct-v0.1", "mistral", 8_192, None, _MISTRAL),
    ("mistral-7b-instruct-v0.2", "mistral", 32_768, None, _MISTRAL),
    ("mistral-7b-instruct-v0.3", "mistral", 32_768, None, _MISTRAL),
    ("mixtral-8x7b-instruct-v0.1", "mistral", 32_768, None, _MISTRAL),
    ("mixtral-8x22b-instruct-v0.1", "mistral", 65_536, None, _MISTRAL),
    *(
        (f"qwen2.5-{size}-instruct", "qwen", 32_768, 8_192, _QWEN)
        for size in ("0.5b", "1.5b", "3b", "7b", "14b", "32b", "72b")
    ),
    *(
        (f"qwen2.5-coder-{size}-instruct", "qwen", 32_768, 8_192, _QWEN)
        for size in ("0.5b", "1.5b", "3b", "7b", "14b", "32b")
    ),
    *((f"gemma-{size}-it", "google", 8_192, None, _GEMMA) for size in ("2b", "7b")),
    *((f"gemma-2-{size}-it", "google", 8_192, None, _GEMMA) for size in ("2b", "9b", "27b")),
    ("gemma-3-1b-it", "google", 32_768, 8_192, _GEMMA),
    *((f"gemma-3-{size}-it", "google", 131_072, 8_192, _GEMMA) for size in ("4b", "12b", "27b")),
    ("phi-3-mini-4k-instruct", "microsoft", 4_096, None, _PHI),
    ("phi-3-mini-128k-instruct", "microsoft", 131_072, None, _PHI),
    ("phi-3-medium-4k-instruct", "microsoft", 4_096, None, _PHI),
    ("phi-3-medium-128k-instruct", "microsoft", 131_072, None, _PHI),
    ("phi-3.5-mini-instruct", "microsoft", 131_072, None, _PHI),
    ("phi-4", "microsoft", 16_384, None, _PHI),
    ("minimax-m1-40k", "minimax", 1_000_000, 40_000, _MINIMAX),
    ("minimax-m1-80k", "minimax", 1_000_000, 80_000, _MINIMAX),
)


def _sizes(base: str, sizes: str) -> dict[str, str]:
    return {size: base.format(size=size) for size in sizes.split()}


#: Ollama library names: (name, default tag, {size tag: the model it pulls}). ``name`` alone
#: and ``name:latest`` pull the default tag; a tag may add ``-instruct``, ``-text`` or a
#: quantization (``-q4_K_M``, ``-fp16``): the lookup strips those (see ``_model_names``).
OLLAMA: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("llama2", "7b", _sizes("llama-2-{size}-chat", "7b 13b 70b")),
    ("llama3", "8b", _sizes("llama-3-{size}-instruct", "8b 70b")),
    ("llama3.1", "8b", _sizes("llama-3.1-{size}-instruct", "8b 70b 405b")),
    ("llama3.2", "3b", _sizes("llama-3.2-{size}-instruct", "1b 3b")),
    ("llama3.3", "70b", {"70b": "llama-3.3-70b-instruct"}),
    ("codellama", "7b", _sizes("codellama-{size}-instruct", "7b 13b 34b")),
    ("mistral", "7b", {"7b": "mistral-7b-instruct-v0.3"}),
    (
        "mixtral",
        "8x7b",
        {"8x7b": "mixtral-8x7b-instruct-v0.1", "8x22b": "mixtral-8x22b-instruct-v0.1"},
    ),
    ("qwen2.5", "7b", _sizes("qwen2.5-{size}-instruct", "0.5b 1.5b 3b 7b 14b 32b 72b")),
    (
        "qwen2.5-coder",
        "7b",
        _sizes("qwen2.5-coder-{size}-instruct", "0.5b 1.5b 3b 7b 14b 32b"),
    ),
    ("gemma", "7b", _sizes("gemma-{size}-it", "2b 7b")),
    ("gemma2", "9b", _sizes("gemma-2-{size}-it", "2b 9b 27b")),
    ("gemma3", "4b", _sizes("gemma-3-{size}-it", "1b 4b 12b 27b")),
    (
        "phi3",
        "mini",
        {
            "mini": "phi-3-mini-4k-instruct",
            "3.8b": "phi-3-mini-4k-instruct",
            "medium": "phi-3-medium-4k-instruct",
            "14b": "phi-3-medium-4k-instruct",
            "mini-128k": "phi-3-mini-128k-instruct",
            "medium-128k": "phi-3-medium-128k-instruct",
            "mini-4k": "phi-3-mini-4k-instruct",
            "medium-4k": "phi-3-medium-4k-instruct",
        },
    ),
    ("phi3.5", "3.8b", {"3.8b": "phi-3.5-mini-instruct", "mini": "phi-3.5-mini-instruct"}),
    ("phi4", "14b", {"14b": "phi-4"}),
)


def ollama_aliases() -> dict[str, str]:
    """Every Ollama spelling (routed: ``name:tag`` becomes ``name-tag``) -> the model's name."""
    out: dict[str, str] = {}
    for name, default, tags in OLLAMA:
        out[name] = tags[default]
        for tag, model in tags.items():
            out[f"{name}-{tag}"] = model
            out[f"{name}-{tag}-instruct"] = model
    return out
