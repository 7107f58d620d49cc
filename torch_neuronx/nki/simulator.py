"""The simulated NeuronCores: memories, loops, instruction execution, kernel launches.

* :class:`Core` is one physical NeuronCore of the simulated platform: SBUF/PSUM accounting
  (:class:`~.memory.Allocator`), the cost-model :class:`~.cost_model.Timeline` of its engine queues,
  and the engine state that outlives one instruction (the Scalar and Vector Engine accumulator
  registers of ``reduce_cmd``, the random-number generators).
* :class:`NeuronCoreSim` is one *program instance* of a launch running on a core: the loop stack used
  for ``affine_range`` write-conflict detection, its SPMD coordinates, and the ``instruction`` /
  ``Instr.read`` / ``Instr.write`` protocol through which the instruction layer (:mod:`.instructions`,
  above this module) touches memory: reads and writes are checked (bounds under masks, immutability,
  loop conflicts), applied to the NumPy storage with one rounding to the destination's dtype, and timed.
* :class:`Launch` runs a kernel function over its grid. Program instances on the same core run one
  after the other; the programs of a logical NeuronCore with two cores (LNC=2: ``kernel[2]`` of the
  current front end, ``nl.nc(2)`` axes of the legacy one) run on two :class:`Core` s in two threads,
  handing control to each other at ``nisa.core_barrier`` / ``sendrecv`` / collectives, so both programs
  are simulated with their synchronisation. With one program per core (``kernel[2]``) the programs
  also interleave between synchronisation points: before each instruction, the program whose core's
  cost-model clock is earliest runs, so unsynchronised writes of the two cores to shared HBM land in
  the order the hardware's concurrent cores give them (:meth:`Launch.let_earlier_core_run`). HBM is
  shared by the programs (inputs, ``shared_hbm``).

Checks implemented here: the partition limit at allocation (``err_num_partition_exceed_arch_limit``),
PSUM/SBUF capacity (``err_buffer_capacity_exceeded``; SBUF overflow spills), bounds under masks
(``err_tensor_access_out_of_bound``), ``affine_range`` write-write conflicts
(``err_unexpected_output_dependencies``), read-only inputs, written and returned outputs
(``err_cannot_update_immutable_parameter``, ``err_tensor_output_not_written_to``), and poisoned fresh
allocations (NaN / 4) so reads of unwritten memory show.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from . import context, dtypes, scopes
from .cost_model import Timeline
from .errors import (err_buffer_capacity_exceeded, err_cannot_update_immutable_parameter, err_core_barrier_mismatch,
                     err_invalid_instruction_argument, err_invalid_program_axis,
                     err_leading_dimension_of_tensor_must_be_partition,
                     err_lifetime_conflict,
                     err_num_partition_exceed_arch_limit, err_unsupported_dtype,
                     err_shared_hbm_must_in_kernel_level, err_size_of_dimension_exceed_arch_limit,
                     err_store_dst_shape_smaller_than_other_shape, err_tensor_access_out_of_bound,
                     err_tensor_output_not_written_to, err_unexpected_output_dependencies,
                     err_unsupported_memory)
from .indexing import as_mask_array
from .memory import ON_CHIP, Allocator, PhysicalMap, Placement, as_buffer
from .ops import binary
from .platforms import get_platform
from .tile import Access, NkiTensor, ParDim, Storage, is_tile
from .typing import is_mutable_annotation, placeholder_spec

__all__ = ["Core", "NeuronCoreSim", "Instr", "Launch", "run_kernel", "LoopFrame", "nc_axis"]

_frame_ids = itertools.count()
_placed_ids = itertools.count(1)


class LoopFrame:
    """One active loop: kind 'affine' | 'sequential' | 'static', current iteration."""

    __slots__ = ("id", "kind", "iter", "roots", "allocs")

    def __init__(self, kind: str):
        self.id = next(_frame_ids)
        self.kind = kind
        self.iter = -1
        self.roots: list = []
        self.allocs: list = []      # allocations declared in the current iteration (released at its end)

    def end_iteration(self) -> None:
        for a in self.allocs:
            a.release()
        self.allocs.clear()


def _tile_broadcast(arr: Any, shape: tuple) -> np.ndarray:
    """Broadcast ``arr`` to ``shape`` the NKI way: dimensions align from the partition axis (left),
    missing trailing free dims count as size 1; equal element counts reshape."""
    a = np.asarray(arr)
    shape = tuple(shape)
    if a.shape == shape:
        return a
    if a.ndim < len(shape):
        a2 = a.reshape(a.shape + (1,) * (len(shape) - a.ndim))
    elif a.ndim > len(shape):
        extra = a.shape[len(shape):]
        a2 = a.reshape(a.shape[:len(shape)]) if all(s == 1 for s in extra) else a
    else:
        a2 = a
    try:
        return np.broadcast_to(a2, shape)
    except ValueError:
        if a.size == int(np.prod(shape, dtype=np.int64)) and (a.ndim == 0 or a.shape[0] == (shape[0] if shape else 1)):
            return a.reshape(shape)
        raise


class Instr:
    """Reads and writes of one instruction; timed on exit (see :meth:`NeuronCoreSim.instruction`)."""

    def __init__(self, sim: NeuronCoreSim, name: str, engine: str | None, busy_ns: float, latency_ns: float,
                 alternatives: tuple = (), cycles: float = 0.0):
        self.sim, self.name, self.engine = sim, name, engine
        self.busy_ns, self.latency_ns = busy_ns, latency_ns
        self.alternatives = alternatives   # other engines the compiler may place it on (cost model)
        self.cycles = cycles
        self.reads: list = []
        self.writes: list = []

    def __enter__(self) -> Instr:
        self.sim._instr_stack.append(self)
        return self

    def __exit__(self, et: Any, ev: Any, tb: Any) -> None:
        self.sim._instr_stack.pop()
        if et is None:
            self.sim._commit(self)

    def _resolve(self, x: NkiTensor, mask: Any, oob_skip: bool) -> tuple[Access, np.ndarray | None]:
        acc = x.access()
        for dep in acc.deps:
            if is_tile(dep):
                self.reads.append((dep.access().storage_access(), None))
        m = None
        if mask is not None:
            m = as_mask_array(mask, acc.shape)
            if m is None:
                from .errors import err_unsupported_expression_in_mask
                raise err_unsupported_expression_in_mask(
                    f"'{self.name}': mask of shape {list(np.shape(getattr(mask, 'values', mask)))} does not "
                    f"broadcast to the access shape {list(acc.shape)} of {x.describe()}")
        if acc.oob is not None:
            bad = acc.oob if m is None else (acc.oob & m)
            if np.any(bad):
                if not oob_skip:
                    raise err_tensor_access_out_of_bound(f"'{self.name}': {acc.oob_desc} "
                                                         f"({int(np.sum(bad))} element(s) unmasked)")
                keep = ~acc.oob
                m = keep if m is None else (m & keep)
        return acc, m

    def read(self, x: Any, mask: Any = None, *, raw: bool = False, oob_skip: bool = False) -> np.ndarray:
        """Values of tile ``x`` (view-shaped): float32 (engine input; packed MX types unpacked to a
        trailing axis of 4), or the storage values with ``raw=True``. Masked-off elements read as 0."""
        if not is_tile(x):
            raise err_unsupported_memory(f"'{self.name}': operand {x!r} is not a tile")
        if x.loop_op is not None:
            raise NotImplementedError(
                "nl.loop_reduce: its result must be assigned into the destination it reduces into "
                "(dst[...] = nl.loop_reduce(x, op, loop_indices)); using it as an operand is not supported by "
                "the torch_neuronx NKI simulator")
        x.fresh = False
        acc, m = self._resolve(x, mask, oob_skip)
        arr = acc.storage.flat(acc.dtype)
        vals = np.array(acc.get(arr), copy=True)
        if m is not None:
            vals[~m] = 0
        self.reads.append((acc.storage_access(), m))
        if raw:
            return vals
        return dtypes.to_f32(vals, acc.dtype)

    def write(self, dst: Any, values: Any, mask: Any = None, *, accumulate: bool = False,
              accumulate_op: Any = None, exempt: bool = False, oob_skip: bool = False) -> None:
        """Write ``values`` (float32 or integers, broadcast NKI-style to the view's shape) into
        ``dst`` under ``mask``, rounding once to ``dst``'s dtype.

        ``accumulate``: ``dst = dst <accumulate_op> values`` (default add). PSUM accumulation and
        ``exempt=True`` (an associative reduction into ``dst``) are exempt from the affine_range
        conflict check.

        Raises:
            err_cannot_update_immutable_parameter: ``dst`` is a kernel input not annotated mutable.
            err_store_dst_shape_smaller_than_other_shape: ``values`` does not broadcast to ``dst``.
        """
        st = dst.storage
        if st.immutable:
            self.sim.write_parameter(st, f"'{self.name}' writes input {dst.describe()}")
        acc, m = self._resolve(dst, mask, oob_skip)
        packed = dtypes.is_packed(acc.dtype)
        vshape = acc.shape + ((acc.dtype.count,) if packed and np.ndim(values) > len(acc.shape) else ())
        try:
            vals = _tile_broadcast(values, vshape)
        except ValueError:
            raise err_store_dst_shape_smaller_than_other_shape(
                f"'{self.name}': destination {dst.describe()} smaller than / not broadcastable from source "
                f"shape {list(np.shape(values))}") from None
        sacc = acc.storage_access()
        self.sim.check_write_conflict(st, sacc, m, accumulate or exempt, self.name, reduction=exempt)
        arr = st.flat(acc.dtype)
        if accumulate:
            old = dtypes.to_f32(np.asarray(acc.get(arr)), acc.dtype)
            vals = binary(accumulate_op or "add")(old, np.asarray(vals, dtype=np.float32))
        new = dtypes.from_f32(vals, acc.dtype, st.keep and dtypes.is_float(acc.dtype))
        if new.dtype != arr.dtype:
            new = new.astype(arr.dtype)
        acc.put(arr, np.asarray(new).reshape(acc.shape) if new.shape != acc.shape else new, m)
        st.written = True
        if st.buffer.kind == "psum":       # nc_matmul(accumulate=None) accumulates onto written elements
            sacc.put(st.aux_array("psum_written", 0.0, np.bool_), np.ones(sacc.shape, dtype=bool), m)
        self.writes.append((sacc, m))


class Core:
    """One physical NeuronCore of the platform: memory accounting, engine queues and engine state.

    Attributes:
        index: core index within the logical NeuronCore (0 or 1).
        allocator, timeline: SBUF/PSUM accounting and the cost-model queues.
        act_regs / dve_regs: the Scalar / Vector Engine accumulator registers (one fp32 per partition).
        rng: the engines' random generators (seeded per core; ``nisa.set_rng_seed`` reseeds).
    """

    def __init__(self, platform: Any, index: int = 0):
        self.platform = platform
        self.index = index
        self.allocator = Allocator(platform)
        self.timeline = Timeline(platform)
        p = platform.core.partitions
        self.act_regs = np.zeros(p, dtype=np.float32)
        self.dve_regs = np.zeros(p, dtype=np.float32)
        self.rng = {"vector": np.random.default_rng(1234 + index), "gpsimd": np.random.default_rng(4321 + index)}
        # tensors the kernel placed itself (nl.ndarray(address=...)): storage -> [id, partition offset,
        # byte offset, itemsize, bool per element "written by this tensor"]; see PhysicalMap
        self.placed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.placed_names: dict[int, str] = {}
        self.phys = PhysicalMap(p)


def _dimension(size: Any, shape: Any, name: str) -> int:
    """One dimension of a new tensor's shape as an ``int``: a Python / NumPy integer, or a float with an
    integral value (``n / 2`` in a kernel).

    Raises:
        err_invalid_instruction_argument: a negative, fractional or non-numeric size (``int()`` would
            truncate ``4.5`` to a 4-element axis with no error).
    """
    value: Any = None
    if isinstance(size, (int, np.integer)):
        value = int(size)
    elif isinstance(size, (float, np.floating)):
        value = float(size)
    elif not isinstance(size, (str, bytes)) and hasattr(size, "__int__"):
        value = int(size)                                 # a one-element value / register read as an int
    if value is None or value != value or value < 0 or (isinstance(value, float) and not value.is_integer()):
        raise err_invalid_instruction_argument(
            f"shape {tuple(shape)!r} of '{name or 'tensor'}': every dimension must be a non-negative integer, "
            f"got {size!r}")
    return int(value)


class NeuronCoreSim:
    """One program instance of a launch, running on a :class:`Core`.

    Args:
        platform: "trn1" | "trn2" | "trn3" | "inf2", a ``torch_neuronx.runtime.platforms.Platform``,
            or None for the default (the ``neuron`` device's platform; see :mod:`.platforms`).
        launch: the :class:`Launch` (None: a stand-alone simulator, e.g. for tests of one instruction).
        core: the :class:`Core` it runs on (default: a new one).
    """

    def __init__(self, platform: Any = None, launch: Launch | None = None, core: Core | None = None,
                 program: tuple = (0,), instance: int = 0):
        self.platform = get_platform(platform)
        self.core = core or Core(self.platform)
        self.launch = launch
        self.loops: list = []
        self.program = program
        self.instance = instance
        self.shared_idx = 0
        self.keep = launch.keep if launch else dtypes.get_keep_fp32(False)
        self.frontend = launch.frontend if launch else "legacy"
        self._instr_stack: list[Instr] = []

    # convenient forwards
    @property
    def allocator(self) -> Allocator:
        return self.core.allocator

    @property
    def timeline(self) -> Timeline:
        return self.core.timeline

    @property
    def grid(self) -> tuple:
        return self.launch.grid if self.launch else ()

    @property
    def instructions(self) -> int:
        return self.launch.instructions if self.launch else self._own_instructions

    _own_instructions = 0

    # ---- activation -----------------------------------------------------------------------------
    def activate(self) -> contextlib.AbstractContextManager:
        """Context manager making this simulator the current one (:func:`.context.current`)."""
        return context.activate(self)

    # ---- allocation -----------------------------------------------------------------------------
    def new_tensor(self, shape: Any, dtype: Any, buffer: Any = None, name: str = "", fill: Any = None,
                   data: np.ndarray | None = None) -> NkiTensor:
        """Allocate a tensor; poisoned (NaN / 4) unless ``fill`` or ``data`` (flat storage) is given.

        Raises:
            err_num_partition_exceed_arch_limit: P > 128 in SBUF/PSUM.
            err_size_of_dimension_exceed_arch_limit: a legacy PSUM tile over one 2 KiB bank.
            err_leading_dimension_of_tensor_must_be_partition: a block dimension in the current front end.
            err_shared_hbm_must_in_kernel_level, err_buffer_capacity_exceeded.
        """
        buf = as_buffer(buffer)
        dtype = dtypes.as_dtype(dtype if dtype is not None else dtypes.float32)
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        pdim = next((i for i, s in enumerate(shape) if isinstance(s, ParDim)), 0)
        shape = tuple(_dimension(s, shape, name) for s in shape)
        if buf.kind in ON_CHIP and not shape:
            shape = (1, 1)                                  # on-chip tensors are >= 2-D
        elif buf.kind in ON_CHIP and len(shape) == 1:
            shape = (shape[0], 1)
        desc = f"'{name or 'tile'}' {list(shape)} {dtypes.dtype_name(dtype)} in {buf.name}"
        isz = dtypes.itemsize(dtype)
        spill = 0
        if buf.kind in ON_CHIP:
            if pdim and self.frontend == "current":
                raise err_leading_dimension_of_tensor_must_be_partition(f"{desc}: partition dim at {pdim}")
            p = shape[pdim]
            if p > self.platform.core.partitions:
                raise err_num_partition_exceed_arch_limit(
                    f"{desc}: {p} partitions > {self.platform.core.partitions}")
            free = int(np.prod(shape[pdim + 1:], dtype=np.int64)) if len(shape) > pdim + 1 else 1
            bank = self.platform.core.psum_bytes_per_partition // max(self.platform.core.psum_banks, 1)
            if buf.kind == "psum" and self.frontend == "legacy" and free * isz > bank:
                raise err_size_of_dimension_exceed_arch_limit(
                    f"{desc}: PSUM tile free size {free} x {isz} bytes > one {bank}-byte bank "
                    "(nl.tile_size.psum_fmax fp32 elements)")
            blocks = int(np.prod(shape[:pdim], dtype=np.int64)) if pdim else 1
            # legacy block dims are logical: PSUM blocks are allocated by liveness (block-dimension
            # migration guide), so a PSUM block tensor is charged one block; SBUF ones fully (spilled)
            nbytes = (1 if buf.kind == "psum" else blocks) * free * isz
        else:
            nbytes = int(np.prod(shape, dtype=np.int64)) * isz if shape else isz
        if buf.shared and data is None:
            if self.loops:
                raise err_shared_hbm_must_in_kernel_level(f"{desc} created inside a loop")
            if self.launch is not None:
                t = self.launch.shared_tensor(self, shape, dtype, name)
                if t is not None:
                    return t
        if isinstance(buffer, Placement) and "address" in buffer.fields and buf.kind in ON_CHIP:
            # an explicit address (current nl.ndarray(address=...)): the kernel places, and may alias,
            # its tiles itself (nki-library's attention reuses four PSUM banks for many tiles), so the
            # tile is checked against the buffer's end instead of charged to the automatic pool
            cap = self.allocator.capacity[buf.kind]
            off = int(buffer.fields["address"][1]) if len(buffer.fields["address"]) > 1 else 0
            if off < 0 or off + nbytes > cap:
                raise err_buffer_capacity_exceeded(
                    f"{desc} at free offset {off} needs bytes [{off}, {off + nbytes}) of a {cap}-byte "
                    f"{buf.kind} partition")
            nbytes = 0
        rec = self.allocator.alloc(buf.kind, nbytes, desc, shape[pdim] if buf.kind in ON_CHIP else 1)
        spill = rec.spill_bytes
        if data is None:
            sd = dtypes.storage_dtype(dtype, self.keep)
            size = int(np.prod(shape, dtype=np.int64)) if shape else 1
            if fill is None:
                data = np.full(size, dtypes.poison_value(dtype), dtype=sd)
            else:
                data = dtypes.from_f32(np.full(size, fill, dtype=np.float64), dtype, self.keep)
        st = Storage(shape, dtype, buf, data, self.keep, pdim, name, sim=self)
        if isinstance(buffer, Placement):
            st.placement = buffer
            if "address" in buffer.fields and buf.kind in ON_CHIP and not pdim:
                uid = next(_placed_ids)
                addr = tuple(buffer.fields["address"])
                self.core.placed[st] = [uid, int(addr[0]) if addr else 0, int(addr[1]) if len(addr) > 1 else 0,
                                        isz, np.zeros(st.data.size, dtype=bool)]
                self.core.placed_names[uid] = f"{desc} at address {addr}"
        if buf.kind == "psum" and rec.nbytes:
            st.alloc = rec
        t = NkiTensor.full_view(st)
        weakref.finalize(st, rec.release)
        if self.loops and buf.kind in ON_CHIP:
            self.loops[-1].allocs.append(rec)
        st.created_in = {f.id: f.iter for f in self.loops if f.kind == "affine"}
        if buf.shared and self.launch is not None:
            self.launch.register_shared(self, t)
        if spill:
            self.charge_spill(spill, desc)
        return t

    def write_parameter(self, st: Storage, what: str) -> None:
        """A write into kernel input ``st`` (not annotated mutable). The legacy front end refuses it;
        the current one allows it for an input the kernel returns (AWS's simulator runs nki-library's
        kernels that write their ``*_out`` parameters and return them), checked after the run.

        Raises:
            err_cannot_update_immutable_parameter: legacy front end.
        """
        if self.frontend != "current":
            raise err_cannot_update_immutable_parameter(what)
        st.immutable = False
        st.param_written = True

    def charge_spill(self, nbytes: int, what: str) -> None:
        """Charge an SBUF spill of ``nbytes`` (written to HBM and read back) to the DMA queues."""
        from .cost_model import dma_fixed_latency_ns, dma_time_ns
        p = self.platform
        self.timeline.schedule("sbuf_spill_reload", "dma", dma_time_ns(2 * nbytes, p), 0.0,
                               dma_fixed_latency_ns(p))
        self.timeline.dma_bytes += 2 * nbytes
        self.timeline.spilled_bytes += nbytes

    def input_tensor(self, arr: np.ndarray, name: str, mutable: bool = False) -> NkiTensor:
        """An HBM tensor holding a copy of kernel input ``arr``: immutable unless ``mutable``
        (parameter annotated ``nt.mutable_tensor``; written back to ``arr`` by :func:`run_kernel`)."""
        dt, data = dtypes.input_storage(np.asarray(arr), f"kernel input '{name}'", self.keep)
        t = self.new_tensor(arr.shape, dt, "hbm", name=name, data=data)
        t.storage.immutable = not mutable
        t.storage.written = True
        return t

    # ---- loops ----------------------------------------------------------------------------------
    def loop(self, kind: str, *args: int) -> Iterator[int]:
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
                r.marks.pop(frame.id, None)

    def check_write_conflict(self, st: Storage, sacc: Access, m: np.ndarray | None, accumulate: bool,
                             api: str, reduction: bool = False) -> None:
        """Record a write of ``sacc`` (storage units) by ``api`` in every enclosing affine_range loop.

        Raises:
            err_unexpected_output_dependencies: another iteration of such a loop wrote the same elements
                (PSUM accumulation, ``accumulate=True`` in PSUM, is exempt, and so is an associative
                ``reduction`` into any buffer: "associative reductions are not considered loop carried
                dependencies", legacy nki.language.affine_range page).
        """
        if (accumulate and st.buffer.kind == "psum") or reduction:
            return
        for f in self.loops:
            if f.kind != "affine" or st.created_in.get(f.id) == f.iter:
                continue       # allocated in this very iteration: private to it
            if f.id not in st.marks:
                f.roots.append(st)
            marks = st.marks_array(f.id)
            region = np.asarray(sacc.get(marks))       # iteration + 1 that wrote each element, 0: none
            bad = (region > 0) & (region != f.iter + 1)
            if m is not None:
                bad &= m
            if np.any(bad):
                other = int(region[bad].flat[0]) - 1
                raise err_unexpected_output_dependencies(
                    f"'{api}' writes {st.describe()}: iterations {other} and {f.iter} of an affine_range "
                    "loop write the same elements (use nl.sequential_range for a loop-carried write)")
            sacc.put(marks, np.full(sacc.shape, f.iter + 1, dtype=np.int32), m)

    # ---- instructions ---------------------------------------------------------------------------
    def instruction(self, name: str, engine: str | None, cycles: float = 0.0, busy_ns: float | None = None,
                    latency_ns: float = 0.0, alternatives: Sequence[str] = ()) -> Instr:
        """Context for one instruction on ``engine`` costing ``cycles`` (or ``busy_ns``).

        ``alternatives``: other engines that can run it when the kernel left the choice to the compiler
        (``engine=nki.isa.unknown_engine``, "compiler selects best engine based on engine workload":
        the nki.isa tensor_copy / memset pages); the cost model then places it on whichever of
        ``engine`` and ``alternatives`` finishes it first (``engine`` on a tie), with the same cycle count
        at that engine's clock. Values do not depend on the engine chosen."""
        if busy_ns is None:
            busy_ns = self.timeline.cycles_to_ns(engine, cycles) if engine and engine != "dma" else 0.0
        if self.launch is not None:
            self.launch.instructions += 1
            if self.launch.interleave and not self._instr_stack:
                self.launch.let_earlier_core_run(self)
        else:
            self._own_instructions += 1
        return Instr(self, name, engine, busy_ns, latency_ns, tuple(alternatives), cycles)

    def read_index_values(self, tile: NkiTensor) -> np.ndarray:
        """Integer values of an index tile (indirect addressing), read now; recorded as a read of the
        instruction running, if any.

        Raises:
            err_unsupported_dtype: a float index tile. A DMA's index is a row index read as an integer:
                AWS's ``dma_copy`` page gives ``vector_offset`` as a tensor "containing one row index per
                partition" (``aws-neuron/aws-neuron-sdk@81ce03a:nki/api/nki/isa/__init__.py:303``), its DGE
                deep dive requires the index tensor's "dtype ``uint32``" (``nki/deep-dives/nki-dge.rst:99``),
                and every AWS example indexes with int32 / uint32 tiles; a float tile's bit pattern is not
                its value, so a kernel indexing with one reads other rows on a NeuronCore.
        """
        acc = tile.access()
        if dtypes.is_float(acc.dtype):
            raise err_unsupported_dtype(f"index tile {tile.describe()} for indirect addressing is "
                                        f"{dtypes.dtype_name(acc.dtype)}; an index tile must have an integer dtype "
                                        "(int32 / uint32): cast it with nisa.tensor_copy into an int32 tile")
        vals = np.asarray(acc.get(acc.storage.flat(acc.dtype)))
        if self._instr_stack:
            self._instr_stack[-1].reads.append((acc.storage_access(), None))
        return np.asarray(vals).astype(np.int64)

    def _placed_bytes(self, sacc: Access, m: np.ndarray | None, info: list) -> tuple:
        """Storage elements of access ``sacc`` (under mask ``m``) and the (partition, byte) of each of
        their bytes in the memory, for a placed tensor ``info`` (see :attr:`Core.placed`)."""
        fi = sacc.flat_indices()
        if m is not None and np.shape(m) == fi.shape:
            fi = fi[m]
        fi = np.asarray(fi, dtype=np.int64).ravel()
        _uid, p0, f0, isz, _w = info
        ps = max(int(sacc.storage.pstride), 1)
        part = p0 + fi // ps
        byte = f0 + (fi % ps) * isz
        rows = np.repeat(part, isz)
        cols = (byte[:, None] + np.arange(isz, dtype=np.int64)[None, :]).ravel()
        return fi, rows, cols

    def _check_placed(self, ins: Instr) -> None:
        """The lifetime rule of placed tensors (:class:`~.memory.PhysicalMap`): a read of bytes the
        tensor wrote itself, overwritten since by another placed tensor, raises; then the instruction's
        writes are recorded.

        Raises:
            err_lifetime_conflict: naming both tensors and the first clobbered partition / byte.
        """
        placed = self.core.placed
        for sacc, m in ins.reads:
            info = placed.get(sacc.storage)
            if info is None:
                continue
            fi, rows, cols = self._placed_bytes(sacc, m, info)
            other = self.core.phys.foreign(sacc.storage.buffer.kind, rows, cols, info[0])
            bad = (other != 0) & np.repeat(info[4][fi], info[3])
            if np.any(bad):
                k = int(np.argmax(bad))
                raise err_lifetime_conflict(
                    f"'{ins.name}' reads {self.core.placed_names.get(info[0], sacc.storage.name)}, whose "
                    f"partition {int(rows[k])} byte {int(cols[k])} (and {int(bad.sum()) - 1} more) was "
                    f"overwritten by {self.core.placed_names.get(int(other[k]), 'another placed tensor')} "
                    "since this tensor wrote it: on a NeuronCore the read returns that tensor's data (the "
                    "simulator keeps one copy per tensor and would not); give tensors alive at the same "
                    "time addresses that do not overlap")
        for sacc, m in ins.writes:
            info = placed.get(sacc.storage)
            if info is None:
                continue
            fi, rows, cols = self._placed_bytes(sacc, m, info)
            self.core.phys.write(sacc.storage.buffer.kind, rows, cols, info[0])
            info[4][fi] = True

    def _commit(self, ins: Instr) -> None:
        if self.core.placed:
            self._check_placed(ins)
        for sacc, _m in ins.reads + ins.writes:
            rec = sacc.storage.alloc
            if rec is not None:
                rec.allocator.touch(rec)
        ready = 0.0
        for sacc, m in ins.reads:
            st = sacc.storage
            if st.immutable or not st.aux:
                continue
            r = np.asarray(sacc.get(st.aux_array("ready")))
            if m is not None and r.shape == m.shape:
                r = r[m]
            if r.size:
                ready = max(ready, float(np.max(r)))
        for sacc, _m in ins.writes:
            st = sacc.storage
            r = np.asarray(sacc.get(st.aux_array("ready")))
            if r.size:
                ready = max(ready, float(np.max(r)))
            if "read_done" in st.aux:
                rd = np.asarray(sacc.get(st.aux["read_done"]))
                if rd.size:
                    ready = max(ready, float(np.max(rd)))
        if ins.alternatives and ins.engine is not None:
            ins.engine, ins.busy_ns = self.timeline.earliest_engine(
                (ins.engine, *ins.alternatives), ins.cycles, ready)
        queue = ""
        if ins.engine == "dma":       # the DMA queue: transfers into HBM (stores) or the others (loads)
            queue = "to_hbm" if any(sacc.storage.buffer.kind == "hbm" for sacc, _m in ins.writes) else "to_chip"
        start, done = self.timeline.schedule(ins.name, ins.engine, ins.busy_ns, ready,  # type: ignore[arg-type]
                                             ins.latency_ns, queue)
        end = start + ins.busy_ns
        for sacc, m in ins.writes:
            sacc.put(sacc.storage.aux_array("ready"), np.full(sacc.shape, done), m)
        for sacc, m in ins.reads:
            st = sacc.storage
            if st.immutable:
                continue
            rd = st.aux_array("read_done")
            cur = np.asarray(sacc.get(rd))
            sacc.put(rd, np.maximum(cur, end), m)

    # ---- SPMD -----------------------------------------------------------------------------------
    def program_id(self, axis: Any) -> int:
        """Index of this program instance along launch-grid ``axis``.

        Raises:
            err_invalid_program_axis: ``axis`` is not an integer, or >= the grid's rank.
        """
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
            raise err_invalid_program_axis(f"program_id({axis!r}): the axis must be an integer")
        axis = int(axis)
        grid = self.grid
        if not grid and axis == 0:
            return 0
        if axis >= max(len(grid), 1) or axis < 0:
            raise err_invalid_program_axis(f"program_id({axis}) with launch grid {list(grid)}")
        return int(self.program[axis])

    def num_programs(self, axes: Any = None) -> int:
        """Size of the launch grid along ``axes`` (all axes multiplied when None)."""
        g = tuple(int(x) for x in self.grid) or (1,)
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

    # ---- multi-core synchronisation (LNC=2) -------------------------------------------------------
    def barrier(self, cores: Sequence[int], what: str) -> None:
        """Block until every program of ``cores`` reached a barrier (``nisa.core_barrier``)."""
        if self.launch is None:
            if tuple(cores) not in ((0,), ()):
                raise err_core_barrier_mismatch(f"{what}: no other core in this run")
            return
        self.launch.barrier(self, tuple(int(c) for c in cores), what)


def _empty_grid(grid: Sequence) -> bool:
    """True when a dimension of the launch grid is a count of 0 (no program instance runs)."""
    for g in grid:
        if nc_axis(g):
            continue
        try:
            if int(g) == 0:
                return True
        except (TypeError, ValueError):
            continue
    return False


def nc_axis(g: Any) -> bool:
    """True for a launch-grid axis spread over NeuronCores (``nl.nc(2)``)."""
    return bool(getattr(g, "is_nc", False))


class _Baton:
    """Cooperative scheduling of a launch's program threads: exactly one runs at a time."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.owner: int | None = None


class Launch:
    """One kernel launch: the grid, its cores and program instances, shared HBM and synchronisation.

    Attributes:
        grid: launch grid (ints; ``nl.nc`` axes marked).
        cores: the :class:`Core` objects (one, or two with LNC=2).
        keep: fp32 storage mode of this run (see :mod:`.dtypes`).
        frontend: "legacy" or "current" (rules that differ between AWS's two front ends).
        instructions: instructions executed.
    """

    def __init__(self, platform: Any, grid: tuple, keep: bool, frontend: str, lnc: int = 1):
        self.platform = get_platform(platform)
        self.grid = grid
        self.keep = keep
        self.frontend = frontend
        self.instructions = 0
        self.lnc = lnc
        self.cores = [Core(self.platform, i) for i in range(lnc)]
        self.shared: list[NkiTensor] = []
        self.sims: list[NeuronCoreSim] = []
        self._baton = _Baton()
        self._waiting: dict[int, tuple] = {}      # instance -> (barrier key, generation)
        self._barriers: dict[tuple, list] = {}
        self._mail: dict[tuple, list] = {}
        self._done: set[int] = set()
        self._order: list[int] = []
        self._aborted = False
        self.interleave = False     # set by run(): one program per core, interleaved by simulated time

    # ---- merged view for the cost model ------------------------------------------------------------
    @property
    def timeline(self) -> Timeline:
        """The cores' timelines merged (latency = the slowest core)."""
        if len(self.cores) == 1:
            return self.cores[0].timeline
        return Timeline.merged([c.timeline for c in self.cores])

    @property
    def allocator(self) -> Allocator:
        return self.cores[0].allocator

    # ---- shared HBM ----------------------------------------------------------------------------------
    def shared_tensor(self, sim: NeuronCoreSim, shape: tuple, dtype: Any, name: str) -> NkiTensor | None:
        """The ``shared_hbm`` tensor program ``sim`` creates next, if an earlier program made it."""
        i = sim.shared_idx
        sim.shared_idx += 1
        if i < len(self.shared):
            t = self.shared[i]
            if t.shape != tuple(shape) or t.dtype != dtype:
                raise err_invalid_program_axis(
                    f"program {sim.program} created shared_hbm '{name}' {list(shape)}, another program created "
                    f"{t.describe()} at the same place (every program must create the same shared_hbm tensors)")
            return t
        return None

    def register_shared(self, sim: NeuronCoreSim, t: NkiTensor) -> None:
        self.shared.append(t)

    # ---- synchronisation ------------------------------------------------------------------------------
    def _yield_to_next(self, me: int) -> None:
        """Hand the baton to the next program that can run (round robin); None when none can."""
        order = self._order
        n = len(order)
        pos = order.index(me) if me in order else -1
        for k in range(1, n + 1):
            cand = order[(pos + k) % n]
            if cand in self._done or cand in self._waiting:
                continue
            self._baton.owner = cand
            self._baton.cond.notify_all()
            return
        self._baton.owner = None
        self._baton.cond.notify_all()

    def _wait_turn(self, me: int, what: str) -> None:
        """Block (baton lock held) until this program may run again."""
        cond = self._baton.cond
        while self._baton.owner != me or me in self._waiting:
            if self._aborted:
                raise _Aborted()
            if self._baton.owner is None:
                if me in self._waiting:
                    self._aborted = True
                    cond.notify_all()
                    raise err_core_barrier_mismatch(
                        f"{what}: deadlock, every other program finished or waits elsewhere")
                self._baton.owner = me
                break
            cond.wait()

    def barrier(self, sim: NeuronCoreSim, cores: tuple, what: str) -> None:
        """``core_barrier``: wait until the programs running on every core of ``cores`` arrived.

        Raises:
            err_core_barrier_mismatch: cores outside the launch, or a deadlock.
        """
        if self.lnc == 1:
            if cores not in ((0,), ()):
                raise err_core_barrier_mismatch(f"{what} with cores={cores}: the launch has one core "
                                                "(launch the kernel as kernel[2] for LNC=2)")
            return
        if any(c >= self.lnc for c in cores) or sim.core.index not in cores:
            raise err_core_barrier_mismatch(f"{what} with cores={cores} on core {sim.core.index} of {self.lnc}")
        key = ("barrier", cores)
        me = sim.instance
        with self._baton.cond:
            arrived = self._barriers.setdefault(key, [])
            arrived.append(sim)
            if {s.core.index for s in arrived} >= set(cores):
                for s in arrived:
                    self._waiting.pop(s.instance, None)
                del self._barriers[key]
                t = max(self.cores[c].timeline.now() for c in cores)
                for c in cores:        # every participating core waits for the latest arrival
                    self.cores[c].timeline.advance_all(t)
            else:
                self._waiting[me] = key
                self._yield_to_next(me)
                self._wait_turn(me, what)

    def send(self, sim: NeuronCoreSim, key: tuple, payload: Any) -> None:
        """Post ``payload`` to mailbox ``key`` (sendrecv / collectives); wakes its receiver."""
        with self._baton.cond:
            self._mail.setdefault(key, []).append(payload)
            for w, k in list(self._waiting.items()):
                if k == ("mail", key):
                    self._waiting.pop(w)

    def recv(self, sim: NeuronCoreSim, key: tuple, what: str) -> Any:
        """Take the first payload of mailbox ``key``, letting the other programs run until it arrives.

        Raises:
            err_core_barrier_mismatch: nothing is ever sent (deadlock).
        """
        me = sim.instance
        with self._baton.cond:
            while not self._mail.get(key):
                if self.lnc == 1 and len(self._order) <= 1:
                    raise err_core_barrier_mismatch(f"{what}: nothing was sent to this core (one-core launch)")
                self._waiting[me] = ("mail", key)
                self._yield_to_next(me)
                self._wait_turn(me, what)
            return self._mail[key].pop(0)

    def let_earlier_core_run(self, sim: NeuronCoreSim) -> None:
        """Before ``sim`` issues its next instruction, hand control to the program of another core whose
        simulated clock (:meth:`.cost_model.Timeline.now`) is earlier, and wait until it is this
        program's turn again.

        On hardware the cores of a logical NeuronCore run at the same time, so between two
        synchronisation points their instructions interleave by time. Running one core up to its
        next ``core_barrier`` before the other starts would put the other core's early writes to
        shared HBM (e.g. zeroing its share of an output) after this core's later writes to the same
        elements, a silent wrong result; interleaving by the cost model's clocks keeps the order
        the hardware has.
        """
        mine = sim.core.timeline.now()
        best: NeuronCoreSim | None = None
        for s in self.sims:
            if s.core is sim.core or s.instance in self._done or s.instance in self._waiting:
                continue
            t = s.core.timeline.now()
            if t < mine and (best is None or t < best.core.timeline.now()):
                best = s
        if best is None:
            return
        me = sim.instance
        with self._baton.cond:
            self._baton.owner = best.instance
            self._baton.cond.notify_all()
            self._wait_turn(me, "instruction issue")

    # ---- running ---------------------------------------------------------------------------------------
    def run(self, fn: Callable, make_args: Callable[[NeuronCoreSim], tuple]) -> Any:
        """Run ``fn`` for every program instance; return the first instance's return value."""
        if self.frontend == "legacy":       # AWS's tensor scope rule (err_local_variable_used_out_of_scope)
            fn = functools.partial(scopes.call, fn)
        grid = self.grid
        points = list(itertools.product(*[range(int(g)) for g in grid])) if grid else [(0,)]
        nc_axes = [i for i, g in enumerate(grid) if nc_axis(g)]
        sims = []
        for n, pt in enumerate(points):
            if self.lnc > 1:
                core_idx = (pt[nc_axes[0]] if nc_axes else n) % self.lnc
            else:
                core_idx = 0
            sims.append(NeuronCoreSim(self.platform, self, self.cores[core_idx], tuple(pt), n))
        self.sims = sims
        self.interleave = self.lnc > 1 and len({id(s.core) for s in sims}) == len(sims)
        if self.lnc == 1:
            first = None
            for sim in sims:
                with sim.activate():
                    args, kwargs = make_args(sim)
                    ret = fn(*args, **kwargs)
                if sim.instance == 0:
                    first = ret
            return first
        return self._run_threads(fn, make_args, sims)

    def _run_threads(self, fn: Callable, make_args: Callable, sims: list) -> Any:
        results: dict[int, Any] = {}
        errors: dict[int, BaseException] = {}
        self._order = [s.instance for s in sims]
        cond = self._baton.cond

        def body(sim: NeuronCoreSim) -> None:
            me = sim.instance
            try:
                with cond:
                    self._wait_turn(me, "program start")
                with sim.activate():
                    args, kwargs = make_args(sim)
                    results[me] = fn(*args, **kwargs)
            except _Aborted:
                pass
            except BaseException as e:     # noqa: BLE001 -- re-raised in the launching thread
                errors[me] = e
            finally:
                with cond:
                    self._done.add(me)
                    if errors:             # stop the others: fail fast
                        self._aborted = True
                        cond.notify_all()
                    else:
                        self._yield_to_next(me)
        threads = [threading.Thread(target=body, args=(s,), name=f"nki-program-{s.instance}", daemon=True)
                   for s in sims]
        with cond:
            self._baton.owner = sims[0].instance
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if errors:
            raise errors[min(errors)]
        return results.get(0)


class _Aborted(BaseException):
    """Unwinds the other programs of a launch after one of them failed."""


def _flatten_outputs(ret: Any) -> list:
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


def _rebuild(ret: Any, conv: Callable) -> Any:
    if isinstance(ret, tuple):
        return tuple(_rebuild(r, conv) for r in ret)
    if isinstance(ret, list):
        return [_rebuild(r, conv) for r in ret]
    if isinstance(ret, dict):
        return {k: _rebuild(v, conv) for k, v in ret.items()}
    return conv(ret)


def run_kernel(fn: Callable, args: Sequence, kwargs: Mapping, grid: tuple = (), platform: Any = None,
               *, frontend: str = "legacy", keep: bool | None = None, lnc: int = 1,
               params_writable: bool = False, placeholders: bool = False) -> tuple[Any, Launch]:
    """Run kernel function ``fn`` on fresh simulated NeuronCores.

    Args:
        fn: the kernel's Python function.
        args, kwargs: NumPy arrays become immutable HBM input tensors (parameters annotated
            ``nt.mutable_tensor``: writable, written back into the caller's array after the run;
            returning one returns the caller's array); other values pass through.
        grid: launch grid, e.g. ``(2, 3)``; ``nl.nc`` axes run on separate cores.
        platform: "trn1" | "trn2" | "trn3" | "inf2", a runtime ``Platform`` row, or None.
        frontend: "legacy" or "current": the rules of AWS's front end the kernel is written for.
        keep: fp32 storage (None: the :mod:`.dtypes` switch, default precise).
        lnc: cores of the logical NeuronCore (1 or 2).
        params_writable: every array parameter is writable and written back (``nki.trace`` kernels,
            ``kernel_return=False``); the kernel may then return nothing.
        placeholders: accept ``nt.tensor[shape, dtype]`` placeholder arguments and run them as zeros
            (``nki.benchmark`` / ``nki.profile``, whose pages say the device run does not use the
            inputs' values and its outputs are undefined).

    Returns:
        ``(outputs, launch)``: outputs mirror the kernel's return value with NumPy arrays.

    Raises:
        err_tensor_output_not_written_to: a returned tensor was never written, or nothing returned.
        TypeError: a placeholder argument when ``placeholders`` is False (a kernel that computes
            values needs NumPy arrays, as ``nki.baremetal`` / ``nki.simulate_kernel`` say).
    """
    with _one_blas_thread():
        return _run_kernel(fn, args, kwargs, grid, platform, frontend, keep, lnc, params_writable, placeholders)


def _one_blas_thread() -> Any:
    """Tile matmuls are small (<= 128x128x512): multi-threaded BLAS only adds overhead (~6x slower on
    2 cores), so limit BLAS to one thread while a kernel runs when threadpoolctl is available."""
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


def _run_kernel(fn: Callable, args: Sequence, kwargs: Mapping, grid: tuple, platform: Any, frontend: str,
                keep: bool | None, lnc: int, params_writable: bool,
                allow_placeholders: bool = False) -> tuple[Any, Launch]:
    keep_mode = dtypes.get_keep_fp32(False) if keep is None else keep
    launch = Launch(platform, tuple(grid), keep_mode, frontend, lnc)
    params: Mapping[str, inspect.Parameter]
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}
    names = list(params)
    mutable_names = {n for n, p in params.items() if params_writable or is_mutable_annotation(p.annotation)}
    inputs: dict[int, NkiTensor] = {}
    placeholders: dict[int, Any] = {}   # argument -> itself, or zeros for an nt.tensor[shape, dtype] placeholder
    mutables: list = []          # (simulator tensor, caller's array): written back after the run

    def make_args(sim: NeuronCoreSim) -> tuple:
        def convert(a: Any, nm: str, key: int) -> Any:
            if key not in placeholders:
                spec = placeholder_spec(a)
                if spec is not None and not allow_placeholders:
                    raise TypeError(
                        f"kernel argument '{nm}' is the placeholder {a!r}: a kernel run that computes values "
                        "needs NumPy arrays (nki.jit / nki.baremetal / nki.simulate_kernel); placeholders are "
                        f"accepted only by nki.benchmark and nki.profile. Pass e.g. np.zeros({list(spec[0])}, "
                        "dtype=...) instead")
                placeholders[key] = a if spec is None else np.zeros(spec[0], dtype=dtypes.np_dtype(spec[1]))
            a = placeholders[key]
            if isinstance(a, (list, tuple)) and any(isinstance(x, np.ndarray) for x in a):
                return type(a)(convert(x, f"{nm}[{i}]", key * 1000 + i + 1) for i, x in enumerate(a))
            if not isinstance(a, np.ndarray):
                return a
            if key not in inputs:
                with sim.activate():
                    t = sim.input_tensor(a, nm, mutable=params_writable or nm.split("[")[0] in mutable_names)
                inputs[key] = t
                if params_writable or nm.split("[")[0] in mutable_names:
                    mutables.append((t, a))
            return inputs[key]
        ca = [convert(a, names[i] if i < len(names) else f"arg{i}", i) for i, a in enumerate(args)]
        ck = {k: convert(v, k, 10_000 + j) for j, (k, v) in enumerate(kwargs.items())}
        return ca, ck

    first_ret = launch.run(fn, make_args)
    for core in launch.cores:
        core.allocator.check_psum()
    outs = _flatten_outputs(first_ret)
    fname = getattr(fn, "__name__", fn)
    if not outs and not params_writable:
        if _empty_grid(grid):
            raise err_tensor_output_not_written_to(
                f"kernel '{fname}' launched with the empty grid {list(grid)}: no program instance ran, so "
                "no output was written. A grid computed from an input's size (x.shape[0] // 128) is 0 "
                "when the input has fewer rows than one tile (or none): skip the launch for an empty "
                "input, or pad it to a whole tile")
        raise err_tensor_output_not_written_to(f"kernel '{fname}' returned no output tensor")
    if frontend == "current":
        returned = {id(o.storage) for o in outs if is_tile(o)}
        for t in inputs.values():
            if is_tile(t) and t.storage.param_written and id(t.storage) not in returned:
                raise err_cannot_update_immutable_parameter(
                    f"kernel '{fname}' writes input {t.describe()} without returning it (annotate it "
                    "nt.mutable_tensor, or return it)")
    for o in outs:
        if is_tile(o):
            # an SBUF / PSUM tile returned by the kernel comes back with its values, as in AWS's simulator
            # (AWS's range_select and dma_transpose API tests return SBUF tiles); no AWS page rejects it
            if not o.storage.written:
                raise err_tensor_output_not_written_to(f"output {o.describe()} was never written")
    for t, arr in mutables:            # in-place update of the caller's array (nt.mutable_tensor)
        np.copyto(arr, dtypes.output_array(t.storage.data, t.dtype, launch.keep).reshape(arr.shape),
                  casting="unsafe")
    mutable_arrays = {id(t.storage): arr for t, arr in mutables}

    def conv(o: Any) -> Any:
        if is_tile(o):
            if id(o.storage) in mutable_arrays and o.shape == o.storage.shape and o.offset == 0:
                return mutable_arrays[id(o.storage)]
            acc = o.access()
            vals = np.array(acc.get(acc.storage.flat(acc.dtype)), copy=True)
            return dtypes.output_array(vals, o.dtype, launch.keep)
        return o
    return _rebuild(first_ret, conv), launch

