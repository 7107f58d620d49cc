"""AWS's tensor scope rule: a tensor created inside a ``for`` loop, or inside an ``if`` / ``else`` that branches
on a loop index, is not usable after that block (``err_local_variable_used_out_of_scope``).

AWS's NKI errors page (legacy reference, ``aws-neuron/aws-neuron-sdk@cca3784:general/nki/api/nki.errors.rst``,
line 417): "Tensors in NKI have a stricter scope rules than Python. In NKI, control blocks in if/else/for
statements will introduce their own scope for tensors. A tensor defined in if/else/for control blocks are not
allowed to be used outside of the scope." Its examples: a tile assigned in both branches of an
``if i < 2`` on a ``range`` loop's index and read after the ``if``, and ``data = data + i_tile`` inside a
``sequential_range`` loop (a new tensor bound to the name inside the loop) read after the loop. Allowed (the
page's fixes): a tensor created before the block and written inside it through ``t[...] = ...``, or updated in
place. The rule is about tensors only: Python values (loop counters, shapes, lists) keep Python's scoping, and
``t += x`` updates ``t`` in place (it does not bind a new tensor).

Narrowed to what AWS's kernels show the compiler accepts: an ``if`` whose condition is known when the kernel is
traced (a kernel argument, a shape, a flag) is no scope -- AWS's flash-attention kernel (nki-samples
``reference/attention.py``) creates its ``lse`` output and logit-bias tile under such ``if``s and uses them
after -- so only an ``if`` whose condition reads an enclosing loop's index opens one. Loops are those over
``range`` and the NKI iterators (``nl.affine_range``, ``sequential_range``, ``static_range``); ``while`` loops
and loops over Python containers (which the page does not name) are not checked.

Front end: the legacy one (``neuronxcc.nki``), whose errors page states the rule. The current ``nki``
front end's pages (NKI 0.6) have no errors page and do not restate it, and AWS's nki-library kernels for it
bind tensors under ``if``s inside ``range`` loops (``bwmm_shard_on_block``'s ``block_old``), so its kernels
are not checked.

How it is checked. :func:`analyze` parses the kernel's source once and gives each statement its block path
(a ``for`` target belongs to the loop body; ``with`` and ``try`` are not scopes). Only names bound in one
block and read where that block is not enclosing can break the rule; a kernel with none runs untraced.
Otherwise :func:`call` runs the kernel under a line tracer of its own frame: each statement records, for
those names, the block it binds them in, and a statement reading such a name outside that block raises when
the value is an NKI tensor (an on-chip tile or an HBM tensor; index expressions and Python values are not
tensors). The check follows the statements actually executed, as AWS's tracer does. A kernel whose source
cannot be read (built with ``exec``) is not checked; neither are plain Python helper functions it calls (only
``nki.jit`` kernels, including ones inlined into another kernel), nor kernels run while another tracer (a
debugger, coverage) is active.
"""
from __future__ import annotations

import ast
import inspect
import sys
import textwrap
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import err_local_variable_used_out_of_scope
from .tile import is_tile

__all__ = ["ScopeInfo", "analyze", "call"]

Path = tuple[int, ...]


@dataclass(frozen=True)
class _Stmt:
    """One statement (or a compound statement's header): its block path, the names it reads and binds."""
    path: Path
    loads: frozenset[str]
    stores: frozenset[str]
    store_path: Path        # block the stored names belong to (a ``for`` target: the loop body)
    line: int
    loop_index: bool = False    # the stores are a range loop's index (an int or index, never a tensor)


@dataclass
class ScopeInfo:
    """Per kernel function: statements by source line, and the names that could break the scope rule."""
    by_line: dict[int, _Stmt] = field(default_factory=dict)
    candidates: frozenset[str] = frozenset()


def _expr_loads(nodes: Sequence[ast.AST]) -> set[str]:
    """Names read by expressions ``nodes`` (names bound by comprehensions and lambdas inside excluded)."""
    loads: set[str] = set()
    bound: set[str] = set()
    for n in nodes:
        for x in ast.walk(n):
            if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Load):
                loads.add(x.id)
            elif isinstance(x, ast.comprehension):
                bound |= {t.id for t in ast.walk(x.target) if isinstance(t, ast.Name)}
            elif isinstance(x, ast.Lambda):
                a = x.args
                bound |= {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
    return loads - bound


def _targets(nodes: Sequence[ast.AST]) -> set[str]:
    """Names a plain assignment to ``nodes`` binds (``t[...] = x`` and ``t.a = x`` bind nothing)."""
    out: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, (ast.Tuple, ast.List)):
            out |= _targets(list(n.elts))
        elif isinstance(n, ast.Starred):
            out |= _targets([n.value])
    return out


class _Walker:
    def __init__(self) -> None:
        self.stmts: list[tuple[int, int, _Stmt]] = []      # (first line, last line, statement)
        self.next_block = 0
        self.loop_vars: set[str] = set()      # targets of the enclosing loops

    def _new(self, path: Path) -> Path:
        self.next_block += 1
        return path + (self.next_block,)

    def _add(self, first: int, last: int, path: Path, loads: set[str], stores: set[str],
             store_path: Path | None = None, loop_index: bool = False) -> None:
        self.stmts.append((first, last, _Stmt(path, frozenset(loads), frozenset(stores),
                                              path if store_path is None else store_path, first, loop_index)))

    def block(self, body: list[ast.stmt], path: Path) -> None:
        for s in body:
            self.stmt(s, path)

    def stmt(self, s: ast.stmt, path: Path) -> None:
        first = s.lineno
        if isinstance(s, (ast.For, ast.AsyncFor, ast.While, ast.If)):
            head_last = max(first, s.body[0].lineno - 1) if s.body else first
            if isinstance(s, ast.While) or (isinstance(s, (ast.For, ast.AsyncFor)) and not _is_range(s.iter)):
                # not a scope on AWS's page: while loops and loops over Python containers
                if isinstance(s, ast.While):
                    self._add(first, head_last, path, _expr_loads([s.test]), _named(s.test))
                else:
                    self._add(first, head_last, path, _expr_loads([s.iter]), _targets([s.target]))
                self.block(s.body, path)
                self.block(s.orelse, path)
                return
            if isinstance(s, ast.If) and not (_expr_loads([s.test]) & self.loop_vars):
                # a condition known when the kernel is traced: only the taken branch exists (no scope)
                self._add(first, head_last, path, _expr_loads([s.test]), _named(s.test))
                self.block(s.body, path)
                self.block(s.orelse, path)
                return
            body_path = self._new(path)
            saved = self.loop_vars
            if isinstance(s, (ast.For, ast.AsyncFor)):
                self._add(first, head_last, path, _expr_loads([s.iter]), _targets([s.target]), body_path, True)
                self.loop_vars = saved | _targets([s.target])
            else:
                self._add(first, head_last, path, _expr_loads([s.test]), _named(s.test))
            self.block(s.body, body_path)
            self.loop_vars = saved
            if s.orelse:
                self.block(s.orelse, self._new(path))
            return
        if isinstance(s, (ast.With, ast.AsyncWith)):
            head_last = max(first, s.body[0].lineno - 1)
            items = [i.context_expr for i in s.items]
            self._add(first, head_last, path, _expr_loads(items),
                      _targets([i.optional_vars for i in s.items if i.optional_vars is not None]))
            self.block(s.body, path)
            return
        if isinstance(s, ast.Try):
            for part in (s.body, s.orelse, s.finalbody):
                self.block(part, path)
            for h in s.handlers:
                self.block(h.body, path)
            return
        last = s.end_lineno or first
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._add(first, first, path, set(), {s.name})
            return
        if isinstance(s, ast.Assign):
            self._add(first, last, path, _expr_loads([s.value, *s.targets]), _targets(s.targets) | _named(s.value))
        elif isinstance(s, ast.AnnAssign):
            stores = _targets([s.target]) if s.value is not None else set()
            self._add(first, last, path, _expr_loads([s.value] if s.value is not None else []), stores)
        elif isinstance(s, ast.AugAssign):      # t += x updates t in place: a read, not a new binding
            target = s.target.id if isinstance(s.target, ast.Name) else None
            self._add(first, last, path, _expr_loads([s.value, s.target]) | ({target} if target else set()), set())
        else:
            self._add(first, last, path, _expr_loads([s]), _named(s))


def _is_range(node: ast.AST) -> bool:
    """True for ``range(...)`` and the NKI loop iterators (``nl.affine_range``, ``nl.sequential_range``,
    ``nl.static_range``, ...): the loops AWS's page gives a scope."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    return name == "range" or name.endswith("_range")


def _named(node: ast.AST) -> set[str]:
    """Names bound by ``:=`` inside ``node``."""
    return {x.target.id for x in ast.walk(node) if isinstance(x, ast.NamedExpr)}


def _inside(inner: Path, outer: Path) -> bool:
    return inner[:len(outer)] == outer


def analyze_function(node: ast.FunctionDef | ast.AsyncFunctionDef) -> ScopeInfo:
    """Scope information of one parsed function definition (line numbers as in ``node``)."""
    w = _Walker()
    w.block(node.body, ())
    info = ScopeInfo()
    bound_in: dict[str, set[Path]] = {}
    for _, _, st in w.stmts:
        for n in st.stores:
            bound_in.setdefault(n, set()).add(st.store_path)
    maybe_tensor = {n for _, _, st in w.stmts if not st.loop_index for n in st.stores}
    cands = set()
    for _, _, st in w.stmts:
        for n in st.loads:
            if n in maybe_tensor and any(not _inside(st.path, p) for p in bound_in.get(n, ())):
                cands.add(n)
    info.candidates = frozenset(cands)
    for first, last, st in w.stmts:
        for line in range(first, last + 1):
            info.by_line.setdefault(line, st)
    return info


_CACHE: dict[types.CodeType, ScopeInfo | None] = {}


def analyze(fn: Callable) -> ScopeInfo | None:
    """Scope information of kernel function ``fn`` (cached per code object); None when its source cannot
    be read or parsed."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    if code in _CACHE:
        return _CACHE[code]
    info: ScopeInfo | None = None
    try:
        lines, start = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
        ast.increment_lineno(tree, start - 1)
        defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                and n.name == code.co_name]
        if defs:
            info = analyze_function(defs[0])
    except (OSError, TypeError, SyntaxError, IndentationError):
        info = None
    _CACHE[code] = info
    return info


class _FrameCheck:
    """Line tracer of one kernel frame: the block each candidate name was last bound in."""

    def __init__(self, info: ScopeInfo, name: str):
        self.info = info
        self.name = name
        self.bound: dict[str, Path] = {}

    def __call__(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if event != "line":
            return self
        st = self.info.by_line.get(frame.f_lineno)
        if st is None:
            return self
        cands = self.info.candidates
        for n in st.loads:
            if n in cands and n in self.bound and not _inside(st.path, self.bound[n]):
                value = frame.f_locals.get(n)
                if is_tile(value):
                    raise err_local_variable_used_out_of_scope(
                        f"tensor '{n}' ({_describe(value)}) of kernel '{self.name}' read at line {frame.f_lineno} "
                        f"was created inside a loop (or an if/else on a loop index) that ended; create it "
                        f"before the block (nl.ndarray) and write it inside with '{n}[...] = ...'")
        for n in st.stores:
            if n in cands:
                self.bound[n] = st.store_path
        return self


def _describe(t: Any) -> str:
    shape = list(getattr(t, "shape", ()))
    buf = getattr(t, "buffer", None)
    buf = getattr(buf, "name", buf)
    return f"{shape}" + (f" in {buf}" if buf is not None else "")


class _Starter:
    """Global trace function of one thread: traces the frames of the kernels being checked, no other."""

    def __init__(self) -> None:
        self.kernels: dict[types.CodeType, tuple[ScopeInfo, str]] = {}

    def __call__(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        k = self.kernels.get(frame.f_code)
        return _FrameCheck(*k) if k is not None and event == "call" else None


def call(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call kernel function ``fn`` with the scope rule checked (see the module docstring).

    Raises:
        err_local_variable_used_out_of_scope: a tensor read after the loop (or loop-index if/else) that
            created it.
    """
    info = analyze(fn)
    prev = sys.gettrace()
    if info is None or not info.candidates or (prev is not None and not isinstance(prev, _Starter)):
        return fn(*args, **kwargs)
    code = fn.__code__
    starter = prev if isinstance(prev, _Starter) else _Starter()
    had = code in starter.kernels
    starter.kernels[code] = (info, getattr(fn, "__name__", "kernel"))
    if prev is None:
        sys.settrace(starter)
    try:
        return fn(*args, **kwargs)
    finally:
        if not had:
            starter.kernels.pop(code, None)
        if prev is None:
            sys.settrace(None)
