"""The core's layers, and no import cycles among the three packages' modules.

Every module is parsed with ``ast``; an edge is any ``import`` or ``from ... import``, at module
level, inside a function or under ``if TYPE_CHECKING:`` (a lower layer that names an upper
layer's class for its annotations still depends on it). A cycle, even one kept apart by an
import inside a function, means two modules that cannot be read or changed apart; an import from
a higher layer (see :data:`LAYERS` and ``docs/design.md``) means a layer that is not one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The core's layers, lowest first: a module imports only modules of its own layer and lower.
#: A module at the core's root is in the layer its name maps to, else in ``surfaces``.
LAYERS = (
    "base",  # the errors, configuration, redaction, the deadline, the digest memo, the version
    "messages",
    "models",
    "counting",
    "summaries",
    "fitting",
    "recall",
    "migration",
    "store",
    "sessions",
    "context_tools",
    "importers",
    "mcp",
    "surfaces",  # the public API (the package), the CLI, the demo, the MCP server, the HTTP API
    # (server/), the adapters
)
#: The core's folders whose layer has another name.
FOLDERS = {"cli": "surfaces", "server": "surfaces"}
BASE = {"_errors", "_config", "_redact", "_deadline", "_digest_memo", "_version"}
PACKAGES = {
    "session_migrator": ROOT / "shared" / "session_migrator",
    "langchain_session_migrator": ROOT / "langchain_session_migrator",
    "llamaindex_session_migrator": ROOT / "llamaindex_session_migrator",
}


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import, at any depth (``if TYPE_CHECKING:`` bodies included)."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


def _known(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def edges(known: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(t for a in node.names if (t := _known(a.name, known)))
                continue
            base = node.module or ""
            if node.level:
                parts = module.split(".") if is_package else module.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                target = _known(f"{base}.{alias.name}", known) or _known(base, known)
                if target:
                    targets.add(target)
        targets.discard(module)
        graph[module] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> str:
    """The layer of ``module`` (see :data:`LAYERS`)."""
    parts = module.split(".")
    if parts[0] != "session_migrator" or len(parts) == 1:
        return "surfaces"
    if parts[1] in BASE:
        return "base"
    folder = FOLDERS.get(parts[1], parts[1])
    return folder if folder in LAYERS else "surfaces"


def upward(graph: dict[str, set[str]]) -> list[str]:
    """The imports of a module from a higher layer than its own."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    return sorted(
        f"{m} ({layer(m)}) imports {t} ({layer(t)})"
        for m, targets in graph.items()
        for t in targets
        if rank[layer(t)] > rank[layer(m)]
    )


def test_every_core_module_is_in_a_layer_and_the_root_holds_a_dozen() -> None:
    root = [p for p in PACKAGES["session_migrator"].glob("*.py") if p.stem != "__init__"]
    assert len(root) <= 12, sorted(p.stem for p in root)
    folders = {p.parent.name for p in PACKAGES["session_migrator"].rglob("*.py")}
    assert {FOLDERS.get(f, f) for f in folders - {"session_migrator"}} <= set(LAYERS), folders
    for package in folders - {"session_migrator"}:
        init = PACKAGES["session_migrator"] / package / "__init__.py"
        assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), init


def test_no_layer_imports_a_higher_one() -> None:
    found = upward(edges(modules()))
    assert not found, "imports from a higher layer:\n" + "\n".join(found)


def test_no_import_cycles_even_through_imports_inside_functions() -> None:
    found = cycles(edges(modules()))
    assert not found, (
        "import cycles (break them by moving the shared part to a lower module):\n"
        + ("\n".join(" <-> ".join(c) for c in found))
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f():\n    from session_migrator import _b\n", True),  # a lazy import counts
        # an annotation's import counts too
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import _b\n", True),
        ("from ._b import x\n", True),
    ],
)
def test_the_check_sees_lazy_and_type_checking_imports(
    tmp_path: Path, source: str, expected: bool
) -> None:
    a, b = tmp_path / "_a.py", tmp_path / "_b.py"
    a.write_text(source)
    b.write_text("def g():\n    import session_migrator._a\n")
    known = {"session_migrator._a": a, "session_migrator._b": b}
    assert bool(cycles(edges(known))) is expected


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    low, high = tmp_path / "_low.py", tmp_path / "_high.py"
    low.write_text("def f():\n    from session_migrator.migration import _high\n")
    high.write_text("")
    known = {"session_migrator.messages._low": low, "session_migrator.migration._high": high}
    assert upward(edges(known)) == [
        "session_migrator.messages._low (messages) imports "
        "session_migrator.migration._high (migration)"
    ]
