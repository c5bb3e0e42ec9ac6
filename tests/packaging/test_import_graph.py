"""No import cycles among the three packages' modules, lazy imports inside functions included.

Every module is parsed with ``ast``; an edge is any ``import`` or ``from ... import`` that runs
(at module level or inside a function), not one under ``if TYPE_CHECKING:``. A cycle, even one
kept apart by an import inside a function, means two layers that cannot be read or changed apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import that runs, at any depth, skipping ``if TYPE_CHECKING:`` bodies."""
    out: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            out.append(node)
        if isinstance(node, ast.If) and _type_checking_only(node):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


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
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import _b\n", False),
        ("from ._b import x\n", True),
    ],
)
def test_the_check_sees_lazy_imports_and_skips_type_checking_ones(
    tmp_path: Path, source: str, expected: bool
) -> None:
    a, b = tmp_path / "_a.py", tmp_path / "_b.py"
    a.write_text(source)
    b.write_text("def g():\n    import session_migrator._a\n")
    known = {"session_migrator._a": a, "session_migrator._b": b}
    assert bool(cycles(edges(known))) is expected
