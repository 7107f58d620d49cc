"""Every public function of torch_neuronx carries full type hints.

The package is parsed with ``ast`` (nothing is imported). A function is public when its name has no
leading underscore and it is defined at module level, or in a public class, of a public module (no
path component starting with an underscore, ``__init__.py`` aside); ``__init__`` of a public class
counts too, since its parameters are the class's. Fully annotated means: every parameter, ``*args``
and ``**kwargs`` included, has an annotation, and so does the return (``__init__`` excepted); the
first parameter of a method (``self``/``cls``) needs none unless the method is a ``staticmethod``.
``ruff check`` and ``mypy`` (configured in ``pyproject.toml``, run by ``.ci/run``) check the rest.
"""
from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "torch_neuronx"

#: Folders of torch_neuronx whose public functions are not checked yet: {folder: reason}.
EXEMPT_FOLDERS: dict[str, str] = {}


def _public_module(path: pathlib.Path) -> bool:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return not any(p.startswith("_") and p != "__init__" for p in parts)


def _missing(fn: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool) -> list[str]:
    """Names of ``fn``'s unannotated parameters, plus ``"return"`` when the return is not annotated."""
    a = fn.args
    params = [*a.posonlyargs, *a.args]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    if is_method and not static and params:
        params = params[1:]  # self / cls
    params += a.kwonlyargs
    params += [p for p in (a.vararg, a.kwarg) if p is not None]
    missing = [p.arg for p in params if p.annotation is None]
    if fn.returns is None and fn.name != "__init__":
        missing.append("return")
    return missing


def public_functions(source: str) -> list[tuple[int, str, list[str]]]:
    """``(line, qualified name, missing annotations)`` for each public function in ``source``."""
    found: list[tuple[int, str, list[str]]] = []

    def visit(body: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                visit(node.body, f"{prefix}{node.name}.", True)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name.startswith("_") and not (in_class and node.name == "__init__"):
                    continue
                found.append((node.lineno, prefix + node.name, _missing(node, in_class)))
            elif isinstance(node, ast.If):  # e.g. ``if TYPE_CHECKING:`` or version branches
                visit(node.body + node.orelse, prefix, in_class)

    visit(ast.parse(source).body, "", False)
    return found


def _modules() -> list[pathlib.Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if _public_module(p)]


def test_checker_finds_missing_annotations():
    src = '''
def typed(x: int, *args: str, k: float = 1.0, **kw: object) -> int: ...
def untyped(x, y: int): ...
def _private(x): ...
class Public:
    def __init__(self, a): ...
    def method(self, b: int): ...
    @staticmethod
    def static(c) -> None: ...
    def _hidden(self, d): ...
class _Private:
    def method(self, e): ...
def outer() -> None:
    def inner(f): ...
'''
    got = {name: missing for _, name, missing in public_functions(src)}
    assert got == {
        "typed": [],
        "untyped": ["x", "return"],
        "Public.__init__": ["a"],
        "Public.method": ["return"],
        "Public.static": ["c"],
        "outer": [],
    }


def test_scan_covers_the_package():
    modules = {p.relative_to(PACKAGE).as_posix() for p in _modules()}
    assert {"__init__.py", "device/memory.py", "compile/cache.py", "distributed/process_group.py"} <= modules
    assert not any(m.startswith("_") or "/_" in m for m in modules if not m.endswith("__init__.py"))
    names = {name for _, name, _ in public_functions((PACKAGE / "device" / "max_memory.py").read_text())}
    assert names == {"max_memory"}
    assert set(EXEMPT_FOLDERS) <= {p.name for p in PACKAGE.iterdir() if p.is_dir()}


def test_public_functions_are_fully_annotated():
    offenders = []
    for path in _modules():
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in EXEMPT_FOLDERS:
            continue
        for line, name, missing in public_functions(path.read_text(encoding="utf-8")):
            if missing:
                offenders.append(f"torch_neuronx/{rel.as_posix()}:{line} {name}: "
                                 f"no annotation for {', '.join(missing)}")
    assert not offenders, "public functions without full type hints:\n" + "\n".join(offenders)
