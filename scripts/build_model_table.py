"""Generate ``shared/session_migrator/_data/models.json``, the bundled model-window table.

    python scripts/build_model_table.py [DATA_DIR] [--out FILE] [--check]

Offline and deterministic: the same inputs give the same bytes (rows sorted, one per line).
``DATA_DIR`` (default ``../shared/data`` beside the repository) holds:

- ``litellm_model_prices_and_context_window.json``: LiteLLM's model list (MIT) as of
  :data:`LITELLM_AS_OF`; entries with mode ``chat`` or ``responses`` and a ``max_input_tokens``;
- ``model_windows.csv``: hand-checked rows, which win over LiteLLM; where it lists one model
  twice, the row derived from models.dev wins (models.dev keeps input, output and window apart).

Plus :data:`HAND_ROWS`: retired models LiteLLM dropped, with their public figures.

Each row is keyed by its routed name (``session_migrator._models.route_name``: no provider
prefix, Bedrock or Vertex wrapping; dates kept). Where several sources name one model, the first
of these wins: the CSV, :data:`HAND_ROWS`, LiteLLM's entry from the model's own maker
(:data:`FIRST_PARTY`), then other hosts (their most common figures). When the maker's facts are
known for a model, other hosts' undated spellings of it (``claude-3-7-sonnet-latest`` at one
host) become aliases of the maker's newest row: the table describes models; a host's own
serving limit is for the live cache or an override. Every bare name (dates and ``-latest``
stripped) that is not a row is an alias of its newest row.

Then :func:`apply_fixes` corrects the known errors of the sources (each fixed row says so in
``note`` and has source ``checked``): OpenAI's gpt-5 input cap versus window, Claude's 1M
windows that need a beta header, the deepseek-chat alias that now serves V4, and output caps
larger than the window.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

try:
    from session_migrator._models import infer_tokenizer, normalize_model_name, route_name
except ImportError:  # pragma: no cover - a clear message instead of a traceback
    sys.exit("build_model_table: install the project first (make install), then run again")

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO / ".." / "shared" / "data"
DEFAULT_OUT = REPO / "shared" / "session_migrator" / "_data" / "models.json"
LITELLM_FILE = "litellm_model_prices_and_context_window.json"
CSV_FILE = "model_windows.csv"
LITELLM_AS_OF = "2026-08-01"
#: The date the hand-checked rows and fixes were checked against their sources.
CHECKED_AS_OF = "2026-08-01"
MIN_MODELS = 1_000
MIN_PROVIDERS = 20

#: Routers, not models (OpenRouter's ``openrouter/auto`` and the like).
ROUTERS = frozenset({"auto", "bodybuilder", "free", "router"})

RANK_CSV, RANK_HAND, RANK_MAKER, RANK_HOST = 0, 1, 2, 3

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

_ANTHROPIC_DOCS = "Anthropic models overview (legacy models)"
_GEMINI_DOCS = "Gemini API models page (Gemini 1.x)"
#: (name, provider, max input, max output, reference): retired models missing from LiteLLM.
HAND_ROWS: tuple[tuple[str, str, int, int, str], ...] = (
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


def _int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return int(value)


def read_litellm(path: Path) -> list[Row]:
    """Chat and responses entries with an input limit, one :class:`Row` per entry."""
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = []
    for key in sorted(data):
        entry = data[key]
        if not isinstance(entry, dict) or entry.get("mode") not in ("chat", "responses"):
            continue
        max_input = _int(entry.get("max_input_tokens"))
        if max_input is None:
            continue
        model_id = route_name(key)
        if not re.fullmatch(r"[a-z0-9][a-z0-9._:+-]*", model_id):
            continue
        if model_id in ROUTERS:
            continue
        host = str(entry.get("litellm_provider", ""))
        owner = owner_of(model_id, key, host)
        maker = host in FIRST_PARTY.get(owner, frozenset())
        rows.append(
            Row(
                id=model_id,
                provider=owner,
                max_input_tokens=max_input,
                max_output_tokens=_int(entry.get("max_output_tokens")),
                rank=RANK_MAKER if maker else RANK_HOST,
                source=f"litellm@{LITELLM_AS_OF}",
                as_of=LITELLM_AS_OF,
                ref=f"litellm: {key}",
                preferred=key.lower() == model_id,
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


def hand_rows() -> list[Row]:
    return [
        Row(name, provider, max_in, max_out, RANK_HAND, "checked", CHECKED_AS_OF, f"hand: {ref}")
        for name, provider, max_in, max_out, ref in HAND_ROWS
    ]


def choose(rows: Iterable[Row]) -> dict[str, Row]:
    """One row per id: best rank, then preferred, then the most common figures, then smaller."""
    by_id: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_id[row.id].append(row)
    chosen = {}
    for model_id, group in by_id.items():
        best_rank = min(r.rank for r in group)
        top = [r for r in group if r.rank == best_rank]
        votes = Counter((r.max_input_tokens, r.max_output_tokens) for r in top)
        chosen[model_id] = min(
            top,
            key=lambda r: (
                not r.preferred,
                -votes[(r.max_input_tokens, r.max_output_tokens)],
                r.max_input_tokens,
                r.max_output_tokens or 0,
                r.ref,
            ),
        )
        figures = {(r.max_input_tokens, r.max_output_tokens) for r in group if r.rank == RANK_HAND}
        figures |= {(r.max_input_tokens, r.max_output_tokens) for r in group if r.rank == RANK_CSV}
        if any(r.rank == RANK_HAND for r in group) and len(figures) > 1:
            raise SystemExit(f"build_model_table: {model_id}: HAND_ROWS disagrees with {CSV_FILE}")
    return chosen


def _newest(ids: Sequence[str], bare: str) -> str:
    """The row a bare name stands for: itself, its ``-latest`` row, else the newest dated one."""
    if bare in ids:
        return bare
    if f"{bare}-latest" in ids:
        return f"{bare}-latest"
    return max(ids)


def split_aliases(chosen: dict[str, Row]) -> tuple[dict[str, Row], dict[str, str]]:
    """Rows and aliases (see the module doc: other hosts' spellings and bare names)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for model_id in sorted(chosen):
        groups[normalize_model_name(model_id)].append(model_id)
    rows: dict[str, Row] = {}
    aliases: dict[str, str] = {}
    for bare, ids in groups.items():
        makers = [i for i in ids if chosen[i].rank <= RANK_MAKER]
        target = _newest(makers or ids, bare)
        for model_id in ids:
            spelling = model_id in (bare, f"{bare}-latest")  # not a dated snapshot of its own
            if makers and spelling and model_id not in makers:
                aliases[model_id] = target
            else:
                rows[model_id] = chosen[model_id]
        if bare not in rows:
            aliases[bare] = target
    return rows, aliases


# -- fixes ---------------------------------------------------------------------------------------

_GPT5 = re.compile(r"gpt-(?:[5-9]|\d\d)(?:$|[-.])")
_CLAUDE_VERSION = re.compile(r"claude-(?:[a-z]+-)?(\d)(?:-(\d{1,2}))?(?!\d)")


def _was(row: Row) -> str:
    return f"(source said {row.max_input_tokens:,} input / {row.max_output_tokens or 0:,} output)"


def fix_gpt5_input_cap(row: Row, rows: dict[str, Row]) -> Row | None:
    """OpenAI gpt-5 and later: input cap = window - 128,000 output (400k: 272k; 1.05M: 922k).

    LiteLLM gives the input cap for 272k models and the window for the others; models.dev and
    OpenAI's model pages state both (gpt-5: 272,000 of 400,000; gpt-5.4: 922,000 of 1,050,000).
    """
    del rows
    if row.provider != "openai" or not _GPT5.match(row.id) or row.max_output_tokens != 128_000:
        return None
    if row.max_input_tokens == 272_000 and row.context_window == 272_000:
        window, cap = 400_000, 272_000
    elif row.max_input_tokens in (400_000, 1_050_000):
        window, cap = row.max_input_tokens, row.max_input_tokens - 128_000
    else:
        return None
    note = f"gpt-5 family: {cap:,} input of a {window:,} window {_was(row)}"
    return replace(row, context_window=window, max_input_tokens=cap, note=note)


def fix_claude_default_window(row: Row, rows: dict[str, Row]) -> Row | None:
    """Claude before 4.6 has a 200,000 window; 1M needs the ``context-1m`` beta header."""
    del rows
    match = _CLAUDE_VERSION.search(row.id)
    if row.provider != "anthropic" or match is None or row.context_window <= 200_000:
        return None
    if (int(match.group(1)), int(match.group(2) or 0)) >= (4, 6):
        return None
    note = f"Claude < 4.6: 200,000 by default, 1M only with a beta header {_was(row)}"
    return replace(row, context_window=200_000, max_input_tokens=200_000, note=note)


def fix_deepseek_aliases(row: Row, rows: dict[str, Row]) -> Row | None:
    """``deepseek-chat`` / ``deepseek-reasoner`` now serve DeepSeek V4 Flash (1M window)."""
    if row.id not in ("deepseek-chat", "deepseek-reasoner") or "deepseek-v4-flash" not in rows:
        return None
    v4 = rows["deepseek-v4-flash"]
    note = f"alias now served by deepseek-v4-flash {_was(row)}"
    return replace(
        row,
        context_window=v4.context_window,
        max_input_tokens=v4.max_input_tokens,
        max_output_tokens=v4.max_output_tokens,
        note=note,
    )


def fix_output_over_window(row: Row, rows: dict[str, Row]) -> Row | None:
    """An output cap larger than the window is capped at the window."""
    del rows
    if row.max_output_tokens is None or row.max_output_tokens <= row.context_window:
        return None
    note = f"max output capped at the window {_was(row)}"
    return replace(row, max_output_tokens=row.context_window, note=note)


#: (fix, whether it states a checked fact: then the row's source becomes ``checked``).
FIXES: tuple[tuple[Callable[[Row, dict[str, Row]], Row | None], bool], ...] = (
    (fix_gpt5_input_cap, True),
    (fix_claude_default_window, True),
    (fix_deepseek_aliases, True),
    (fix_output_over_window, False),
)


def apply_fixes(rows: dict[str, Row]) -> dict[str, Row]:
    """Rows with ``context_window`` set (the input limit unless a fix says otherwise), fixed."""
    base = {k: replace(r, context_window=r.max_input_tokens) for k, r in rows.items()}
    fixed = dict(base)
    for fix, checked in FIXES:
        for model_id in sorted(fixed):
            row = fixed[model_id]
            new = fix(row, base)
            if new is not None:
                note = f"{row.note}; {new.note}" if row.note else new.note
                if checked:
                    new = replace(new, source="checked", as_of=CHECKED_AS_OF)
                fixed[model_id] = replace(new, note=note)
    return fixed


# -- output --------------------------------------------------------------------------------------


def render(rows: dict[str, Row], aliases: dict[str, str]) -> str:
    """The JSON text: a header, then one line per model and per alias, sorted."""
    providers = sorted({r.provider for r in rows.values()})
    header = {
        "format": 1,
        "generated_by": "scripts/build_model_table.py",
        "sources": {
            f"litellm@{LITELLM_AS_OF}": f"BerriAI/litellm {LITELLM_FILE} (MIT)",
            "checked": f"{CSV_FILE} (LiteLLM cross-checked with models.dev and LangChain "
            "profiles, MIT), hand-added retired models and the fixes named in each row's note",
        },
        "counts": {"models": len(rows), "aliases": len(aliases), "providers": len(providers)},
    }
    lines = ["{"]
    lines += [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}," for k, v in header.items()]
    lines.append('  "models": {')
    ordered = sorted(rows)
    for i, model_id in enumerate(ordered):
        r = rows[model_id]
        record: dict[str, object] = {
            "provider": r.provider,
            "context_window": r.context_window,
            "max_input_tokens": r.max_input_tokens,
            "max_output_tokens": r.max_output_tokens,
            "tokenizer": infer_tokenizer(model_id),
            "source": r.source,
            "as_of": r.as_of,
            "ref": r.ref,
        }
        if r.note:
            record["note"] = r.note
        comma = "," if i < len(ordered) - 1 else ""
        lines.append(f"    {json.dumps(model_id)}: {json.dumps(record, ensure_ascii=False)}{comma}")
    lines.append("  },")
    lines.append('  "aliases": {')
    names = sorted(aliases)
    for i, alias in enumerate(names):
        comma = "," if i < len(names) - 1 else ""
        lines.append(f"    {json.dumps(alias)}: {json.dumps(aliases[alias])}{comma}")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def validate(rows: dict[str, Row], aliases: dict[str, str]) -> None:
    """The table's contract; a violation stops the build."""
    problems = []
    for model_id, r in rows.items():
        if not 0 < r.max_input_tokens <= r.context_window:
            problems.append(f"{model_id}: needs 0 < max_input_tokens <= context_window")
        if r.max_output_tokens is not None and not 0 < r.max_output_tokens <= r.context_window:
            problems.append(f"{model_id}: needs 0 < max_output_tokens <= context_window")
    problems += [f"alias {a} -> {t}: no such row" for a, t in aliases.items() if t not in rows]
    problems += [f"{a}: both a row and an alias" for a in aliases if a in rows]
    if len(rows) < MIN_MODELS:
        problems.append(f"only {len(rows)} models (want >= {MIN_MODELS})")
    if len({r.provider for r in rows.values()}) < MIN_PROVIDERS:
        problems.append(f"fewer than {MIN_PROVIDERS} providers")
    if problems:
        raise SystemExit("build_model_table: " + "\n  ".join(problems))


def build(data_dir: Path) -> str:
    """The table's JSON text from the files in ``data_dir``."""
    for name in (LITELLM_FILE, CSV_FILE):
        if not (data_dir / name).is_file():
            raise SystemExit(f"build_model_table: {data_dir / name} not found; pass DATA_DIR")
    candidates = [
        *read_csv(data_dir / CSV_FILE),
        *hand_rows(),
        *read_litellm(data_dir / LITELLM_FILE),
    ]
    rows, aliases = split_aliases(choose(candidates))
    rows = apply_fixes(rows)
    validate(rows, aliases)
    return render(rows, aliases)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the JSON")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if --out differs from a fresh build"
    )
    args = parser.parse_args(argv)
    text = build(args.data_dir)
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
        if current != text:
            print(f"{args.out} is out of date: run scripts/build_model_table.py", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8", newline="\n")
    counts = json.loads(text)["counts"]
    print(
        f"wrote {args.out}: {counts['models']} models, {counts['aliases']} aliases, "
        f"{counts['providers']} providers"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
