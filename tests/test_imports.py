"""The import graph: no circles in ``xlt/`` or ``benchmarks/``, and each layer of ``xlt/`` imports only from the layers
below it (docs/design.md draws them).  Imports inside functions count: a circle hidden in a function is still one.
The registries (``xlt.registry``) find methods, stages, tasks and datasets by importing their packages by name at the
first look-up, which is how ``xlt.config`` reads their options without importing them."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Bottom to top; a module belongs to the longest prefix named here.  A module may import its own layer and below.
LAYERS: list[list[str]] = [
    ["xlt.errors", "xlt.settings", "xlt.fidelity", "xlt.registry", "xlt.synthetic",
     "xlt.serve.words", "xlt.serve.decode", "xlt.serve.request", "xlt.serve.limits", "xlt.core.spans"],
    ["xlt.config"],
    ["xlt.core", "xlt.models", "xlt.zoo", "xlt.data", "xlt.align", "xlt.losses", "xlt.predict",
     "xlt.synthetic.vocab"],
    ["xlt.tasks", "xlt.synthetic.data", "xlt.translate", "xlt.core.context"],
    ["xlt.methods", "xlt.stages", "xlt.trained"],
    ["xlt.finetune", "xlt.evaluation", "xlt.report"],
    ["xlt.serve"],
    ["xlt.api", "xlt.cli", "xlt"],
]


def module_files(folder: Path, package: str | None) -> dict[str, Path]:
    """Module name -> file: dotted names from the package's parent for ``xlt/``, from the folder itself for
    ``benchmarks/`` (its scripts import each other as ``jobqueue``, ``probes.tall_probe``: benchmarks/ is on
    ``sys.path``)."""
    mods = {}
    for f in sorted(folder.rglob("*.py")):
        parts = f.relative_to(folder.parent if package else folder).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = f
    return mods


def import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of other modules in ``mods`` (at any depth of the file, functions included)."""
    def known(name: str) -> str:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, f in mods.items():
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [known(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's own package
                    package = m.split(".") if f.name == "__init__.py" else m.split(".")[:-1]
                    base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
                targets = [known(f"{base}.{a.name}") or known(base) for a in node.names]
            graph[m].update(t for t in targets if t and t != m)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
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


def layer(module: str) -> int:
    matches = [(len(name), i) for i, names in enumerate(LAYERS) for name in names
               if module == name or module.startswith(name + ".")]
    assert matches, f"{module} is in no layer: add it to LAYERS (and to docs/design.md)"
    return max(matches)[1]


@pytest.mark.parametrize("folder,package", [("xlt", "xlt"), ("benchmarks", None)])
def test_no_import_circles(folder, package):
    graph = import_graph(module_files(ROOT / folder, package))
    assert cycles(graph) == []


def test_each_layer_imports_only_from_below():
    graph = import_graph(module_files(ROOT / "xlt", "xlt"))
    upward = [f"{m} (layer {layer(m)}) imports {t} (layer {layer(t)})"
              for m, targets in sorted(graph.items()) for t in sorted(targets) if layer(t) > layer(m)]
    assert upward == []


def test_the_checks_see_a_circle_and_an_upward_import(tmp_path):
    """The checks themselves: a circle through a function-level import is found, and so is an upward import."""
    pkg = tmp_path / "xlt"
    (pkg / "core").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("from xlt.config import X\n")
    (pkg / "config.py").write_text("def f():\n    from .core import Y\n")
    graph = import_graph(module_files(pkg, "xlt"))
    assert cycles(graph) == [["xlt.config", "xlt.core"]]
    assert layer("xlt.config") < layer("xlt.core") and "xlt.core" in graph["xlt.config"]
