"""The simulator of one NeuronCore: memories, loops, instruction execution and kernel runs.

A :class:`NeuronCoreSim` owns the allocator (HBM/SBUF/PSUM capacities), the loop stack used for
``affine_range`` write-conflict detection, the SPMD launch state, and the cost-model
:class:`~.cost_model.Timeline`. The instruction layer (:mod:`.instructions`, above this module) uses
``with sim.instruction(...) as ins: ins.read(...); ins.write(...)``; reads and writes are checked
(bounds, masks, immutability, conflicts), applied to the NumPy storage with dtype rounding, and timed.

Checks implemented here: the partition limit at allocation (``err_num_partition_exceed_arch_limit``),
bounds (via :mod:`.indexing`, ``err_tensor_access_out_of_bound``), affine_range write-write conflicts
(``err_unexpected_output_dependencies``, PSUM ``+=`` excepted), read-only inputs and written outputs
(``err_cannot_update_immutable_parameter``, ``err_tensor_output_not_written_to``), and poisoned fresh
allocations (NaN / 4, so reads of unwritten memory show).
"""
from __future__ import annotations

import contextlib
import inspect
import itertools
import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import context, dtypes
from .cost_model import Timeline
from .errors import (err_cannot_update_immutable_parameter, err_invalid_program_axis,
                     err_num_partition_exceed_arch_limit, err_shared_hbm_must_in_kernel_level,
                     err_size_of_dimension_exceed_arch_limit, err_store_dst_shape_smaller_than_other_shape,
                     err_tensor_output_not_written_to, err_unexpected_output_dependencies,
                     err_unsupported_memory)
from .indexing import as_mask_array, resolve, tile_broadcast
from .memory import Allocator, ON_CHIP, as_buffer
from .ops import binary
from .platforms import get_platform
from .tile import NkiTensor, ParDim, as_view, is_tile
from .typing import is_mutable_annotation

__all__ = ["NeuronCoreSim", "Instr", "run_kernel", "LoopFrame"]

_frame_ids = itertools.count()


class LoopFrame:
    """One active loop: kind 'affine' | 'sequential' | 'static', current iteration."""

    __slots__ = ("id", "kind", "iter", "roots", "allocs")

    def __init__(self, kind):
        self.id = next(_frame_ids)
        self.kind = kind
        self.iter = -1
        self.roots = []
        self.allocs = []      # allocations declared in the current iteration (released at its end)

    def end_iteration(self):
        for a in self.allocs:
            a.release()
        self.allocs.clear()


class Instr:
    """Reads/writes of one instruction; timed on exit (see :class:`NeuronCoreSim.instruction`)."""

    def __init__(self, sim, name, engine, busy_ns, latency_ns):
        self.sim, self.name, self.engine = sim, name, engine
        self.busy_ns, self.latency_ns = busy_ns, latency_ns
        self.reads, self.writes = [], []

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is None:
            self.sim._commit(self)
        return False

    def read(self, x, mask=None) -> np.ndarray:
        """Values of tile/view ``x`` (view-shaped storage array). Masked-off elements read as 0."""
        v = as_view(x)
        t = v.tensor
        t.fresh = False
        m = None
        if mask is not None:
            try:
                m = as_mask_array(mask, v.shape)
            except ValueError:
                m = None
        idx, sel = resolve(v.comps, t.shape, v.shape, v.advanced, m, t.name)
        if sel is Ellipsis:
            out = np.array(t.data[idx], copy=True)
        else:
            out = np.zeros(v.shape, dtype=t.data.dtype)
            out[sel] = t.data[idx]
        self.reads.append((t, idx))
        return out

    def write(self, dst, values, mask=None, accumulate=False, accumulate_op=None, exempt=False):
        """Write ``values`` (broadcast NKI-style to the view's shape) into ``dst`` under ``mask``.

        ``accumulate``: dst = dst <op> values (``accumulate_op``, default add); PSUM accumulation is
        exempt from the affine_range conflict check (as is ``exempt=True``: PSUM read-modify-write).
        """
        v = as_view(dst)
        t = v.tensor
        root = t.root
        if root.immutable:
            raise err_cannot_update_immutable_parameter(f"'{self.name}' writes input {t.describe()}")
        try:
            vals = tile_broadcast(values, v.shape)
        except ValueError:
            raise err_store_dst_shape_smaller_than_other_shape(
                f"'{self.name}': destination {v.describe()} smaller than / not broadcastable from "
                f"source shape {list(np.shape(values))}") from None
        m = as_mask_array(mask, v.shape) if mask is not None else None
        idx, sel = resolve(v.comps, t.shape, v.shape, v.advanced, m, t.name)
        self.sim.check_write_conflict(t, idx, accumulate or exempt, self.name)
        new = vals[sel] if sel is not Ellipsis else vals
        if accumulate:
            old = t.data[idx].astype(np.float32)
            new = binary(accumulate_op or "add")(old, np.asarray(new, dtype=np.float32))
        t.data[idx] = dtypes.round_to(new, t.dtype)
        root.written = True
        self.writes.append((t, idx))


class NeuronCoreSim:
    """State of one simulated NeuronCore for one kernel launch.

    Args:
        platform: "trn1" | "trn2" | "trn3" | "inf2", a ``torch_neuronx.runtime.platforms.Platform``,
            or None for the default (the ``neuron`` device's platform; see :mod:`.platforms`).
    """

    def __init__(self, platform=None):
        self.platform = get_platform(platform)
        self.allocator = Allocator(self.platform)
        self.timeline = Timeline(self.platform)
        self.loops: list = []
        self.grid: tuple = ()
        self.program: tuple = ()
        self.shared: list = []
        self.shared_idx = 0
        self.instance = 0
        self.instructions = 0

    # ---- activation -----------------------------------------------------------------------------
    def activate(self):
        """Context manager making this simulator the current one (:func:`.context.current`)."""
        return context.activate(self)

    # ---- allocation -----------------------------------------------------------------------------
    def new_tensor(self, shape, dtype, buffer=None, name="", fill=None, data=None) -> NkiTensor:
        """Allocate a tensor; poisoned (NaN / 4) unless ``fill`` or ``data`` is given.

        Raises ``err_num_partition_exceed_arch_limit`` (P > 128 in SBUF/PSUM),
        ``err_size_of_dimension_exceed_arch_limit`` (PSUM tile free size > 512),
        ``err_shared_hbm_must_in_kernel_level`` and ``err_buffer_capacity_exceeded``.
        """
        buf = as_buffer(buffer)
        dtype = dtypes.as_dtype(dtype if dtype is not None else dtypes.float32)
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        pdim = 0
        for i, s in enumerate(shape):
            if isinstance(s, ParDim):
                pdim = i
                break
        shape = tuple(int(s) for s in shape)
        desc = f"'{name or 'tile'}' {list(shape)} {dtypes.dtype_name(dtype)} in {buf.name}"
        nbytes_elem = dtypes.itemsize(dtype)
        if buf.kind in ON_CHIP:
            if not shape:
                raise ValueError(f"{desc}: SBUF/PSUM tiles need a partition dimension")
            p = shape[pdim]
            if p > self.platform.core.partitions:
                raise err_num_partition_exceed_arch_limit(
                    f"{desc}: {p} partitions > {self.platform.core.partitions}")
            free = int(np.prod(shape[pdim + 1:])) if len(shape) > pdim + 1 else 1
            if buf.kind == "psum" and free > 512:
                raise err_size_of_dimension_exceed_arch_limit(
                    f"{desc}: PSUM tile free size {free} > 512 (nl.tile_size.psum_fmax, one 2 KiB bank)")
            blocks = int(np.prod(shape[:pdim])) if pdim else 1
            nbytes = blocks * free * nbytes_elem
        else:
            nbytes = int(np.prod(shape)) * nbytes_elem if shape else nbytes_elem
        if buf.shared and data is None:
            if self.loops:
                raise err_shared_hbm_must_in_kernel_level(f"{desc} created inside a loop")
            if self.instance > 0:
                # SPMD: every program instance sees the same shared_hbm tensors, in creation order
                if self.shared_idx >= len(self.shared):
                    raise RuntimeError("SPMD program instances created different shared_hbm tensors")
                t = self.shared[self.shared_idx]
                self.shared_idx += 1
                if t.shape != shape or t.dtype != dtype:
                    raise RuntimeError(f"SPMD instance created shared_hbm {desc}, instance 0 created "
                                       f"{t.describe()}")
                return t
        rec = self.allocator.alloc(buf.kind, nbytes, desc)
        if data is None:
            sd = dtypes.storage_dtype(dtype)
            fv = dtypes.poison_value(dtype) if fill is None else fill
            data = np.full(shape, fv, dtype=sd)
            if fill is not None:
                data = dtypes.round_to(data, dtype)
        t = NkiTensor(shape, dtype, buf, data, pdim, name)
        weakref.finalize(t, rec.release)
        if self.loops and buf.kind in ON_CHIP:
            self.loops[-1].allocs.append(rec)
        t.created_in = {f.id: f.iter for f in self.loops if f.kind == "affine"}
        if buf.shared and self.instance == 0:
            self.shared.append(t)
        return t

    def input_tensor(self, arr: np.ndarray, name: str, mutable: bool = False) -> NkiTensor:
        """An HBM tensor holding a copy of kernel input ``arr``: immutable unless ``mutable``
        (parameter annotated ``nt.mutable_tensor``; written back to ``arr`` by :func:`run_kernel`)."""
        dt, data = dtypes.input_storage(np.asarray(arr), f"kernel input '{name}'")
        t = self.new_tensor(arr.shape, dt, "hbm", name=name, data=data)
        t.immutable = not mutable
        return t

    # ---- loops ----------------------------------------------------------------------------------
    def loop(self, kind, *args):
        """Generator behind nl.affine_range / sequential_range / static_range."""
        frame = LoopFrame(kind)
        self.loops.append(frame)
        try:
            for i in range(*args):
                frame.iter = i
                yield i
                frame.end_iteration()
        finally:
            frame.end_iteration()
            if frame in self.loops:
                self.loops.remove(frame)
            for r in frame.roots:
                r.marks_.pop(frame.id, None)

    def check_write_conflict(self, t: NkiTensor, idx, accumulate: bool, api: str) -> None:
        """Record a write of ``t[idx]`` by instruction ``api`` in every enclosing affine_range loop.

        Raises:
            err_unexpected_output_dependencies: when another iteration of such a loop wrote the same
                elements (a PSUM accumulation, ``accumulate=True`` in PSUM, is exempt).
        """
        root = t.root
        if accumulate and t.buffer.kind == "psum":
            return
        for f in self.loops:
            if f.kind != "affine":
                continue
            if root.created_in.get(f.id) == f.iter:
                continue   # allocated in this very iteration: private to it
            if f.id not in root.marks_:
                f.roots.append(root)
            marks = t.marks(f.id)
            region = marks[idx]
            bad = (region >= 0) & (region != f.iter)
            if np.any(bad):
                other = int(np.asarray(region)[np.asarray(bad)].flat[0])
                raise err_unexpected_output_dependencies(
                    f"'{api}' writes {t.describe()}: iterations {other} and {f.iter} of an "
                    f"affine_range loop write the same elements")
            marks[idx] = f.iter

    # ---- instructions ---------------------------------------------------------------------------
    def instruction(self, name: str, engine, cycles: float = 0.0, busy_ns: float | None = None,
                    latency_ns: float = 0.0) -> Instr:
        """Context for one instruction on ``engine`` costing ``cycles`` (or ``busy_ns``)."""
        if busy_ns is None:
            busy_ns = self.timeline.cycles_to_ns(engine, cycles) if engine else 0.0
        self.instructions += 1
        return Instr(self, name, engine, busy_ns, latency_ns)

    def _commit(self, ins: Instr):
        ready = 0.0
        for t, idx in ins.reads:
            if t.root.immutable or not t.root.aux_:
                continue
            r = t.aux("ready")[idx]
            if np.size(r):
                ready = max(ready, float(np.max(r)))
        for t, idx in ins.writes:
            r = t.aux("ready")[idx]
            if np.size(r):
                ready = max(ready, float(np.max(r)))
            if "read_done" in t.root.aux_:
                rd = t.aux("read_done")[idx]
                if np.size(rd):
                    ready = max(ready, float(np.max(rd)))
        start, done = self.timeline.schedule(ins.name, ins.engine, ins.busy_ns, ready, ins.latency_ns)
        end = start + ins.busy_ns
        for t, idx in ins.writes:
            t.aux("ready")[idx] = done
        for t, idx in ins.reads:
            if t.root.immutable:
                continue
            rd = t.aux("read_done")
            rd[idx] = np.maximum(rd[idx], end)

    # ---- SPMD -----------------------------------------------------------------------------------
    def program_id(self, axis: int) -> int:
        if not self.grid:
            if axis == 0:
                return 0
        if axis >= max(len(self.grid), 1):
            raise err_invalid_program_axis(f"program_id({axis}) with launch grid {list(self.grid)}")
        return self.program[axis]

    def num_programs(self, axes=None):
        g = self.grid or (1,)
        if axes is None:
            return int(np.prod(g))
        if isinstance(axes, (tuple, list)):
            for a in axes:
                if a >= len(g):
                    raise err_invalid_program_axis(f"num_programs({a}) with grid {list(g)}")
            return int(np.prod([g[a] for a in axes]))
        if axes >= len(g):
            raise err_invalid_program_axis(f"num_programs({axes}) with grid {list(g)}")
        return g[axes]


def _flatten_outputs(ret):
    if ret is None:
        return []
    if isinstance(ret, (tuple, list)):
        out = []
        for r in ret:
            out.extend(_flatten_outputs(r))
        return out
    if isinstance(ret, dict):
        return _flatten_outputs(list(ret.values()))
    return [ret]


def _rebuild(ret, conv):
    if isinstance(ret, tuple):
        return tuple(_rebuild(r, conv) for r in ret)
    if isinstance(ret, list):
        return [_rebuild(r, conv) for r in ret]
    if isinstance(ret, dict):
        return {k: _rebuild(v, conv) for k, v in ret.items()}
    return conv(ret)


def run_kernel(fn, args, kwargs, grid=(), platform=None):
    """Run kernel function ``fn`` on a fresh simulated NeuronCore.

    Args:
        fn: the kernel's Python function.
        args, kwargs: NumPy arrays become immutable HBM input tensors (parameters annotated
            ``nt.mutable_tensor``: writable, and written back into the caller's array after the run;
            returning one returns the caller's array); other values pass through.
        grid: SPMD launch grid, e.g. ``(2, 3)``; every program instance runs in turn.
        platform: "trn1" | "trn2" | "trn3" | "inf2", a runtime ``Platform`` row, or None for the
            default platform (see :mod:`.platforms`).

    Returns:
        ``(outputs, sim)`` where outputs mirror the kernel's return value with NumPy arrays.

    Raises ``err_tensor_output_not_written_to`` when a returned tensor was never written or the kernel
    returns nothing.
    """
    with _one_blas_thread():
        return _run_kernel(fn, args, kwargs, grid, platform)


def _one_blas_thread():
    """Tile matmuls are small (<= 128x128x512): multi-threaded BLAS only adds overhead (~6x slower
    on 2 cores), so limit BLAS to one thread while a kernel runs when threadpoolctl is available."""
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _BLAS_CONTROLLER = False
        else:   # scanning the loaded libraries costs ~ms: do it once per process, not per kernel call
            _BLAS_CONTROLLER = ThreadpoolController()
    if _BLAS_CONTROLLER is False:
        return contextlib.nullcontext()
    return _BLAS_CONTROLLER.limit(limits=1, user_api="blas")


_BLAS_CONTROLLER: Any = None  # None: not looked up yet; False: no threadpoolctl; else its controller


def _run_kernel(fn, args, kwargs, grid, platform):
    sim = NeuronCoreSim(platform)
    grid = tuple(int(g) for g in grid) if grid else ()
    params: Mapping[str, inspect.Parameter]
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}
    names = list(params)
    mutable_names = {n for n, p in params.items() if is_mutable_annotation(p.annotation)}
    mutables = []          # (simulator tensor, caller's array): written back after the run

    def convert(a, nm):
        if not isinstance(a, np.ndarray):
            return a
        t = sim.input_tensor(a, nm, mutable=nm in mutable_names)
        if nm in mutable_names:
            mutables.append((t, a))
        return t

    with sim.activate():
        conv_args = [convert(a, names[i] if i < len(names) else f"arg{i}") for i, a in enumerate(args)]
        conv_kwargs = {k: convert(v, k) for k, v in kwargs.items()}
        sim.grid = grid
        first_ret = None
        points = list(itertools.product(*[range(g) for g in grid])) if grid else [()]
        for n, pt in enumerate(points):
            sim.program = pt if grid else (0,)
            sim.instance = n
            sim.shared_idx = 0
            ret = fn(*conv_args, **conv_kwargs)
            if n == 0:
                first_ret = ret
        outs = _flatten_outputs(first_ret)
        if not outs:
            raise err_tensor_output_not_written_to(f"kernel '{getattr(fn, '__name__', fn)}' returned "
                                                   "no output tensor")
        for o in outs:
            if is_tile(o):
                t = o.tensor
                if t.buffer.kind in ON_CHIP:
                    raise err_unsupported_memory(f"kernel output {t.describe()} must be an HBM tensor "
                                                 "(nl.ndarray(..., buffer=nl.shared_hbm))")
                if not t.root.written:
                    raise err_tensor_output_not_written_to(f"output {t.describe()} was never written")

        for t, arr in mutables:            # in-place update of the caller's array (nt.mutable_tensor)
            if t.written:
                np.copyto(arr, dtypes.output_array(t.data, t.dtype), casting="unsafe")
        mutable_arrays = {id(t): arr for t, arr in mutables}

        def conv(o):
            if is_tile(o):
                v = as_view(o)
                if id(v.tensor) in mutable_arrays and isinstance(o, NkiTensor):
                    return mutable_arrays[id(v.tensor)]
                return dtypes.output_array(np.asarray(v.tensor.data[tuple(v.comps)]), v.tensor.dtype)
            return o
        result = _rebuild(first_ret, conv)
    return result, sim
