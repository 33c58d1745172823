"""The layering the design promises, read from the source (ast), not from a running import.

- ``egtb`` never imports ``tournament``;
- no import cycle between our modules (imports inside functions count too:
  a lazy import that closes a cycle is still a cycle in the design);
- the layers of DESIGN.md: the rules core imports nothing from the tables or
  the prober, the tables never import the prober or the command line.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("egtb", "tournament")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """Our modules that `path` imports (``from a.b import c`` counts a.b.c when it is a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in known)
    return found - {module_name(path)}


@cache  # parsed once per test process: every layer check reads the same graph (and never alters it)
def import_graph() -> dict[str, set[str]]:
    table = modules()
    known = set(table)
    # a package's __init__ is imported with any of its modules; count only explicit edges
    return {name: imports_of(path, known) for name, path in table.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_graph_is_read():
    graph = import_graph()
    assert "egtb.rules.board" in graph["egtb.rules.pdn"]
    assert "egtb.probe.tablebase" in graph["tournament.engines.perfect"]


def test_find_cycle_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles():
    assert find_cycle(import_graph()) is None


@pytest.mark.parametrize("layer, forbidden", [
    ("egtb", ("tournament",)),
    ("egtb.rules", ("egtb.positions", "egtb.formats", "egtb.builder", "egtb.probe", "egtb.dask",
                    "egtb.cli")),
    ("egtb.positions", ("egtb.formats", "egtb.builder", "egtb.probe", "egtb.dask", "egtb.cli")),
    # the builder reads finished tables through the prober (a compact-native dependency's capture
    # positions; the compact verifier's successors), as Syzygy's generator reads its sub-tables
    # through its prober
    ("egtb.builder", ("egtb.cli",)),
    ("egtb.builder", ("egtb.dask",)),  # a build runs on any executor; the command line picks Dask
    ("egtb.builder.plan", ("egtb.builder.pipeline", "egtb.builder.driver", "egtb.executor")),
    ("egtb.builder.pipeline", ("egtb.builder.driver", "egtb.builder.split", "egtb.executor")),
    ("egtb.executor", ("egtb.rules", "egtb.positions", "egtb.formats", "egtb.builder", "egtb.probe",
                       "egtb.dask", "egtb.cli")),  # the interface knows no build nor game
    ("tournament.schedule", ("egtb.dask",)),
    ("egtb.probe", ("egtb.builder", "egtb.dask", "egtb.cli")),
    ("egtb.formats", ("egtb.builder", "egtb.probe", "egtb.cli")),
    ("tournament.engines", ("tournament.schedule", "tournament.cli", "tournament.records")),
    ("tournament", ("egtb.builder",)),  # the tournament reads tables, it never builds them
    ("tournament", ("egtb.cli",)),  # each command line stands alone: exit codes from egtb.exit_status,
                                    # probe answers' JSON form from egtb.probe.results
])
def test_layers_import_only_downwards(layer, forbidden):
    offenders = [f"{module} imports {target}"
                 for module, targets in import_graph().items() if module == layer or module.startswith(layer + ".")
                 for target in targets if any(target == f or target.startswith(f + ".") for f in forbidden)]
    assert offenders == []


def test_every_error_class_of_egtb_lives_in_its_error_module():
    """One exception family, one home: egtb/errors.py (the modules import what they raise)."""
    homes = [f"{name}: class {node.name}" for name, path in modules().items()
             if name.startswith("egtb.") and name != "egtb.errors"
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.ClassDef) and node.name.endswith("Error")]
    assert homes == []


