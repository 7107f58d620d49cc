"""The import graph of torch_neuronx has one direction and respects private names.

Every module under ``torch_neuronx/`` is parsed with ``ast`` (nothing is imported or run). Its
``import`` / ``from ... import`` statements naming torch_neuronx modules become edges of a directed
graph, marked module-level or function-level (inside a ``def`` or ``lambda``; class bodies run at
import time, so they count as module level). Three rules, checked per folder:

1. The module-level graph is acyclic.
2. The graph with the function-level imports added is acyclic too: a function-level import may defer
   loading something heavy, but it may not hide a cycle. ``LAZY_EDGES`` lists the function-level
   imports that close a cycle on purpose, each with its reason (none today).
3. No module imports another module's private (``_name``) attribute, by ``from m import _name`` or by
   ``m._name`` on an imported module. Private *modules* (``torch_neuronx._C``, ``_state``,
   ``kernels._common``) may be imported, and their attributes used: they are private to the package,
   not to one module.

Edges to a package mean its ``__init__``; importing a submodule is not counted as an import of its
parent package (Python runs the parent's ``__init__`` first, but that order is not a dependency).
"""
from __future__ import annotations

import ast
import pathlib
from dataclasses import dataclass

import networkx as nx
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "torch_neuronx"
PACKAGE = "torch_neuronx"

# Function-level imports allowed to close a cycle: {(importer, imported): reason}. Keep it empty unless
# a heavy optional layer truly has to import back into its importer.
LAZY_EDGES: dict[tuple[str, str], str] = {}



def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _discover() -> tuple[dict[str, pathlib.Path], set[str]]:
    """(module name -> source file) of the Python modules, and the set of every module name
    (extension modules such as ``torch_neuronx._C`` included)."""
    sources = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
    names = set(sources)
    for ext in ROOT.rglob("*.so"):
        names.add(_module_name(ext.with_name(ext.name.split(".")[0] + ".py")))
    return sources, names


SOURCES, MODULES = _discover()


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_module(module: str) -> bool:
    return any(_is_private(part) for part in module.split("."))


def folder_of(module: str) -> str:
    """``torch_neuronx.nki.tile`` -> ``nki``; top-level modules -> ``torch_neuronx``."""
    parts = module.split(".")
    if len(parts) > 1 and f"{PACKAGE}.{parts[1]}" in MODULES and \
            (ROOT / parts[1] / "__init__.py").exists():
        return parts[1]
    return PACKAGE


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int
    function_level: bool

    def __str__(self) -> str:
        where = "function-level" if self.function_level else "module-level"
        return f"{self.importer}:{self.line} imports {self.imported} ({where})"


@dataclass(frozen=True)
class PrivateUse:
    importer: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.importer}:{self.line} uses {self.text}"


class _Scanner(ast.NodeVisitor):
    """Collects the torch_neuronx imports and private-attribute uses of one module."""

    def __init__(self, module: str, is_package: bool):
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.depth = 0                       # > 0 inside a function or lambda
        self.edges: list[Edge] = []
        self.private: list[PrivateUse] = []
        self.aliases: dict[str, str] = {}    # local name -> torch_neuronx module it is bound to

    # --- scopes --------------------------------------------------------------------------------
    def _scoped(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _scoped

    def visit_If(self, node):
        # ``if TYPE_CHECKING:`` blocks never run: their imports are not dependencies.
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    # --- imports -------------------------------------------------------------------------------
    def _edge(self, target: str, line: int) -> None:
        if target != self.module:
            self.edges.append(Edge(self.module, target, line, self.depth > 0))

    def visit_Import(self, node):
        for alias in node.names:
            if alias.name != PACKAGE and not alias.name.startswith(PACKAGE + "."):
                continue
            parts = alias.name.split(".")
            target = next(".".join(parts[:n]) for n in range(len(parts), 0, -1)
                          if ".".join(parts[:n]) in MODULES)
            self._edge(target, node.lineno)
            self.aliases[alias.asname or PACKAGE] = target if alias.asname else PACKAGE

    def visit_ImportFrom(self, node):
        if node.level:
            base_parts = self.package.split(".")
            if node.level > 1:
                base_parts = base_parts[:-(node.level - 1)]
            base = ".".join(base_parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        if base != PACKAGE and not base.startswith(PACKAGE + "."):
            return
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            if sub in MODULES:                       # a submodule: its own node
                self._edge(sub, node.lineno)
                self.aliases[alias.asname or alias.name] = sub
                continue
            self._edge(base, node.lineno)
            if _is_private(alias.name):
                self.private.append(PrivateUse(self.module, node.lineno,
                                               f"'from {base} import {alias.name}'"))

    # --- attribute use on imported modules ---------------------------------------------------------
    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in self.aliases:
            target = self.aliases[node.value.id]
            if _is_private(node.attr) and not _private_module(target) \
                    and f"{target}.{node.attr}" not in MODULES:
                self.private.append(PrivateUse(self.module, node.lineno,
                                               f"'{node.value.id}.{node.attr}' of {target}"))
        self.generic_visit(node)


def _scan():
    edges: list[Edge] = []
    private: list[PrivateUse] = []
    for module, path in SOURCES.items():
        scanner = _Scanner(module, path.name == "__init__.py")
        scanner.visit(ast.parse(path.read_text(), filename=str(path)))
        edges += scanner.edges
        private += scanner.private
    return edges, private


EDGES, PRIVATE_USES = _scan()
FOLDERS = sorted({folder_of(m) for m in SOURCES})


def _cycles(function_level: bool) -> list[list[Edge]]:
    """Each cycle of the graph (one per strongly connected component, with the edges inside it)."""
    graph = nx.DiGraph()
    for e in EDGES:
        if e.function_level and (not function_level or (e.importer, e.imported) in LAZY_EDGES):
            continue
        graph.add_edge(e.importer, e.imported)
    found = []
    for component in nx.strongly_connected_components(graph):
        if len(component) > 1:
            found.append([e for e in EDGES if e.importer in component and e.imported in component
                          and (function_level or not e.function_level)])
    return found


def _params():
    return [pytest.param(folder, id=folder) for folder in FOLDERS]


def _cycles_of(folder: str, function_level: bool) -> list[list[Edge]]:
    """The cycles a folder's case reports: those through one of its modules."""
    return [cycle for cycle in _cycles(function_level)
            if folder in {folder_of(e.importer) for e in cycle}]


def _report(cycles: list[list[Edge]]) -> str:
    return "\n\n".join("cycle among " + ", ".join(sorted({e.importer for e in c})) + ":\n  "
                       + "\n  ".join(dict.fromkeys(map(str, c))) for c in cycles)


def test_the_scan_sees_the_package():
    # The scanner must find what we know is there, or the rules below would pass vacuously.
    assert {"torch_neuronx.nki.simulator", "torch_neuronx.runtime.platforms", "torch_neuronx._C"} <= MODULES
    assert any(e.importer == "torch_neuronx.nki.language" and e.imported == "torch_neuronx.nki.instructions"
               and not e.function_level for e in EDGES)
    assert any(e.importer == "torch_neuronx" and e.imported == "torch_neuronx._C" and e.function_level
               for e in EDGES)
    assert {"nki", "runtime", "device", PACKAGE} <= set(FOLDERS)


def test_the_rules_catch_what_they_forbid(tmp_path):
    # A scanner that reported nothing for these lines would let every rule pass.
    src = ("from .simulator import _flatten\nfrom . import instructions as ins\n"
           "def f():\n    from . import tile\n    return ins._reduce_axes\n")
    scanner = _Scanner("torch_neuronx.nki.language", False)
    scanner.visit(ast.parse(src))
    assert [str(p) for p in scanner.private] == [
        "torch_neuronx.nki.language:1 uses 'from torch_neuronx.nki.simulator import _flatten'",
        "torch_neuronx.nki.language:5 uses 'ins._reduce_axes' of torch_neuronx.nki.instructions"]
    assert [(e.imported, e.function_level) for e in scanner.edges] == [
        ("torch_neuronx.nki.simulator", False), ("torch_neuronx.nki.instructions", False),
        ("torch_neuronx.nki.tile", True)]


@pytest.mark.parametrize("folder", _params())
def test_module_level_imports_are_acyclic(folder):
    cycles = _cycles_of(folder, function_level=False)
    assert not cycles, _report(cycles)


@pytest.mark.parametrize("folder", _params())
def test_function_level_imports_hide_no_cycle(folder):
    cycles = _cycles_of(folder, function_level=True)
    assert not cycles, _report(cycles)


@pytest.mark.parametrize("folder", _params())
def test_no_private_names_of_other_modules(folder):
    uses = [u for u in PRIVATE_USES if folder_of(u.importer) == folder]
    assert not uses, "\n".join(map(str, uses))


# The layers of torch_neuronx.nki, bottom first: a module may import only modules of lower layers.
NKI_LAYERS = [
    ("errors", "truth"),
    ("dtypes", "ops", "typing"),
    ("indexing",),
    ("memory",),
    ("context",),
    ("tile",),
    ("platforms", "cost_model", "arguments", "scopes"),
    ("simulator",),
    ("instructions.constants",),         # the instruction layer, one module per engine
    ("instructions.common",),
    ("instructions.dma", "instructions.gpsimd", "instructions.scalar", "instructions.tensor_engine",
     "instructions.vector"),
    ("instructions.sync", "instructions.syntax"),
    ("instructions",),
    ("limits", "highlevel"),
    ("compiler.psum", "compiler.sbuf"),
    ("compiler",),
    ("language.constants", "isa.constants"),
    ("language", "isa"),                 # the legacy front end (neuronxcc.nki)
    ("launch",),
    ("benchmark",),
    ("current.language.constants", "current.isa.constants", "current.collectives", "current.dtype"),
    ("current.language", "current.isa"),  # the current front end (nki)
    ("current",),
    ("import_hook",),
    ("runner", "torch_op"),
    ("__main__",),
    ("__init__",),
]


def test_nki_imports_only_downward():
    rank = {}
    for level, names in enumerate(NKI_LAYERS):
        for name in names:
            rank["torch_neuronx.nki" + ("" if name == "__init__" else "." + name)] = level
    nki_modules = {m for m in SOURCES if m == "torch_neuronx.nki" or m.startswith("torch_neuronx.nki.")}
    assert nki_modules == set(rank), "a module of torch_neuronx/nki/ is missing from NKI_LAYERS"
    upward = [str(e) for e in EDGES if e.importer in rank and e.imported in rank
              and rank[e.imported] >= rank[e.importer]]
    assert not upward, "imports that do not go down the layers of NKI_LAYERS:\n" + "\n".join(upward)


def test_lazy_edges_are_real_function_level_imports():
    for importer, imported in LAZY_EDGES:
        assert any(e.importer == importer and e.imported == imported and e.function_level for e in EDGES), \
            f"LAZY_EDGES names {importer} -> {imported}, which is not a function-level import"
