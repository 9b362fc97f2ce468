"""The package's module graph: no import cycle among toolsift's modules (imports inside
functions and under ``TYPE_CHECKING`` count: they hide a cycle, they do not remove it), and no
private name (``_name``) imported or read across modules."""

from __future__ import annotations

import ast
from pathlib import Path

import toolsift

PACKAGE = Path(toolsift.__file__).resolve().parent


def _modules() -> dict[str, ast.Module]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in sorted([*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.pyi")]):  # _core.pyi: the extension
        parts = ("toolsift", *path.relative_to(PACKAGE).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return found


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` names, resolved against ``module``."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    package = package[: len(package) - node.level + 1]
    return ".".join([*package, *([node.module] if node.module else [])])


def _imports(name: str, tree: ast.Module, known: set[str]) -> list[tuple[str, str | None, int]]:
    """``(module, imported name or None, line)`` of every import of a toolsift module in ``tree``."""
    is_package = any(m.startswith(name + ".") for m in known) or name == "toolsift"
    out: list[tuple[str, str | None, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names if a.name.split(".")[0] == "toolsift"]
        elif isinstance(node, ast.ImportFrom):
            base = _base(name, is_package, node)
            if base.split(".")[0] != "toolsift":
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.append((sub, None, node.lineno) if sub in known else (base, a.name, node.lineno))
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: {m for m, _, _ in _imports(name, tree, known) if m in known} for name, tree in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _private(name: str | None) -> bool:
    return bool(name) and name.startswith("_") and not name.startswith("__")  # type: ignore[union-attr]


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_toolsift_modules() -> None:
    graph = _graph()
    assert "toolsift.index" in graph and "toolsift.results" in graph["toolsift.index"]  # the graph is real
    assert _cycles(graph) == []


def test_no_private_name_is_imported_or_read_across_modules() -> None:
    modules = _modules()
    known = set(modules)
    offenders = []
    for name, tree in modules.items():
        bound: dict[str, str] = {}  # local name -> toolsift module it is bound to
        for module, imported, line in _imports(name, tree, known):
            if _private(imported):
                offenders.append(f"{name}:{line} imports {imported} from {module}")
            if imported is None:
                bound[module.rsplit(".", 1)[-1]] = module
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and _private(node.attr)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
            ):
                offenders.append(f"{name}:{node.lineno} reads {node.value.id}.{node.attr}")
    assert offenders == []


def test_the_private_name_check_sees_an_import_of_one() -> None:
    tree = ast.parse("from .index import _caller\nfrom . import checks\n")
    found = _imports("toolsift.tiers", tree, {"toolsift.index", "toolsift.checks", "toolsift.tiers"})
    assert ("toolsift.index", "_caller", 1) in found and ("toolsift.checks", None, 2) in found
