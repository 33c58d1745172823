"""The layering the design promises, read from the source (ast), not from a running import.

- ``egtb`` never imports ``tournament``;
- no import cycle between our modules (imports inside functions count too:
  a lazy import that closes a cycle is still a cycle in the design);
- every import is on the allow-list of layers in docs/architecture.md (the rules core
  imports nothing from the tables or the prober, the builder reads tables through the
  prober, the prober never builds, the tournament never builds).
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


#: The allow-list: docs/architecture.md's table of layers, "layer | may import".
ARCHITECTURE = ROOT / "docs" / "architecture.md"
#: Modules that import nothing of ours, whatever their layer.
LEAVES = ("egtb.errors", "egtb.exit_status")


def allowed_imports() -> dict[str, set[str]]:
    """Layer -> the layers it may import, from the documented table (each imports itself; one that
    names itself also imports the layers under it, as `tournament` its engines)."""
    text = ARCHITECTURE.read_text().split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip().strip("|").split("|") for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| layer")]
    return {layer.strip(): {name.strip() for name in targets.split(",")} for layer, targets in rows}


def may_import(layer: str, target: str, allowed: dict[str, set[str]]) -> bool:
    """Whether a module of `layer` may import the module `target`."""
    under = layer_of(target, allowed)
    return under == layer or under in allowed[layer] or (
        layer in allowed[layer] and target.startswith(layer + "."))


def layer_of(module: str, layers) -> str | None:
    """The longest layer name that is `module` or a package above it."""
    found = [layer for layer in layers if module == layer or module.startswith(layer + ".")]
    return max(found, key=len) if found else None


def test_the_documented_table_is_read():
    allowed = allowed_imports()
    assert "egtb.probe" in allowed["egtb.builder"] and "egtb.builder" not in allowed["egtb.probe"]
    assert layer_of("egtb.builder.native", allowed) == "egtb.builder"
    assert layer_of("tournament.engines.search", allowed) == "tournament.engines"
    assert layer_of("tournament.schedule", allowed) == "tournament"
    assert may_import("tournament", "tournament.engines.base", allowed)
    assert not may_import("tournament", "egtb.builder.driver", allowed)
    assert not may_import("tournament.engines", "tournament.schedule", allowed)


def test_every_import_is_on_the_documented_allow_list():
    allowed = allowed_imports()
    offenders = []
    for module, targets in sorted(import_graph().items()):
        layer = layer_of(module, allowed)
        assert layer is not None, f"{module} is in no layer of {ARCHITECTURE.name}"
        for target in sorted(targets):
            if target in LEAVES and module not in LEAVES:
                continue
            if module in LEAVES or not may_import(layer, target, allowed):
                offenders.append(f"{module} ({layer}) imports {target} ({layer_of(target, allowed)})")
    assert offenders == []


@pytest.mark.parametrize("layer, forbidden", [
    # within a layer the allow-list has nothing to say: these keep the builder's and the
    # tournament's own parts in order
    ("egtb.builder.plan", ("egtb.builder.pipeline", "egtb.builder.driver", "egtb.executor")),
    ("egtb.builder.pipeline", ("egtb.builder.driver", "egtb.builder.split", "egtb.executor")),
    ("tournament.schedule", ("egtb.dask",)),
])
def test_parts_of_a_layer_import_only_downwards(layer, forbidden):
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


