"""Run a kernel file written for AWS's NKI packages, unchanged: ``torch-neuronx nki run FILE`` or
``python -m torch_neuronx.nki run FILE``.

The runner switches the import hook on (:mod:`.import_hook`: ``import nki`` / ``import neuronxcc.nki``
resolve to this package), imports the file, picks a kernel (``--kernel NAME``, else the file's only
``nki.jit`` kernel), builds its inputs and simulates it on the chosen platform, then prints each output
(shape, dtype, statistics, first values), saves them as ``.npy`` when asked, and prints the cost
model's ESTIMATED latency and engine busy time.

Inputs, one per kernel parameter without a default, in order or by name (``--input NAME=SPEC``):

* ``file.npy`` -- a NumPy array file;
* ``128x512`` or ``128x512:bfloat16`` -- random values (normal; integers uniform in [0, 10));
* ``=3`` / ``=3.5`` / ``True`` -- a Python scalar (a bare number is a scalar for a parameter whose
  default is a number, else a 1-D shape).

``--grid 2`` (or ``--grid 2,3``) launches a grid (``kernel[2]``: LNC=2 for the current front end).
Exit status: 0 on success, 1 when the kernel breaks an NKI rule (the error is printed), 2 on bad use.
"""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import dtypes
from .benchmark import BenchmarkResult
from .errors import NKIError
from .import_hook import install_import_hook
from .launch import Kernel

__all__ = ["RunResult", "load_kernels", "make_input", "run_file", "add_arguments", "take_extra_inputs", "execute",
           "main"]


@dataclass
class RunResult:
    """Outputs and estimate of one runner call.

    Attributes:
        kernel: the kernel's name; outputs: NumPy arrays (flattened from the return value);
        estimate: the cost model's :class:`~.benchmark.BenchmarkResult`; inputs: what was passed.
    """

    kernel: str
    outputs: list = field(default_factory=list)
    estimate: BenchmarkResult | None = None
    inputs: dict = field(default_factory=dict)


def _import_file(path: str) -> Any:
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no kernel file {path}")
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = "nki_kernel_file_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def load_kernels(path: str) -> dict[str, Kernel]:
    """Import ``path`` (with the import hook on) and return its ``nki.jit`` kernels by name."""
    install_import_hook()
    mod = _import_file(path)
    return {n: v for n, v in vars(mod).items() if isinstance(v, Kernel) and getattr(v.fn, "__module__", "") ==
            mod.__name__} or {n: v for n, v in vars(mod).items() if isinstance(v, Kernel)}


def make_input(spec: str, rng: np.random.Generator, default: Any = None) -> Any:
    """The value an input SPEC stands for (see the module docstring); for a parameter whose default is
    a number, a bare number is that scalar (not a 1-D shape).

    Raises:
        ValueError: an unreadable SPEC.
    """
    s = spec.strip()
    if isinstance(default, (bool, int, float)) and not isinstance(default, np.ndarray) and \
            re.fullmatch(r"-?[\d.]+(e-?\d+)?|True|False", s):
        s = "=" + s
    if s.endswith(".npy"):
        return np.load(s)
    m = re.fullmatch(r"(\d+(?:x\d+)*)(?::(\w+))?", s)
    if m:
        shape = tuple(int(v) for v in m.group(1).split("x"))
        dt = dtypes.np_dtype(dtypes.as_dtype(m.group(2) or "float32"))
        if dt.kind in "iu":
            return rng.integers(0, 10, size=shape).astype(dt)
        if dt == np.bool_:
            return rng.integers(0, 2, size=shape).astype(bool)
        return rng.standard_normal(shape).astype(np.float32).astype(dt)
    s = s.lstrip("=")
    if s in ("True", "False"):
        return s == "True"
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        raise ValueError(f"input spec {spec!r}: use FILE.npy, a shape like 128x512[:bfloat16], or a number") from None


def _grid(text: str | None) -> tuple:
    """``--grid 2`` / ``--grid 4,2`` as a launch grid.

    Raises:
        ValueError: a part that is not a whole number, naming the expected form.
    """
    if not text:
        return ()
    try:
        return tuple(int(v) for v in text.split(","))
    except ValueError:
        raise ValueError(f"--grid {text!r} is not a launch grid: give program counts separated by commas, "
                         f"e.g. --grid 2 or --grid 4,2") from None


def run_file(path: str, kernel: str | None = None, inputs: Sequence[str] = (), named: dict | None = None,
             grid: str | None = None, platform: str | None = None, seed: int = 0,
             keep_fp32: bool | None = None) -> RunResult:
    """Import ``path``, pick ``kernel`` and simulate it on ``inputs`` (see the module docstring).

    Raises:
        ValueError: no / several kernels and none named, missing inputs, unreadable specs.
        NKIError: the kernel breaks an NKI rule.
    """
    kernels = load_kernels(path)
    if kernel is None:
        if len(kernels) != 1:
            raise ValueError(f"{path} defines {len(kernels)} nki.jit kernels ({', '.join(sorted(kernels)) or 'none'});"
                             " choose one with --kernel NAME")
        kernel = next(iter(kernels))
    if kernel not in kernels:
        raise ValueError(f"no nki.jit kernel {kernel!r} in {path} (kernels: {', '.join(sorted(kernels)) or 'none'})")
    k = kernels[kernel]
    rng = np.random.default_rng(seed)
    params = [p for p in inspect.signature(k.fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    named = dict(named or {})
    values: dict[str, Any] = {}
    pos = list(inputs)
    for p in params:
        if p.name in named:
            values[p.name] = make_input(named.pop(p.name), rng, p.default)
        elif pos and p.kind != p.KEYWORD_ONLY:
            values[p.name] = make_input(pos.pop(0), rng, p.default)
        elif p.default is inspect.Parameter.empty:
            raise ValueError(f"kernel {kernel}: no input for parameter {p.name!r} (pass --input {p.name}=SPEC or a "
                             "positional SPEC)")
    if pos or named:
        raise ValueError(f"kernel {kernel}: unused inputs {pos + list(named)}")
    launched = k._copy(platform=platform or k.platform)
    if keep_fp32 is not None:
        launched.keep = keep_fp32
    if grid:
        launched = launched[_grid(grid)]
    out = launched.run((), values)
    flat: list = []

    def walk(o: Any) -> None:
        if isinstance(o, (tuple, list)):
            for x in o:
                walk(x)
        elif isinstance(o, dict):
            for x in o.values():
                walk(x)
        elif o is not None:
            flat.append(o)
    walk(out)
    est = BenchmarkResult(launched.last_run, kernel) if launched.last_run is not None else None
    return RunResult(kernel, flat, est, values)


def _describe(name: str, a: Any) -> str:
    if not isinstance(a, np.ndarray):
        return f"{name}: {a!r}"
    f = a.astype(np.float32) if a.dtype.kind not in "b" else a.astype(np.float32)
    with np.errstate(all="ignore"):
        stats = (f"min {np.nanmin(f):.6g}  max {np.nanmax(f):.6g}  mean {np.nanmean(f):.6g}"
                 if f.size and not np.all(np.isnan(f)) else "all NaN")
    nan = int(np.isnan(f).sum())
    head = np.array2string(f.reshape(-1)[:6], precision=5, separator=", ")
    return (f"{name}: shape {list(a.shape)} {a.dtype}  {stats}" + (f"  NaN x{nan}" if nan else "") +
            f"\n    first values {head}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``run`` sub-command's arguments to ``parser``."""
    parser.add_argument("file", help="a Python file defining nki.jit kernels (AWS's imports work unchanged)")
    parser.add_argument("inputs", nargs="*", help="inputs in parameter order: FILE.npy, SHAPE[:DTYPE] "
                        "(e.g. 128x512:bfloat16, random), or a number")
    parser.add_argument("--kernel", help="kernel name (default: the file's only nki.jit kernel)")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=SPEC",
                        help="an input by parameter name (repeatable)")
    parser.add_argument("--grid", help="launch grid, e.g. 2 (LNC=2 for the current front end) or 4,2")
    parser.add_argument("--platform", choices=["trn1", "trn2", "trn3", "inf2"],
                        help="simulated platform (default: the kernel's, else TORCH_NEURONX_PLATFORM)")
    parser.add_argument("--seed", type=int, default=0, help="seed of random inputs (default 0)")
    parser.add_argument("--save", metavar="DIR", help="save inputs and outputs as .npy files in DIR")
    parser.add_argument("--fp32", action="store_true", help="keep every float in fp32 (no bf16/fp8 rounding)")
    parser.add_argument("--trace", metavar="FILE.json", help="write the estimated timeline (Chrome trace JSON)")


def take_extra_inputs(args: argparse.Namespace, extra: Sequence[str]) -> str | None:
    """Append positional inputs that argparse left over (written after an option, as in
    ``run FILE --kernel k 128x512``) to ``args.inputs``; returns an error message for anything else
    (an unknown option), or None."""
    for item in extra:
        if item.startswith("--") or (item.startswith("-") and not re.fullmatch(r"-[0-9.]+", item)):
            return f"unrecognized argument {item!r}"
    args.inputs = list(args.inputs) + list(extra)
    return None


def execute(args: argparse.Namespace) -> int:
    """Run the parsed ``run`` sub-command; print to stdout; return the exit status."""
    named = {}
    for item in args.input:
        if "=" not in item:
            print(f"torch-neuronx nki run: --input wants NAME=SPEC, got {item!r}", file=sys.stderr)
            return 2
        k, v = item.split("=", 1)
        named[k] = v
    try:
        res = run_file(args.file, args.kernel, args.inputs, named, args.grid, args.platform, args.seed,
                       True if args.fp32 else None)
    except NKIError as e:
        print(f"kernel rejected by an NKI rule:\n  {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError, RuntimeError) as e:
        print(f"torch-neuronx nki run: {e}", file=sys.stderr)
        return 2
    print(f"kernel {res.kernel}: {len(res.outputs)} output(s)")
    for i, o in enumerate(res.outputs):
        print("  " + _describe(f"output {i}", o))
    if args.save:
        os.makedirs(args.save, exist_ok=True)
        for n, v in res.inputs.items():
            if isinstance(v, np.ndarray):
                np.save(os.path.join(args.save, f"input_{n}.npy"), v)
        for i, o in enumerate(res.outputs):
            if isinstance(o, np.ndarray):
                np.save(os.path.join(args.save, f"output_{i}.npy"), o)
        print(f"saved inputs and outputs in {args.save}")
    if res.estimate is not None:
        print(str(res.estimate))
        if args.trace:
            res.estimate.save_trace(args.trace)
            print(f"estimated timeline written to {args.trace}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m torch_neuronx.nki run FILE ...``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m torch_neuronx.nki",
                                     description="Run NKI kernel files on the torch_neuronx simulator.")
    sub = parser.add_subparsers(dest="command", required=True)
    add_arguments(sub.add_parser("run", help="simulate a kernel of a kernel file and print its outputs"))
    args, extra = parser.parse_known_args(argv)
    if extra:
        problem = take_extra_inputs(args, extra)
        if problem:
            parser.error(problem)
    return execute(args)
