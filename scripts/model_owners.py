"""Who makes a model, for ``build_model_table.py``: the maker's name from the model's name
(``OWNER_RULES``), else from the organisation in a LiteLLM key, else the host's name; and the
providers that are each maker's own API (``FIRST_PARTY``).
"""

from __future__ import annotations

import re

__all__ = ["FIRST_PARTY", "OWNER_RULES", "owner_of"]

#: (pattern, owner, anywhere): names are matched at their start first, then (``anywhere``)
#: searched, so ``hermes-3-llama-3.1`` is Nous Research's and ``l3-8b-stheno`` falls through.
OWNER_RULES: tuple[tuple[str, str, bool], ...] = (
    (r"gpt-|o[1-9](?:$|-)|chatgpt|codex|computer-use", "openai", False),
    (r"claude", "anthropic", True),
    (r"gemini|gemma|learnlm|chat-bison|text-bison", "google", True),
    (r"hermes|nous-", "nousresearch", False),
    (r"nemotron", "nvidia", True),
    (r"mistral|mixtral|codestral|pixtral|ministral|magistral|devstral|voxtral", "mistral", True),
    (r"deepseek", "deepseek", True),
    (r"qwen|qwq|qvq", "qwen", True),
    (r"grok", "xai", True),
    (r"command|c4ai|aya-", "cohere", False),
    (r"kimi|moonshot", "moonshot", True),
    (r"glm|chatglm|codegeex", "zhipu-glm", True),
    (r"minimax|abab", "minimax", True),
    (r"nova-|titan-", "amazon", False),
    (r"jamba|j2-", "ai21", True),
    (r"phi-|mai-", "microsoft", False),
    (r"granite", "ibm", True),
    (r"sonar|pplx|r1-1776", "perplexity", True),
    (r"ernie", "baidu", True),
    (r"hunyuan", "tencent", True),
    (r"doubao|seed-", "bytedance", False),
    (r"yi-", "01-ai", False),
    (r"palmyra", "writer", True),
    (r"arctic", "snowflake", True),
    (r"dbrx", "databricks", True),
    (r"mercury", "inception", True),
    (r"sarvam", "sarvam", True),
    (r"gigachat", "sber", True),
    (r"solar", "upstage", True),
    (r"step-", "stepfun", False),
    (r"lfm", "liquid", False),
    (r"morph", "morph", False),
    (r"olmo", "allenai", True),
    (r"falcon", "tii", True),
    (r"llama|l3[-.]", "meta-llama", True),
)

#: LiteLLM providers that are the model maker's own API.
FIRST_PARTY: dict[str, frozenset[str]] = {
    owner: frozenset(hosts)
    for owner, hosts in {
        "openai": ["openai"],
        "anthropic": ["anthropic"],
        "google": ["gemini", "vertex_ai-language-models", "vertex_ai"],
        "mistral": ["mistral", "codestral"],
        "deepseek": ["deepseek"],
        "xai": ["xai"],
        "cohere": ["cohere_chat", "cohere"],
        "moonshot": ["moonshot"],
        "zhipu-glm": ["zai"],
        "qwen": ["dashscope"],
        "minimax": ["minimax"],
        "meta-llama": ["meta_llama"],
        "amazon": ["bedrock", "bedrock_converse", "amazon_nova"],
        "ai21": ["ai21"],
        "perplexity": ["perplexity"],
        "sber": ["gigachat"],
        "sarvam": ["sarvam"],
        "inception": ["inception"],
        "morph": ["morph"],
        "bytedance": ["volcengine"],
        "tencent": ["tencent"],
    }.items()
}

#: Path segments of LiteLLM keys that are not an organisation.
_NOT_ORG = re.compile(
    r"models|accounts|@\w+|ps|invoke|[a-z]{2}(?:-[a-z]+)+-\d|\d+-month-commitment"
)
_HOST_NAMES = {"gemini": "google", "palm": "google", "vertex_ai-language-models": "google"}


def owner_of(model_id: str, key: str = "", host: str = "") -> str:
    """The maker of a model: from its name, else the organisation in ``key``
    (``openrouter/xiaomi/mimo-v2``), else the host's name, else ``unknown``."""
    for pattern, owner, _anywhere in OWNER_RULES:
        if re.match(pattern, model_id):
            return owner
    for pattern, owner, anywhere in OWNER_RULES:
        if anywhere and re.search(pattern, model_id):
            return owner
    parts = key.lower().split("/")
    if len(parts) >= 3 and not _NOT_ORG.fullmatch(parts[-2]):
        return parts[-2]
    if host:
        name = _HOST_NAMES.get(host) or re.sub(
            r"^vertex_ai-|_models$|_converse$|_ai$|_chat$", "", host
        )
        return name.replace("_", "-")
    return "unknown"
