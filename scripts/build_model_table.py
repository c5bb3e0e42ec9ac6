"""Generate ``shared/session_migrator/_data/models.json``, the bundled model-window table.

    python scripts/build_model_table.py [DATA_DIR] [--out FILE] [--check]

Offline and deterministic: the same inputs give the same bytes (rows sorted, one per line).
``DATA_DIR`` (default ``../shared/data`` beside the repository) holds models.dev's data
(``models.dev/``: base models and every provider's rows, MIT), LiteLLM's model list (MIT) and
``model_windows.csv`` (hand-checked); ``model_facts.py`` adds retired models, open-weight models
from their makers' model cards and Ollama's library names.

Every name is routed (``route_name``: no provider prefix, Bedrock or Vertex wrapping) and the
spellings of one model are grouped: by :func:`~session_migrator.models._names.spelling_key`
(``meta-llama/Meta-Llama-3.1-8B-Instruct``, ``llama3.1:8b`` and ``llama-v3p1-8b-instruct`` are one
model) and by models.dev's ``base_model`` links. A group is one row; its other spellings are
aliases, so every spelling has the same facts. The row's facts come from the most trusted source
that lists the model, in this order: the CSV, the hand facts, models.dev's base model (the maker's
facts), the maker's own API (models.dev or LiteLLM first-party rows), then other hosts (resellers:
their most common figures, the smaller on a tie). A host's own smaller limits do not change the
row: they are kept apart, as its listing (below). Every bare name (dates and ``-latest``
stripped) that is not a row is an alias of its newest row, the maker's where there is one. Each
row records which providers list it (``hosts``).

Then :func:`apply_fixes` corrects the known errors of the sources (each fixed row says so in
``note`` and has source ``checked``): OpenAI's gpt-5 input cap versus window, Claude's 1M
windows that need a beta header, the deepseek-chat alias that now serves V4, and output caps
larger than the window.

Last, :func:`~model_listings.build_listings` keeps each provider's listing of a row where it is
smaller than the row (``listings``: what ``github_copilot/claude-sonnet-4`` gets), and the
header counts the provider-qualified ids the table resolves (every models.dev provider row as
``provider/id`` and every LiteLLM key the table was built from), resolved as the lookup does.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

try:
    from session_migrator.models._names import QUANTIZED, normalize_model_name, spelling_key
    from session_migrator.models._table import load_table
    from session_migrator.models._tokenizers import infer_tokenizer
except ImportError:  # pragma: no cover - a clear message instead of a traceback
    sys.exit("build_model_table: install the project first (make install), then run again")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_facts import OPEN_WEIGHTS, RETIRED, ollama_aliases
from model_fixes import apply_fixes
from model_listings import Listing, build_listings, listing_problems, qualified_id
from model_owners import FIRST_PARTY, owner_of
from model_sources import (
    CHECKED_AS_OF,
    CSV_FILE,
    LITELLM_AS_OF,
    LITELLM_FILE,
    MODELS_DEV,
    MODELS_DEV_AS_OF,
    RANK_HAND,
    RANK_HOST,
    RANK_MAKER,
    Row,
    read_csv,
    read_litellm,
    read_models_dev_bases,
    read_models_dev_providers,
)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO / ".." / "shared" / "data"
DEFAULT_OUT = REPO / "shared" / "session_migrator" / "_data" / "models.json"
MIN_MODELS = 1_500
MIN_PROVIDERS = 100


def hand_rows() -> list[Row]:
    """The retired models and the open-weight models of ``model_facts``."""
    rows = []
    for name, provider, window, output, ref in (*RETIRED, *OPEN_WEIGHTS):
        rows.append(
            Row(name, provider, window, output, RANK_HAND, "checked", CHECKED_AS_OF, f"hand: {ref}")
        )
    return rows


def _best(group: list[Row]) -> Row:
    """The facts of a group: best rank, then preferred, then the most common figures, then the
    smaller (an overstated window is the worse error)."""
    best_rank = min(r.rank for r in group)
    top = [r for r in group if r.rank == best_rank]
    votes = Counter((r.max_input_tokens, r.context_window, r.max_output_tokens) for r in top)
    return min(
        top,
        key=lambda r: (
            not r.preferred,
            -votes[(r.max_input_tokens, r.context_window, r.max_output_tokens)],
            r.context_window or r.max_input_tokens,
            r.max_input_tokens,
            r.max_output_tokens or 0,
            r.ref,
        ),
    )


def _name_of(group: list[Row]) -> str:
    """A group's row name: the most trusted source's spelling, the most common, the shortest."""
    best_rank = min(r.rank for r in group)
    names = Counter(r.id for r in group if r.rank == best_rank)
    name = min(names, key=lambda n: (-names[n], len(n), n))
    bare = QUANTIZED.sub("", name)  # llama-4-scout-17b-16e-instruct, not its -fp8 listing
    return bare if bare != name and any(r.id == bare for r in group) else name


class _Groups:
    """Union-find over model ids."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _names(model_id: str) -> set[str]:
    return {model_id, normalize_model_name(model_id), spelling_key(model_id)}


def group_rows(
    candidates: Iterable[Row],
) -> tuple[dict[str, Row], dict[str, str], dict[str, set[str]]]:
    """One row per model (see the module doc), the aliases of its other spellings, its hosts."""
    by_id: dict[str, list[Row]] = defaultdict(list)
    groups = _Groups()
    candidates = list(candidates)
    for spelling, model in ollama_aliases().items():  # Ollama's names are links, as base_model
        groups.union(f"key:{spelling_key(spelling)}", model)
    known = {n for r in candidates if r.rank <= RANK_MAKER for n in _names(r.id)}
    for row in candidates:
        by_id[row.id].append(row)
        groups.union(row.id, f"key:{spelling_key(row.id)}")
        own = _names(row.id)
        # a host's link to another base (neon's claude-sonnet-4 -> claude-sonnet-4-5) is not
        # followed where the host's name is a maker's name of its own
        if row.base and (not own & known or own & _names(row.base)):
            groups.union(row.id, row.base)
    members: dict[str, list[str]] = defaultdict(list)
    for model_id in by_id:
        members[groups.find(model_id)].append(model_id)
    rows: dict[str, Row] = {}
    aliases: dict[str, str] = {}
    hosts: dict[str, set[str]] = {}
    for ids in members.values():
        group = [r for i in ids for r in by_id[i]]
        name = _name_of(group)
        rows[name] = replace(_best(group), id=name)
        hosts[name] = {r.host for r in group if r.host}
        for model_id in ids:
            if model_id != name:
                aliases[model_id] = name
        key = spelling_key(name)
        if key != name and key not in by_id:
            aliases.setdefault(key, name)
    return rows, aliases, hosts


def _newest(ids: Sequence[str], bare: str) -> str:
    """The row a bare name stands for: itself, its ``-latest`` row, else the newest dated one."""
    if bare in ids:
        return bare
    if f"{bare}-latest" in ids:
        return f"{bare}-latest"
    return max(ids)


def bare_aliases(rows: dict[str, Row], aliases: dict[str, str]) -> dict[str, str]:
    """Bare names (dates and ``-latest`` stripped) of rows that are not rows: aliases of their
    newest row, the maker's where there is one; a host's undated spelling of a maker's model
    becomes an alias of the maker's row too."""
    groups: dict[str, list[str]] = defaultdict(list)
    for model_id in sorted(rows):
        groups[normalize_model_name(model_id)].append(model_id)
    out = dict(aliases)
    by_key = {spelling_key(name): name for name in sorted(rows, reverse=True)}
    for bare, ids in groups.items():
        makers = [i for i in ids if rows[i].rank <= RANK_MAKER]
        target = _newest(makers or ids, bare)
        for model_id in ids:
            spelling = model_id in (bare, f"{bare}-latest")  # not a dated snapshot of its own
            if makers and spelling and model_id not in makers and rows[model_id].rank == RANK_HOST:
                out[model_id] = target
        if bare not in rows:  # one spelling key, one model: that row wins over the newest
            out.setdefault(bare, by_key.get(spelling_key(bare), target))
    return out


def settle(
    rows: dict[str, Row], aliases: dict[str, str], hosts: dict[str, set[str]]
) -> tuple[dict[str, Row], dict[str, str]]:
    """Drop rows that became aliases (their hosts go to the target), resolve alias chains."""
    for name, spelling in ollama_aliases().items():
        target = aliases.get(spelling, spelling)
        if target in rows and name != target:
            aliases[name] = target
    final = {k: v for k, v in rows.items() if k not in aliases}

    def resolve(name: str) -> str:
        seen = set()
        while name in aliases and name not in seen:
            seen.add(name)
            name = aliases[name]
        return name

    settled = {}
    for alias in aliases:
        target = resolve(alias)
        if target in final and alias != target:
            settled[alias] = target
            hosts.setdefault(target, set()).update(hosts.get(alias, set()))
    return final, settled


# -- output --------------------------------------------------------------------------------------


def render(
    rows: dict[str, Row],
    aliases: dict[str, str],
    hosts: dict[str, set[str]],
    listings: dict[str, dict[str, Listing]],
    provider_ids: int = 0,
) -> str:
    """The JSON text: a header, then one line per model and per alias, sorted."""
    makers = {r.provider for r in rows.values()}
    listed = {h for name in rows for h in hosts.get(name, ())}
    header = {
        "format": 3,
        "generated_by": "scripts/build_model_table.py",
        "sources": {
            f"models.dev@{MODELS_DEV_AS_OF}": "anomalyco/models.dev at f3fc692 (MIT): base "
            "models and every provider's rows",
            f"litellm@{LITELLM_AS_OF}": f"BerriAI/litellm {LITELLM_FILE} (MIT)",
            "checked": f"{CSV_FILE} (LiteLLM cross-checked with models.dev and LangChain "
            "profiles, MIT), model_facts.py (retired models, open-weight models per their "
            "makers' model cards) and the fixes named in each row's note",
        },
        "counts": {
            "models": len(rows),
            "aliases": len(aliases),
            "makers": len(makers),
            "providers": len(makers | listed),
            "listings": sum(len(hosts.get(name, ())) for name in rows),
            "provider_ids": provider_ids,
            "smaller_listings": sum(len(v) for v in listings.values()),
        },
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
        if hosts.get(model_id):
            record["hosts"] = sorted(hosts[model_id])
        if listings.get(model_id):
            record["listings"] = {p: list(v) for p, v in sorted(listings[model_id].items())}
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


def validate(
    rows: dict[str, Row],
    aliases: dict[str, str],
    hosts: dict[str, set[str]],
    listings: dict[str, dict[str, Listing]],
) -> None:
    """The table's contract; a violation stops the build."""
    problems = listing_problems(rows, listings)
    for model_id, r in rows.items():
        if not 0 < r.max_input_tokens <= r.context_window:
            problems.append(f"{model_id}: needs 0 < max_input_tokens <= context_window")
        if r.max_output_tokens is not None and not 0 < r.max_output_tokens <= r.context_window:
            problems.append(f"{model_id}: needs 0 < max_output_tokens <= context_window")
    problems += [f"alias {a} -> {t}: no such row" for a, t in aliases.items() if t not in rows]
    problems += [f"{a}: both a row and an alias" for a in aliases if a in rows]
    if len(rows) < MIN_MODELS:
        problems.append(f"only {len(rows)} models (want >= {MIN_MODELS})")
    providers = {r.provider for r in rows.values()} | {h for v in hosts.values() for h in v}
    if len(providers) < MIN_PROVIDERS:
        problems.append(f"fewer than {MIN_PROVIDERS} providers")
    if problems:
        raise SystemExit("build_model_table: " + "\n  ".join(problems))


def build(data_dir: Path) -> str:
    """The table's JSON text from the files in ``data_dir``."""
    for name in (LITELLM_FILE, CSV_FILE, MODELS_DEV):
        if not (data_dir / name).exists():
            raise SystemExit(f"build_model_table: {data_dir / name} not found; pass DATA_DIR")
    bases = read_models_dev_bases(data_dir / MODELS_DEV)
    listed = [
        *read_models_dev_providers(data_dir / MODELS_DEV, bases, owner_of),
        *read_litellm(data_dir / LITELLM_FILE, owner_of, FIRST_PARTY),
    ]
    candidates = [*read_csv(data_dir / CSV_FILE), *hand_rows(), *bases.values(), *listed]
    rows, aliases, hosts = group_rows(candidates)
    rows, aliases = settle(rows, bare_aliases(rows, aliases), hosts)
    rows = apply_fixes(rows)
    listings = build_listings(rows, aliases, listed)
    validate(rows, aliases, hosts, listings)
    found = load_table(json.loads(render(rows, aliases, hosts, listings)))
    ids = {qualified_id(r).lower() for r in listed}
    unresolved = sorted(i for i in ids if found.find(i) is None)
    if unresolved:
        raise SystemExit(f"build_model_table: {len(unresolved)} ids do not resolve: {unresolved}")
    return render(rows, aliases, hosts, listings, provider_ids=len(ids))


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
        f"{counts['providers']} providers, {counts['provider_ids']} provider model ids, "
        f"{counts['smaller_listings']} listings with smaller caps"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
