"""Readers and hand-checked facts for ``build_model_table.py`` (see its doc for the order).

Each reader gives :class:`Row` candidates keyed by routed name (no provider prefix); ``rank``
says how much a source is trusted for a model's facts (lower wins), ``host`` which provider's
listing it came from, ``base`` the base model a provider row names (models.dev ``base_model``).
"""

from __future__ import annotations

import csv
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from session_migrator.models._names import route_name

LITELLM_FILE = "litellm_model_prices_and_context_window.json"
CSV_FILE = "model_windows.csv"
MODELS_DEV = "models.dev"
LITELLM_AS_OF = "2026-08-01"
MODELS_DEV_AS_OF = "2026-07-02"  # commit f3fc692
CHECKED_AS_OF = "2026-08-01"

#: The hand facts (makers' model cards) outrank the CSV, whose open-weight rows are hosts' figures.
RANK_HAND, RANK_CSV, RANK_BASE, RANK_MAKER, RANK_HOST = 0, 1, 2, 3, 4

#: Routers, not models (OpenRouter's ``openrouter/auto`` and the like).
ROUTERS = frozenset({"auto", "bodybuilder", "free", "router"})
#: Not chat models: embeddings, speech, image and video generation, moderation.
NOT_CHAT = re.compile(
    r"embed|rerank|tts|whisper|transcri|moderation|dall-e|stable-diffusion|flux|imagen|veo-|sora"
    r"|gpt-image|-image(?:-|$)|speech|audio-preview-tts"
)


@dataclass(frozen=True, slots=True)
class Row:
    """One source's facts for one model id (before and after fixes)."""

    id: str
    provider: str
    max_input_tokens: int
    max_output_tokens: int | None
    rank: int
    source: str
    as_of: str
    ref: str
    context_window: int = 0
    note: str = ""
    preferred: bool = False  # wins ties within its rank (a bare LiteLLM key, a models.dev row)
    host: str = ""
    base: str = ""


def as_int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return int(value)


# -- models.dev ----------------------------------------------------------------------------------

#: models.dev lab folders -> the provider names this table uses.
LABS = {"alibaba": "qwen", "meta": "meta-llama", "moonshotai": "moonshot", "zhipuai": "zhipu-glm"}
#: models.dev provider folders that are a maker's own API (by the maker's table name). Azure
#: OpenAI is a host of OpenAI's models, not OpenAI's API: its deployments have limits of their
#: own (its gpt-3.5-turbo-0613 row says 16,384, OpenAI's model has 4,096), so its rows rank as a
#: host's and are kept as its listings, as LiteLLM's ``azure/`` keys already were.
DEV_FIRST_PARTY = {
    "openai": {"openai"},
    "anthropic": {"anthropic", "google-vertex-anthropic", "amazon-bedrock"},
    "google": {"google", "google-vertex"},
    "mistral": {"mistral"},
    "deepseek": {"deepseek"},
    "xai": {"xai"},
    "qwen": {"alibaba", "alibaba-cn"},
    "moonshot": {"moonshotai", "moonshotai-cn"},
    "zhipu-glm": {"zai", "zhipuai"},
    "minimax": {"minimax", "minimax-cn"},
    "cohere": {"cohere"},
    "perplexity": {"perplexity"},
    "meta-llama": {"llama"},
    "stepfun": {"stepfun"},
    "sarvam": {"sarvam"},
    "xiaomi": {"xiaomi"},
    "tencent": {"tencent-tokenhub"},
    "nvidia": {"nvidia"},
    "upstage": {"upstage"},
    "inception": {"inception"},
    "morph": {"morph"},
}


def _read_toml(path: Path) -> dict[str, object]:
    """A TOML file; a symbolic link stored as text (``../../azure/models/x.toml``) is followed."""
    text = path.read_text(encoding="utf-8")
    for _ in range(4):
        target = text.strip()
        if "\n" in target or not target.endswith(".toml") or "=" in target:
            break
        path = path.parent / target
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:  # a link to a file the snapshot does not hold
            return {}
    return tomllib.loads(text)


def _limits(data: dict[str, object]) -> tuple[int | None, int | None, int | None]:
    limit = data.get("limit")
    if not isinstance(limit, dict):
        return None, None, None
    return as_int(limit.get("context")), as_int(limit.get("input")), as_int(limit.get("output"))


def _is_chat(model_id: str, data: dict[str, object]) -> bool:
    modalities = data.get("modalities")
    if isinstance(modalities, dict) and "text" not in (modalities.get("output") or ["text"]):
        return False
    return not NOT_CHAT.search(model_id)


def _dev_row(
    model_id: str, data: dict[str, object], *, provider: str, rank: int, ref: str, host: str = ""
) -> Row | None:
    context, cap, output = _limits(data)
    if context is None or not _is_chat(model_id, data):
        return None
    cap = min(cap or context, context)
    return Row(
        id=model_id,
        provider=provider,
        max_input_tokens=cap,
        max_output_tokens=min(output, context) if output else None,
        rank=rank,
        source=f"models.dev@{MODELS_DEV_AS_OF}",
        as_of=MODELS_DEV_AS_OF,
        ref=ref,
        context_window=context,
        preferred=True,
        host=host,
    )


def read_models_dev_bases(root: Path) -> dict[str, Row]:
    """The base models (``models/<lab>/<id>.toml``): the maker's facts, by ``lab/id``."""
    bases: dict[str, Row] = {}
    for path in sorted((root / "models").glob("*/*.toml")):
        lab, stem = path.parent.name, path.stem
        data = _read_toml(path)
        row = _dev_row(
            route_name(stem),
            data,
            provider=LABS.get(lab, lab),
            rank=RANK_BASE,
            ref=f"models.dev: models/{lab}/{stem}",
        )
        if row is not None:
            bases[f"{lab}/{stem}"] = row
    return bases


def read_models_dev_providers(root: Path, bases: dict[str, Row], owner_of: object) -> list[Row]:
    """Every provider's rows; a row naming a base model is tied to it (``base``)."""
    rows: list[Row] = []
    for path in sorted((root / "providers").glob("*/models/**/*.toml")):
        host = path.relative_to(root / "providers").parts[0]
        local = path.relative_to(root / "providers" / host / "models").with_suffix("").as_posix()
        model_id = route_name(local)
        if model_id in ROUTERS or not re.fullmatch(r"[a-z0-9][a-z0-9._:+-]*", model_id):
            continue
        data = _read_toml(path)
        base_key = data.get("base_model")
        base = bases.get(base_key) if isinstance(base_key, str) else None
        merged: dict[str, object] = dict(data)
        if base is not None:  # a row inherits what it does not state from its base model
            own = data.get("limit") if isinstance(data.get("limit"), dict) else {}
            inherited = {"context": base.context_window, "output": base.max_output_tokens}
            merged["limit"] = {**inherited, **own}  # type: ignore[dict-item]
        owner = base.provider if base is not None else owner_of(model_id, local, host)  # type: ignore[operator]
        first_party = host in DEV_FIRST_PARTY.get(str(owner), set())
        row = _dev_row(
            model_id,
            merged,
            provider=str(owner),
            rank=RANK_MAKER if first_party else RANK_HOST,
            ref=f"models.dev: providers/{host}/models/{local}",
            host=host,
        )
        if row is not None:
            rows.append(Row(**{**_fields(row), "base": base.id if base is not None else ""}))
    return rows


def _fields(row: Row) -> dict[str, object]:
    return {name: getattr(row, name) for name in Row.__slots__}


# -- LiteLLM and the hand-checked CSV ----------------------------------------------------------


def read_litellm(path: Path, owner_of: object, first_party: dict[str, frozenset[str]]) -> list[Row]:
    """Chat and responses entries with an input limit, one :class:`Row` per entry."""
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = []
    for key in sorted(data):
        entry = data[key]
        if not isinstance(entry, dict) or entry.get("mode") not in ("chat", "responses"):
            continue
        max_input = as_int(entry.get("max_input_tokens"))
        model_id = route_name(key)
        if max_input is None or model_id in ROUTERS or NOT_CHAT.search(model_id):
            continue
        if not re.fullmatch(r"[a-z0-9][a-z0-9._:+-]*", model_id):
            continue
        host = str(entry.get("litellm_provider", ""))
        owner = str(owner_of(model_id, key, host))  # type: ignore[operator]
        rows.append(
            Row(
                id=model_id,
                provider=owner,
                max_input_tokens=max_input,
                max_output_tokens=as_int(entry.get("max_output_tokens")),
                rank=RANK_MAKER if host in first_party.get(owner, frozenset()) else RANK_HOST,
                source=f"litellm@{LITELLM_AS_OF}",
                as_of=LITELLM_AS_OF,
                ref=f"litellm: {key}",
                preferred=key.lower() == model_id,
                host=host.replace("_", "-"),
            )
        )
    return rows


def read_csv(path: Path) -> list[Row]:
    """The hand-checked rows (``model,provider,max_input_tokens,max_output_tokens,source``)."""
    rows = []
    with path.open(encoding="utf-8", newline="") as handle:
        for record in csv.DictReader(handle):
            date = re.search(r"@(\d{4}-\d{2}(?:-\d{2})?)", record["source"])
            rows.append(
                Row(
                    id=route_name(record["model"]),
                    provider=record["provider"],
                    max_input_tokens=int(record["max_input_tokens"]),
                    max_output_tokens=int(record["max_output_tokens"]),
                    rank=RANK_CSV,
                    source="checked",
                    as_of=date.group(1) if date else CHECKED_AS_OF,
                    ref=f"{CSV_FILE}: {record['source']}",
                    preferred="models.dev" in record["source"],
                )
            )
    return rows
