"""Speed, memory and what was kept: this project against the frameworks' built-ins.

For conversations of 100, 1,000, 5,000 and 20,000 messages (see :mod:`benchmarks._conversation`)
and one token budget (a quarter of the session's o200k tokens, exact, nothing reserved), every
cell of :data:`benchmarks._cells.CELLS` runs in a forked child under a time cap; the figures are
medians of the repetitions. The floors of tracker issue 7 are checked on the results.

    python -m benchmarks.speed [--quick] [--sizes 100,1000] [--cap 60] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from benchmarks._capped import run_capped
from benchmarks._cells import CELLS
from benchmarks._conversation import conversation, next_messages, text_bytes
from benchmarks._harness import APPENDS, Cell, Context
from session_migrator.counting._tokens import TiktokenCounter

__all__ = ["FLOOR_SIZE", "MEMORY_SIZE", "floors", "markdown", "run"]

SIZES = (100, 1_000, 5_000, 20_000)
QUICK_SIZES = (100, 1_000)
#: Repetitions per size (a cell stops early once it has used a third of its cap).
RUNS = {100: 5, 1_000: 5, 5_000: 5, 20_000: 3}
QUICK_RUNS = {100: 3, 1_000: 2}
#: Seconds a built-in's cell may take in all (the quadratic ChatMemoryBuffer runs out at 5,000
#: messages); this project's cells get OURS_CAP, a guard that is not expected to bite.
CAP = 30.0
QUICK_CAP = 20.0
OURS_CAP = 600.0
FLOOR_SIZE = 5_000
MEMORY_SIZE = 20_000
#: The rows the adapter floors are checked on: the default strategy, then ``trim``.
ADAPTER_ROWS = (
    ("lc-auto", "LangChain history, auto (default)"),
    ("li-auto", "LlamaIndex memory, auto (default)"),
    ("lc-trim", "LangChain history, trim"),
    ("li-trim", "LlamaIndex memory, trim"),
)
#: The re-fit after one new message may cost this many times its yardstick (tokenizing the new
#: message plus one pass over the kept messages' cached counts) ...
REFIT_LIMIT = 3.0
#: ... look up at most this many per-message counts besides one per kept message ...
LOOKUP_SLACK = 16
#: ... and tokenize, besides the new message, at most this many tokens (the note on what was
#: left out, whose message count changes).
NOTE_TOKENS = 64
#: The adapters' memory runs (the record kinds of :data:`benchmarks._ours.STORES`), by the
#: store they used.
MEMORY_LABELS = {
    "memory_default": "default store (SQLite file)",
    "memory": "memory:// store",
}
#: The reference row for the ratios: the LangChain adapter's default read path.
REFERENCE = "lc-auto"


def _context(size: int, runs: int, cap: float, memory: bool) -> Context:
    from langchain_session_migrator import messages_from_core
    from llamaindex_session_migrator import to_chat_messages

    messages = conversation(size)
    new = next_messages(messages, APPENDS + 1)
    tokens = TiktokenCounter("o200k_base").count_messages(messages)
    return Context(
        size=size,
        messages=messages,
        new=new,
        budget=tokens // 4,
        tokens=tokens,
        text_bytes=text_bytes(messages),
        runs=runs,
        cap=cap,
        memory=memory,
        lc=messages_from_core(messages),
        lc_new=messages_from_core(new),
        li=to_chat_messages(messages),
        li_new=to_chat_messages(new),
    )


def _summarise(cell: Cell, ctx: Context) -> dict[str, Any]:
    capped = run_capped(lambda: cell.work(ctx), ctx.cap)
    runs = [r["samples"] for r in capped.records if r["kind"] == "run"]
    out: dict[str, Any] = {
        "runs": len(runs),
        "seconds": round(capped.seconds, 2),
        "median_s": {
            phase: statistics.median(s for r in runs for s in r[phase]) for phase in runs[0]
        }
        if runs
        else {},
        "samples_s": {phase: [s for r in runs for s in r[phase]] for phase in runs[0]}
        if runs
        else {},
        "over_cap_s": ctx.cap if capped.timed_out and not runs else None,
        "error": capped.error,
    }
    for record in capped.records:
        if record["kind"] != "run":
            out[record["kind"]] = {k: v for k, v in record.items() if k != "kind"}
    return out


def run(
    quick: bool = False,
    sizes: Sequence[int] | None = None,
    cap: float | None = None,
    only: Sequence[str] | None = None,
    memory: bool = True,
) -> dict[str, Any]:
    """Every cell at every size: ``{"sizes": [...], "cells": [...], "results": {...}}``.

    A built-in that ran out of its cap at one size is not run at the larger ones (it is reported
    over the cap there too, with ``"skipped": true``).
    """
    sizes = sorted(sizes or (QUICK_SIZES if quick else SIZES))
    cap = cap if cap is not None else (QUICK_CAP if quick else CAP)
    runs_for = QUICK_RUNS if quick else RUNS
    cells = [c for c in CELLS if only is None or c.key in only]
    results: dict[str, dict[str, Any]] = {c.key: {} for c in cells}
    conversations: dict[str, Any] = {}
    for size in sizes:
        started = time.perf_counter()
        ctx = _context(size, runs_for.get(size, 3), cap, memory)
        conversations[str(size)] = {
            "messages": size,
            "tokens": ctx.tokens,
            "budget": ctx.budget,
            "text_bytes": ctx.text_bytes,
            "tool_messages": sum(m.role == "tool" for m in ctx.messages),
            "append_roles": [m.role for m in ctx.new[:APPENDS]],
        }
        for cell in cells:
            earlier = [results[cell.key][str(s)] for s in sizes if s < size]
            over = [e["over_cap_s"] for e in earlier if e.get("over_cap_s") is not None]
            if over:
                results[cell.key][str(size)] = {
                    "runs": 0,
                    "seconds": 0.0,
                    "median_s": {},
                    "samples_s": {},
                    "over_cap_s": over[0],  # the cap this cell ran out of
                    "skipped": True,
                    "error": None,
                }
            else:
                ctx.cap = OURS_CAP if cell.ours else cap
                results[cell.key][str(size)] = _summarise(cell, ctx)
            print(
                f"  {size:>6,} messages  {cell.key:<18} {_brief(results[cell.key][str(size)])}",
                file=sys.stderr,
                flush=True,
            )
        print(
            f"  {size:,} messages done in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    return {
        "sizes": sizes,
        "cap_s": cap,
        "conversations": conversations,
        "cells": [
            {
                "key": c.key,
                "method": c.method,
                "strategy": c.strategy,
                "phases": list(c.phases),
                "ours": c.ours,
            }
            for c in cells
        ],
        "results": results,
    }


def _brief(cell: dict[str, Any]) -> str:
    if cell.get("error"):
        return "ERROR " + str(cell["error"]).strip().splitlines()[-1]
    if cell["over_cap_s"] is not None:
        return f"over {cell['over_cap_s']:g} s"
    return "  ".join(f"{p} {_ms(s)}" for p, s in cell["median_s"].items())


def _mb(size: int | None) -> str:
    return "-" if size is None else f"{size / 1e6:.1f} MB"


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    ms = seconds * 1000
    if ms >= 10_000:
        return f"{seconds:,.1f} s"
    if ms >= 100:
        return f"{ms:,.0f} ms"
    if ms >= 1:
        return f"{ms:.1f} ms"
    return f"{ms * 1000:.0f} µs"


# -- the floors --------------------------------------------------------------------------------


def _t(result: dict[str, Any], key: str, size: int, phase: str) -> float | None:
    cell = result["results"].get(key, {}).get(str(size))
    if not cell:
        return None
    value = cell["median_s"].get(phase)
    return float(value) if value is not None else None


def floors(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The floors of issue 7, each with its measured ratio and whether it holds.

    A floor that could not be measured (its size not run, a cell over its cap) is reported with
    ``holds=None``.
    """
    out: list[dict[str, Any]] = []
    sizes = result["sizes"]
    # the floors are stated at 5,000 and 20,000 messages; a shorter run checks its largest size
    n = FLOOR_SIZE if FLOOR_SIZE in sizes else max(sizes)
    m = MEMORY_SIZE if MEMORY_SIZE in sizes else max(sizes)

    def add(
        name: str,
        row: str,
        value: float | None,
        limit: float,
        above: bool,
        text: str,
        also: bool = True,
    ) -> None:
        """``also``: a condition besides the ratio (false: the floor does not hold)."""
        holds = None if value is None else (value >= limit if above else value <= limit) and also
        out.append(
            {
                "floor": name,
                "row": row,
                "value": value,
                "limit": limit,
                "at_least": above,
                "holds": holds,
                "size": m if name.startswith("memory") else n,
                "text": text,
            }
        )

    raw = _t(result, "raw", n, "cold")
    trim_tk = _t(result, "lc-trim-tiktoken", n, "cold")
    for key, label in ADAPTER_ROWS:
        warm = _t(result, key, n, "warm")
        add(
            "warm read >= 1,000x faster than trim_messages (tiktoken)",
            label,
            trim_tk / warm if warm and trim_tk else None,
            1000.0,
            True,
            f"{n:,} messages: trim_messages(tiktoken) / warm read",
        )
        add(
            "warm read < 1% of one raw tiktoken pass",
            label,
            warm / raw if warm and raw else None,
            0.01,
            False,
            f"{n:,} messages: warm read / raw pass",
        )
    for key, label in (
        ("migrate-auto", "migrate(), auto (default)"),
        ("migrate-trim", "migrate(), trim"),
    ):
        cell = result["results"].get(key, {}).get(str(n), {})
        colds = cell.get("samples_s", {}).get("cold") or []
        passes = cell.get("samples_s", {}).get("yardstick") or []
        ratios = [a / b for a, b in zip(colds, passes, strict=False) if b > 0]
        add(
            "cold migrate() within 1.2x one raw tiktoken pass",
            label,
            statistics.median(ratios) if ratios else None,
            1.2,
            False,
            f"{n:,} messages: each cold migrate() / one raw pass timed right after it in the "
            "same process (median of the ratios; the raw-pass row of the table: "
            f"{_ms(raw)})",
        )
    for key, label in ADAPTER_ROWS:
        cell = result["results"].get(key, {}).get(str(n), {})
        probe = cell.get("probe")
        refits = cell.get("samples_s", {}).get("refit")
        yardsticks = cell.get("samples_s", {}).get("yardstick")
        name = "re-fit after one new message ~ its tokenization + one pass over kept counts"
        measured = probe is not None and bool(refits) and bool(yardsticks)
        if not measured:
            add(name + ": work", label, None, LOOKUP_SLACK, False, "not measured")
        else:
            # the work, exactly: nothing tokenized but the new message (and the library's
            # one-line note), one count looked up per kept message (plus a few)
            only_new = probe["tokenized_tokens"] <= probe["new_message_tokens"] + NOTE_TOKENS
            extra = max(0, probe["lookups"] - probe["kept"])
            add(
                name + ": work",
                label,
                extra,
                LOOKUP_SLACK,
                False,
                f"{n:,} messages, after one more append: tokenized "
                f"{probe['tokenized_tokens']:,} tokens in {probe['tokenized_texts']} text(s) (the "
                f"new message has {probe['new_message_tokens']:,}); looked up "
                f"{probe['lookups']:,} per-message counts for {probe['kept']:,} kept of "
                f"{probe['messages']:,} messages (measured: look-ups beyond one per kept message)",
                also=only_new,
            )
        # the time: each timed re-fit against its yardstick, timed right after it; apart for
        # the new user messages (a new question: recall ranks the cut turns again) and the
        # others; both rows always, "not measured" when there is nothing to measure
        roles = result["conversations"].get(str(n), {}).get("append_roles") or []
        for which, label_suffix in (("user", "a user message"), ("other", "another message")):
            pairs = (
                [
                    (a, b)
                    for j, (a, b) in enumerate(zip(refits, yardsticks, strict=True))
                    if b > 0 and roles and (roles[j % len(roles)] == "user") == (which == "user")
                ]
                if measured
                else []
            )
            add(
                f"{name}: time, after {label_suffix}",
                label,
                statistics.median(a / b for a, b in pairs) if pairs else None,
                REFIT_LIMIT,
                False,
                f"{n:,} messages, after {label_suffix}: the core re-fit inside the read (median "
                f"{_ms(statistics.median(a for a, _ in pairs))}) / (tokenizing that message + "
                "one pass over the kept messages' cached counts: median "
                f"{_ms(statistics.median(b for _, b in pairs))}), the median of the ratios"
                if pairs
                else "not measured",
            )
    size = result["conversations"].get(str(m), {}).get("text_bytes")
    for which, store in MEMORY_LABELS.items():
        for key, label in ADAPTER_ROWS:
            memory = result["results"].get(key, {}).get(str(m), {}).get(which, {})
            peak = memory.get("peak_bytes")
            add(
                f"memory within 3x the conversation's text, {store}",
                label,
                peak / size if peak and size else None,
                3.0,
                False,
                f"{m:,} messages, {store}: (peak of the Python heap, "
                f"{_mb(memory.get('python_peak_bytes'))}, + peak of SQLite's heap, "
                f"{_mb(memory.get('sqlite_peak_bytes'))}; the store, the history, cold + warm + "
                "append reads) / UTF-8 bytes of the text",
            )
    return out


# -- the tables --------------------------------------------------------------------------------


def markdown(result: dict[str, Any]) -> str:
    """The speed table, the kept/memory table and the floors, in Markdown."""
    sizes = result["sizes"]
    conv = result["conversations"]
    lines = [
        "| conversation | " + " | ".join(f"{s:,} msgs" for s in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
        "| tokens (o200k) | " + " | ".join(f"{conv[str(s)]['tokens']:,}" for s in sizes) + " |",
        "| budget (a quarter) | " + " | ".join(f"{conv[str(s)]['budget']:,}" for s in sizes) + " |",
        "| text (UTF-8) | "
        + " | ".join(f"{conv[str(s)]['text_bytes'] / 1e6:.1f} MB" for s in sizes)
        + " |",
        "",
        f"Median time per call; in brackets the ratio to this project's default read path "
        f"(the LangChain history, `auto`) in the same phase (a built-in is stateless: every "
        f"call is a cold call). Cap: {result['cap_s']:g} s per cell.",
        "",
        "| method | strategy | phase | " + " | ".join(f"{s:,}" for s in sizes) + " |",
        "|---|---|---|" + "---:|" * len(sizes),
    ]
    for cell in result["cells"]:
        for phase in cell["phases"]:
            row = [cell["method"], cell["strategy"], phase]
            for s in sizes:
                row.append(_cell_text(result, cell["key"], s, phase))
            lines.append("| " + " | ".join(row) + " |")
    lines += [
        "",
        "Phases: *cold* is the first read (nothing cached: new message objects, the shared "
        "counters dropped, a new store); *warm* the same history read again with nothing new; "
        "*append* a read right after one new message; *refit* the core's re-fit inside that "
        "read (`SessionFitter.fit`), the rest of it being the adapter's hand-out. Each call is "
        "timed after a full garbage collection.",
        "",
        "¹ one repetition: the cap left no time for more. ² not run: over the cap at a smaller "
        "size already.",
        "",
        "What each kept (first call; tokens counted with o200k in the chat format, the budget is "
        "a quarter of the session), whether the result is over the budget or breaks a chat rule "
        "(an orphan tool result, a call without its result, not starting with a user message), "
        "and the peak memory: the Python heap's (`tracemalloc`) plus SQLite's own heap's "
        "(`sqlite3_memory_highwater`, where FTS5 tokenizes for recall; in brackets where there is "
        "any), for this project's adapters over the store, the history and the three reads.",
        "",
        "| method | strategy | "
        + " | ".join(f"{s:,}: kept msgs / tokens / peak" for s in sizes)
        + " |",
        "|---|---|" + "---:|" * len(sizes),
    ]
    for cell in result["cells"]:
        row = [cell["method"], cell["strategy"]]
        for s in sizes:
            row.append(_kept_text(result["results"][cell["key"]].get(str(s), {})))
        lines.append("| " + " | ".join(row) + " |")
    lines += [
        "",
        "This project's adapters by store: the peak above is with `memory://` (the store the "
        "timings use, which keeps frozen copies of the messages that share their text); with "
        "the default store, an embedded SQLite file, the messages are on disk and the history "
        "holds them as read back. Peak memory (Python heap + SQLite heap) and its ratio to the "
        "conversation's text.",
        "",
        "| method | strategy | store | " + " | ".join(f"{s:,}" for s in sizes) + " |",
        "|---|---|---|" + "---:|" * len(sizes),
    ]
    for cell in result["cells"]:
        if not cell["ours"] or not cell["key"].startswith(("lc-", "li-")):
            continue
        for which, store in reversed(MEMORY_LABELS.items()):
            row = [cell["method"], cell["strategy"], store]
            for s in sizes:
                memory = result["results"][cell["key"]].get(str(s), {}).get(which, {})
                peak = memory.get("peak_bytes")
                text = conv[str(s)]["text_bytes"]
                row.append(f"{_mb(peak)} (×{peak / text:.2f})" if peak else "-")
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def _cell_text(result: dict[str, Any], key: str, size: int, phase: str) -> str:
    cell = result["results"][key].get(str(size))
    if not cell:
        return "-"
    if cell.get("error"):
        return "error"
    if cell["over_cap_s"] is not None:
        return f"over {cell['over_cap_s']:g} s" + (" ²" if cell.get("skipped") else "")
    value = cell["median_s"].get(phase)
    ref = _t(result, REFERENCE, size, phase)
    text = _ms(value)
    if key != REFERENCE and value and ref:
        ratio = value / ref
        text += f" (×{ratio:,.0f})" if ratio >= 10 else f" (×{ratio:.2g})"
    if cell["runs"] == 1:
        text += " ¹"
    return text


def _kept_text(cell: dict[str, Any]) -> str:
    if not cell:
        return "-"
    kept = cell.get("kept")
    if kept is None:
        return "over cap" if cell.get("over_cap_s") is not None else "-"
    flags = []
    if kept["over_budget"]:
        flags.append("over budget")
    if kept["violations"]:
        flags.append(f"{kept['violations']} rule breaks")
    memory = cell.get("memory", {})
    peak = memory.get("peak_bytes")
    sqlite = memory.get("sqlite_peak_bytes") or 0
    text = f"{kept['messages']:,} / {kept['tokens']:,} / " + (
        f"{peak / 1e6:.1f} MB" if peak is not None else "-"
    )
    if sqlite >= 50_000:
        text += f" (SQLite {sqlite / 1e6:.1f})"
    return text + (f" ({', '.join(flags)})" if flags else "")


def floors_markdown(items: list[dict[str, Any]]) -> str:
    lines = [
        "| floor | row | messages | measured | limit | holds |",
        "|---|---|---:|---:|---:|---|",
    ]
    for f in items:
        value = f["value"]
        measured = "-" if value is None else _num(value)
        limit = ("≥ " if f["at_least"] else "≤ ") + _num(f["limit"])
        holds = {True: "PASS", False: "FAIL", None: "not measured"}[f["holds"]]
        lines.append(
            f"| {f['floor']} | {f['row']} | {f['size']:,} | {measured} | {limit} | {holds} |"
        )
    return "\n".join(lines)


def _num(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.4f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 messages, fewer runs")
    parser.add_argument("--sizes", help="comma-separated conversation sizes")
    parser.add_argument("--cap", type=float, help="seconds per cell")
    parser.add_argument("--only", help="comma-separated cell keys")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(
        quick=args.quick,
        sizes=[int(s) for s in args.sizes.split(",")] if args.sizes else None,
        cap=args.cap,
        only=args.only.split(",") if args.only else None,
    )
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(markdown(result))
    print()
    print(floors_markdown(floors(result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
