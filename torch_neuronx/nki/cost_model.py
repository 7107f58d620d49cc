"""Cost model: per-instruction cycle estimates, and engines scheduled by data dependencies.

Published estimates (AWS ``nki.isa.*`` API pages, "Estimated instruction cost", and the NKI
architecture guides; the sources are listed in ``torch_neuronx.runtime.platforms.SOURCES``), with
N = elements per partition of the instruction's tile and MIN_II ~= 64 engine cycles:

==================  =========================================================  ===========
instruction          cycles                                                     engine
==================  =========================================================  ===========
nc_matmul            max(min(64, N_stationary), N_moving); x4 for fp32 inputs    Tensor
nc_transpose (PE)    as nc_matmul with an identity moving tile                  Tensor
broadcast_to (P-dim) nc_matmul(ones[1, M], src) per 512 columns; its result     Tensor
                     is read by tensor_tensor as a PSUM operand (N cycles)
activation           max(MIN_II, N)                                             Scalar
activation_reduce    max(MIN_II, N) + MIN_II                                    Scalar
tensor_scalar        max(MIN_II, N)                                             Vector*
tensor_copy          max(MIN_II, N)                                             Vector*
tensor_tensor        max(MIN_II, N) if one input in PSUM or all bf16,            Vector*
                     else max(MIN_II, 2N)
tensor_reduce        max(MIN_II, N); N/2 for bf16 add/max                        Vector
bn_stats             max(MIN_II, N)                                             Vector
bn_aggr              max(MIN_II, 13 N / 3)   (nki.isa.bn_aggr page)             Vector
iota, affine_select  150 + N                  (nki.isa.iota / affine_select)    GpSimd
memset               max(MIN_II, N); N/2 for value 0 into bf16/fp16             Vector*
reciprocal           max(MIN_II, 8 N)                                           Vector
tensor_tensor_scan   max(MIN_II, 2 N)                                           Vector
tensor_scalar_reduce max(MIN_II, N) + MIN_II                                    Vector
scalar_tensor_tensor N (bf16, subtract then multiply, N even), else 2 N          Vector
dropout, range_select, nc_stream_shuffle, select_reduce, copy_predicated
                     max(MIN_II, N)                                             Vector
max8, nc_find_index8 N; nc_match_replace8 max(MIN_II, N)                        Vector
local_gather         150 + valid_indices x elements_per_index / C               GpSimd
                     (C = ((28 + 4e) / (4e)) / min(4 / dtype_bytes, e))
tensor_copy_dynamic  max(MIN_II_DYNAMIC ~600, N)                                Vector
topk                 4 n + K                                                    GpSimd
partition reduce,    150 + N (the GpSimd start cost, as iota)                   GpSimd
sequence_bounds, nonzero_with_count, nc_n_gather
DMA                  max(bytes / (16 engines x 17|23|33 B/ns x efficiency),      DMA
                     chunks x DMA_DESCRIPTOR_NS) on v2|v3|v4, + DMA_FIXED_LATENCY_NS
launch               KERNEL_LAUNCH_NS once per kernel (added to the latency)
==================  =========================================================  ===========

(* engine selectable with ``engine=``.) Cycles are converted to ns with the engine clocks of the
platform's NeuronCore (``platform.core``: Tensor 2.8 / 2.4 / 2.4 GHz, Vector 1.12 / 0.96 / 1.2,
Scalar 1.4 / 1.2 / 1.2, GpSimd 1.4 / 1.2 / 1.2 on v2 / v3 / v4). FLOPs utilisation is measured against
the Tensor Engine's per-core dense peak of the input dtype (``platform.core.tensor.dense_flops``; the
platform table explains why that figure rather than the chip figure). Every instruction goes to one
engine; it starts when its inputs are ready (RAW) and its destination is no longer being written or
read by earlier instructions (WAW/WAR), tracked per element, in the first interval after that in which
its engine is idle for its duration: the compiler schedules each engine's instruction stream, and
"different iterations could be parallelized/pipelined on different compute engines within a NeuronCore
depending on the invoked instructions (engines) and data dependency in the loop body" (legacy
nki.language.affine_range page). An instruction whose engine the kernel leaves to the compiler
(``tensor_copy``, ``memset`` with no ``engine=``: "compiler selects best engine based on engine
workload") goes to the allowed engine that finishes it first. DMA transfers share one bandwidth pool
and run in issue order within their queue ("DMA transfers within a queue on the same DMA engine are
executed in order", nki-dma-overview): one queue for transfers into HBM, one for the others. All
results are ESTIMATES.

Fitted constants (``bench/RESULTS.md`` names the published latencies each was fitted on and those it
was checked on): the DMA efficiency of the platform table (AWS's matmul tutorial, steps 1-3), and
:data:`DMA_DESCRIPTOR_NS`, :data:`DMA_FIXED_LATENCY_NS` and :data:`KERNEL_LAUNCH_NS` (three of the
adaptive-average-pool latencies of AWS's nki-samples tests). A "chunk" is one contiguous run of bytes on
the less contiguous side of a transfer (an SBUF partition row is at least one chunk): a DMA of many
small runs is bound by descriptor processing rather than bytes, as AWS's DMA guidance says (transfers
are efficient when each contiguous run is large).
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..runtime.platforms import Platform

__all__ = ["ENGINES", "DMA_DESCRIPTOR_NS", "DMA_FIXED_LATENCY_NS", "KERNEL_LAUNCH_NS", "contiguous_chunks",
           "matmul_cycles", "broadcast_matmul_cycles", "elementwise_cycles", "tensor_tensor_cycles",
           "tensor_reduce_cycles", "iota_cycles", "bn_aggr_cycles", "dma_time_ns", "dma_fixed_latency_ns",
           "peak_flops", "Timeline", "memset_cycles", "reciprocal_cycles", "scan_cycles",
           "scalar_tensor_tensor_cycles", "local_gather_cycles", "dynamic_copy_cycles", "topk_cycles",
           "MIN_II_DYNAMIC", "GPSIMD_START"]

# Fitted (see the module docstring and bench/RESULTS.md). DMA_FIXED_LATENCY_NS replaces, for the NKI
# simulator, the platform table's nominal ~1.3 us per transfer: serial chains of small DMAs in AWS's
# measured kernels complete faster than that nominal figure allows.
DMA_DESCRIPTOR_NS = 0.9       # core-wide cost of one contiguous chunk of a DMA, ns (fitted)
DMA_FIXED_LATENCY_NS = 450.0  # from a transfer's last byte to its data being usable, ns (fitted)
KERNEL_LAUNCH_NS = 12000.0   # fixed start/tear-down cost of one kernel launch, ns (fitted)

MIN_II_DYNAMIC = 600   # "MIN_II_DYNAMIC (~600)": tensor_copy_dynamic_src/dst pages (legacy nki.isa)
GPSIMD_START = 150     # "GPSIMD_START (~150)": iota / affine_select pages (legacy nki.isa)

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")


def matmul_cycles(n_stationary: int, n_moving: int, fp32: bool) -> int:
    """Tensor Engine cycles of one nc_matmul (nki.isa.nc_matmul page): fp32 inputs take 4 passes."""
    c = max(min(64, n_stationary), n_moving)
    return c * 4 if fp32 else c


def broadcast_matmul_cycles(m: int, n: int, fp32: bool) -> int:
    """A partition broadcast of a [1, n] tile to m partitions as AWS's compiler lowers it:
    nc_matmul(ones[1, m], src) on the Tensor Engine, one matmul per 512 columns (the moving free
    limit), each costed by :func:`matmul_cycles`."""
    full, rest = divmod(n, 512)
    return full * matmul_cycles(m, 512, fp32) + (matmul_cycles(m, rest, fp32) if rest else 0)


def elementwise_cycles(n: int, min_ii: int = 64) -> int:
    """activation / tensor_scalar / tensor_copy / memset: max(MIN_II, N) cycles."""
    return max(min_ii, n)


def tensor_tensor_cycles(n: int, fast: bool, min_ii: int = 64) -> int:
    """tensor_tensor: N cycles with one PSUM input or all-bf16 operands, else 2N; at least MIN_II."""
    return max(min_ii, n if fast else 2 * n)


def tensor_reduce_cycles(n: int, bf16_fast: bool, min_ii: int = 64) -> int:
    """tensor_reduce: N cycles (N/2 for bf16 add/max); at least MIN_II."""
    return max(min_ii, n // 2 if bf16_fast else n)


def iota_cycles(n: int) -> int:
    """iota / affine_select on GpSimd: 150 + N cycles."""
    return 150 + n


def memset_cycles(n: int, half: bool, min_ii: int = 64) -> int:
    """memset: max(MIN_II, N/2) for value 0 into a bf16/fp16 tile, else max(MIN_II, N)."""
    return max(min_ii, n // 2 if half else n)


def reciprocal_cycles(n: int, min_ii: int = 64) -> int:
    """nisa.reciprocal on the Vector Engine: max(MIN_II, 8 N) (legacy nki.isa.reciprocal page)."""
    return max(min_ii, 8 * n)


def scan_cycles(n: int, min_ii: int = 64) -> int:
    """tensor_tensor_scan: max(MIN_II, 2 N) (legacy nki.isa.tensor_tensor_scan page)."""
    return max(min_ii, 2 * n)


def scalar_tensor_tensor_cycles(n: int, fast: bool, min_ii: int = 64) -> int:
    """scalar_tensor_tensor: N when bf16 data and operand1 with subtract then multiply and N even,
    else 2 N (legacy nki.isa.scalar_tensor_tensor page); at least MIN_II."""
    return max(min_ii, n if fast else 2 * n)


def local_gather_cycles(valid: int, per_idx: int, dtype_bytes: int) -> float:
    """local_gather on GpSimd: 150 + valid x per_idx / C, C = ((28 + 4e) / (4e)) / min(4 / b, e)
    (legacy nki.isa.local_gather page; e = elements per index, b = dtype bytes)."""
    e = max(per_idx, 1)
    c = ((28 + 4 * e) / (4 * e)) / min(4 / max(dtype_bytes, 1), e)
    return GPSIMD_START + valid * e / c


def dynamic_copy_cycles(n: int) -> int:
    """tensor_copy_dynamic_src/dst: max(MIN_II_DYNAMIC, N)."""
    return max(MIN_II_DYNAMIC, n)


def topk_cycles(n: int, k: int) -> int:
    """nisa.topk on GpSimd: 4 n + K cycles per partition (current nki.isa.topk page)."""
    return 4 * n + k


def bn_aggr_cycles(n: int, min_ii: int = 64) -> int:
    """bn_aggr: max(MIN_II, 13 N / 3) cycles (nki.isa.bn_aggr page)."""
    return max(min_ii, (13 * n) // 3)


def dma_time_ns(nbytes: int, platform: Platform, chunks: int = 0) -> float:
    """Queue occupancy in ns of a DMA of ``nbytes`` in ``chunks`` contiguous runs on ``platform`` (a
    runtime ``Platform`` row): bytes at its sustained DMA rate, or the descriptor processing of the
    chunks (:data:`DMA_DESCRIPTOR_NS` each) when that takes longer; the fixed latency per transfer is
    added separately."""
    return max(nbytes / platform.core.dma.sustained_bytes_per_s * 1e9, chunks * DMA_DESCRIPTOR_NS)


def dma_fixed_latency_ns(platform: Platform) -> float:
    """Fixed latency of one DMA transfer, ns (:data:`DMA_FIXED_LATENCY_NS`, fitted; the same on every
    platform, as AWS publishes no per-generation figure)."""
    del platform
    return DMA_FIXED_LATENCY_NS


def contiguous_chunks(shape: tuple, strides: tuple | None, on_chip: bool) -> int:
    """Contiguous runs of a view of ``shape`` with element ``strides`` (None: a gather, one run per
    element). On chip (SBUF), dimension 0 is the partition dimension and every partition is a run of
    its own at least."""
    n = 1
    for d in shape:
        n *= int(d)
    if n == 0:
        return 0
    if strides is None:
        return n
    start = 1 if on_chip else 0
    run, acc = 1, 1
    for d, s in zip(reversed(shape[start:]), reversed(strides[start:]), strict=False):
        if d != 1 and s != acc:
            break
        run *= d
        acc *= d
    return max(1, n // max(run, 1))


def peak_flops(platform: Platform, dtype_name: str) -> float:
    """Dense FLOP/s of ``platform``'s Tensor Engine (one physical core) for input ``dtype_name``;
    dtypes without a published rate (integers) count at the BF16 rate."""
    table = platform.core.tensor.dense_flops
    name = "float8_e4m3" if dtype_name == "float8_e4m3fn" else dtype_name
    return table.get(name, table["bfloat16"])


class Timeline:
    """Engine queues and totals of one simulated kernel run (times in ns, all estimates).

    ``schedule`` returns (start, end) of an instruction; ``makespan_ns`` is the time when the last
    result is ready.

    Args:
        platform: a :class:`torch_neuronx.runtime.platforms.Platform` row.
    """

    def __init__(self, platform: Platform):
        self.platform = platform
        self.engine_free = {e: 0.0 for e in ENGINES}
        self.busy_ns: defaultdict[str, float] = defaultdict(float)
        self.count: defaultdict[str, int] = defaultdict(int)
        self.by_name: defaultdict[str, list[float]] = defaultdict(lambda: [0, 0.0])  # name -> [count, busy ns]
        self.makespan_ns = 0.0
        self.launch_ns = KERNEL_LAUNCH_NS   # fixed cost of the launch, added to latency_ns
        self.flops = 0.0
        self.ideal_pe_ns = 0.0      # sum of flops / peak(dtype), for the utilisation figure
        self.dma_bytes = 0
        self.spilled_bytes = 0      # SBUF bytes per partition spilled to HBM (allocation over capacity)
        self.trace: list = []             # (name, engine, start_ns, end_ns, ready_ns) per instruction
        # merged busy intervals [start, end] per engine (the DMA entry: the shared DMA bandwidth)
        self._busy: dict[str, list[list[float]]] = {e: [] for e in ENGINES}
        self._starts: dict[str, list[float]] = {e: [] for e in ENGINES}
        self._floor = {e: 0.0 for e in ENGINES}   # no instruction of the engine starts before (barriers)
        self._last_dma_start: dict[str, float] = {}   # DMA queue -> start of its last transfer

    @property
    def latency_ns(self) -> float:
        """Estimated latency of the launch: the last result ready plus the fixed launch cost, ns."""
        return self.makespan_ns + self.launch_ns

    def now(self) -> float:
        """The time at which every engine queue of this core is idle (ns)."""
        return max([self.makespan_ns, *self.engine_free.values()])

    def advance_all(self, t: float) -> None:
        """Make every engine queue wait until ``t`` (a core barrier)."""
        for e in self.engine_free:
            self.hold(e, t)
        self.makespan_ns = max(self.makespan_ns, t)

    def hold(self, engine: str, t: float) -> None:
        """No later instruction of ``engine`` starts before ``t`` (a barrier, or an explicit
        ``depends_on`` that delays an instruction and the rest of its queue)."""
        self.engine_free[engine] = max(self.engine_free[engine], t)
        self._floor[engine] = max(self._floor[engine], t)

    @classmethod
    def merged(cls, timelines: list) -> Timeline:
        """The timelines of the cores of one launch as one: latency of the slowest core, engine busy
        time, counts, FLOPs and DMA bytes summed."""
        out = cls(timelines[0].platform)
        for t in timelines:
            out.makespan_ns = max(out.makespan_ns, t.makespan_ns)
            for e, v in t.busy_ns.items():
                out.busy_ns[e] += v
            for e, v in t.count.items():
                out.count[e] += v
            for k, (c, b) in t.by_name.items():
                out.by_name[k][0] += c
                out.by_name[k][1] += b
            out.flops += t.flops
            out.ideal_pe_ns += t.ideal_pe_ns
            out.dma_bytes += t.dma_bytes
            out.spilled_bytes += t.spilled_bytes
            out.trace.extend(t.trace)
        return out

    def cycles_to_ns(self, engine: str, cycles: float) -> float:
        """``cycles`` of ``engine`` ("tensor", "vector", "scalar", "gpsimd") in ns at its clock."""
        return cycles / self.platform.core.clock_hz(engine) * 1e9

    def _gap(self, engine: str, ready: float, dur: float) -> tuple[float, int]:
        """(earliest start >= ready where ``engine`` is idle for ``dur`` ns, insertion index)."""
        ready = max(ready, self._floor[engine])
        iv = self._busy[engine]
        i = bisect.bisect_right(self._starts[engine], ready) - 1
        t = ready
        if i >= 0 and iv[i][1] > t:
            t = iv[i][1]
        j = i + 1
        while j < len(iv) and iv[j][0] < t + dur:
            t = max(t, iv[j][1])
            j += 1
        return t, j

    def _place(self, engine: str, ready: float, dur: float) -> float:
        """Occupy ``engine`` for ``dur`` ns from the earliest idle interval at or after ``ready``."""
        iv, starts = self._busy[engine], self._starts[engine]
        t, j = self._gap(engine, ready, dur)
        # insert [t, t + dur] at position j, merging with touching neighbours
        lo, hi = t, t + dur
        k = j
        if k > 0 and iv[k - 1][1] >= lo - 1e-9:
            k -= 1
            lo = iv[k][0]
            del iv[k], starts[k]
        if k < len(iv) and iv[k][0] <= hi + 1e-9:
            hi = max(hi, iv[k][1])
            del iv[k], starts[k]
        iv.insert(k, [lo, hi])
        starts.insert(k, lo)
        return t

    def earliest_engine(self, engines: tuple, cycles: float, inputs_ready: float) -> tuple[str, float]:
        """(engine, busy ns) of the compute engine among ``engines`` that would finish an instruction
        of ``cycles`` first (the first listed on a tie): how AWS's compiler places an instruction whose
        engine the kernel leaves to it ("compiler selects best engine based on engine workload")."""
        best = None
        for e in engines:
            busy = self.cycles_to_ns(e, cycles)
            end = self._gap(e, inputs_ready, busy)[0] + busy
            if best is None or end < best[0] - 1e-9:
                best = (end, e, busy)
        assert best is not None
        return best[1], best[2]

    def schedule(self, name: str, engine: str, busy_ns: float, inputs_ready: float,
                 latency_ns: float = 0.0, queue: str = "") -> tuple:
        """Place one instruction on ``engine``: it starts in the first interval at or after its
        inputs / destination are ready (RAW, WAW, WAR) in which the engine is idle for its duration.

        This models the compiler's static instruction scheduling, not a hardware queue: AWS's compiler
        orders each engine's instruction stream, and "different iterations [of an affine_range loop]
        could be parallelized/pipelined on different compute engines within a NeuronCore depending on
        the invoked instructions (engines) and data dependency in the loop body" (legacy
        nki.language.affine_range page), so an instruction whose data is ready does not wait behind an
        earlier one of its engine that still waits for its own. The DMA engines (16 queues sharing the
        core's bandwidth) likewise serve a transfer as soon as its data is ready and bandwidth is free.
        """
        if engine is None:
            return inputs_ready, inputs_ready
        if engine == "dma":
            # a DMA queue runs its transfers in issue order ("DMA transfers within a queue on the same DMA
            # engine are executed in order", nki/get-started/about/nki-dma-overview.rst); ``queue``: one
            # for transfers into HBM (stores) and one for the others (loads), as the two DMA queues of
            # the Mamba tutorial's mamba_v2 profile (qSyncIO0, qGpSimdIO0) carry its loads and stores
            inputs_ready = max(inputs_ready, self._last_dma_start.get(queue, 0.0))
        start = self._place(engine, inputs_ready, busy_ns)
        if engine == "dma":
            self._last_dma_start[queue] = start
        end = start + busy_ns
        self.engine_free[engine] = max(self.engine_free[engine], end)
        self.busy_ns[engine] += busy_ns
        self.count[engine] += 1
        rec = self.by_name[name]
        rec[0] += 1
        rec[1] += busy_ns
        done = end + latency_ns
        self.makespan_ns = max(self.makespan_ns, done)
        self.trace.append((name, engine, start, end, done))
        return start, done

    def add_flops(self, flops: float, dtype_name: str) -> None:
        """Count matmul FLOPs and the ideal time they would take at the dtype's peak."""
        peak = peak_flops(self.platform, dtype_name)
        self.flops += flops
        self.ideal_pe_ns += flops / peak * 1e9
