"""The cost model: published per-instruction cycle estimates, engine clocks per platform, engines
where an instruction waits for its inputs and for an idle interval of its engine (the compiler's
scheduling), partition broadcasts on the Tensor Engine, and the engine choice left to the compiler."""
import numpy as np
import pytest

from torch_neuronx import nki
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx.nki import cost_model
from torch_neuronx.nki.platforms import get_platform


def test_published_cycle_formulas():
    assert cost_model.matmul_cycles(128, 512, fp32=False) == 512
    assert cost_model.matmul_cycles(128, 512, fp32=True) == 2048         # fp32: four passes
    assert cost_model.matmul_cycles(32, 16, fp32=False) == 32            # max(min(64, 32), 16)
    assert cost_model.matmul_cycles(128, 16, fp32=False) == 64           # min(64, 128) dominates
    assert cost_model.elementwise_cycles(10) == 64 and cost_model.elementwise_cycles(512) == 512
    assert cost_model.tensor_tensor_cycles(512, fast=True) == 512
    assert cost_model.tensor_tensor_cycles(512, fast=False) == 1024
    assert cost_model.tensor_reduce_cycles(512, bf16_fast=True) == 256
    assert cost_model.iota_cycles(512) == 662
    assert cost_model.bn_aggr_cycles(12) == 64 and cost_model.bn_aggr_cycles(300) == 1300


@pytest.mark.parametrize("name,clocks_ghz,sbuf_kib,dma_bytes_per_ns", [
    ("trn1", (2.8, 1.12, 1.4, 1.4), 192, 17),     # NeuronCore-v2
    ("trn2", (2.4, 0.96, 1.2, 1.2), 224, 23),     # NeuronCore-v3
    ("trn3", (2.4, 1.2, 1.2, 1.2), 256, 33),      # NeuronCore-v4: its own numbers, not trn2's
])
def test_platform_tables(name, clocks_ghz, sbuf_kib, dma_bytes_per_ns):
    core = get_platform(name).core
    assert tuple(core.clock_hz(e) / 1e9 for e in ("tensor", "vector", "scalar", "gpsimd")) == clocks_ghz
    assert core.sbuf_bytes_per_partition == sbuf_kib * 1024 and core.partitions == 128
    assert core.psum_bytes_per_partition == 16 * 1024 and core.psum_bank_bytes == 2048
    assert core.dma.sustained_bytes_per_s == pytest.approx(16 * dma_bytes_per_ns * 1e9 * core.dma.efficiency)
    # the cost model charges exactly these: one 512-cycle Vector instruction, one DMA of 1 MiB
    tl = cost_model.Timeline(get_platform(name))
    assert tl.cycles_to_ns("vector", 512) == pytest.approx(512 / clocks_ghz[1])
    assert cost_model.dma_time_ns(1 << 20, get_platform(name)) == \
        pytest.approx((1 << 20) / (16 * dma_bytes_per_ns * core.dma.efficiency))


def _one_matmul(dtype):
    @nki.jit
    def k(a, b):
        o = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(o, value=nl.copy(nisa.nc_matmul(nl.load(a), nl.load(b))))
        return o
    rng = np.random.default_rng(0)
    return k, (rng.standard_normal((128, 128), dtype=np.float32).astype(dtype),
               rng.standard_normal((128, 512), dtype=np.float32).astype(dtype))


@pytest.mark.parametrize("platform,ghz", [("trn1", 2.8), ("trn2", 2.4), ("trn3", 2.4)])
def test_matmul_busy_time_uses_tensor_engine_clock(platform, ghz):
    import ml_dtypes
    k, args = _one_matmul(ml_dtypes.bfloat16)
    bench = nki.benchmark(k, platform=platform)
    bench(*args)
    r = bench.benchmark_result
    assert r.engines["tensor"]["instructions"] == 1
    assert r.engines["tensor"]["busy_us"] == pytest.approx(512 / ghz * 1e-3)
    assert r.flops == 2 * 128 * 128 * 512


def test_fp32_matmul_costs_four_times_bf16():
    import ml_dtypes
    busy = []
    for dt in (ml_dtypes.bfloat16, np.float32):
        k, args = _one_matmul(dt)
        b = nki.benchmark(k, platform="trn2")
        b(*args)
        busy.append(b.benchmark_result.engines["tensor"]["busy_us"])
    assert busy[1] == pytest.approx(4 * busy[0])


def test_instruction_waits_for_inputs_and_engine():
    @nki.jit
    def k(a):
        o = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        y = nl.exp(x)                 # Scalar: must wait for the load (DMA + fixed latency)
        z = nl.exp(x)                 # Scalar again: waits for the engine (after y)
        w = nl.add(y, z)              # Vector: waits for both
        nl.store(o, value=w)
        return o
    b = nki.benchmark(k, platform="trn2")
    b(np.zeros((128, 512), np.float32))
    tr = b.benchmark_result.trace
    names = [t[0] for t in tr]
    assert names == ["load", "activation", "activation", "tensor_tensor", "store"]
    p = get_platform("trn2")
    load, exp1, exp2, add, store = tr
    load_ns = 128 * 512 * 4 / (p.core.dma.sustained_bytes_per_s * 1e-9)
    assert load[3] - load[2] == pytest.approx(load_ns)
    assert exp1[2] == pytest.approx(load[4])                          # start = load result ready
    assert exp1[3] - exp1[2] == pytest.approx(512 / 1.2)              # max(MIN_II, 512) at 1.2 GHz
    assert exp2[2] == pytest.approx(exp1[3])                          # engine busy until exp1 ends
    assert add[2] == pytest.approx(exp2[4])
    assert add[3] - add[2] == pytest.approx(1024 / 0.96)              # fp32 SBUF inputs: 2N cycles
    assert store[2] == pytest.approx(add[4])
    # the latency is the last result plus the fixed launch cost
    assert b.benchmark_result.latency_ns == pytest.approx(store[4] + cost_model.KERNEL_LAUNCH_NS)


def test_dma_of_small_runs_is_bound_by_descriptors():
    """A DMA of many short contiguous runs costs DMA_DESCRIPTOR_NS per run when that exceeds its bytes at
    the DMA rate; a dense transfer of the same bytes costs the bytes."""
    @nki.jit
    def k(a):
        o = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 16, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[:, :, 0:2])          # 128 x 16 runs of 2 elements (8 bytes)
        d = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=d, src=a[:, 0, 0:8])          # 128 runs of 32 bytes
        nl.store(o, value=d)
        return o
    b = nki.benchmark(k, platform="trn2")
    a = np.arange(128 * 16 * 8, dtype=np.float32).reshape(128, 16, 8)
    out = b(a)
    np.testing.assert_array_equal(out, a[:, 0, 0:8])
    tr = b.benchmark_result.trace
    p = get_platform("trn2")
    strided, dense = tr[0], tr[1]
    assert strided[3] - strided[2] == pytest.approx(max(128 * 16 * cost_model.DMA_DESCRIPTOR_NS,
                                                        128 * 32 * 4 / (p.core.dma.sustained_bytes_per_s * 1e-9)))
    assert dense[3] - dense[2] == pytest.approx(max(128 * cost_model.DMA_DESCRIPTOR_NS,
                                                    128 * 8 * 4 / (p.core.dma.sustained_bytes_per_s * 1e-9)))
    assert cost_model.contiguous_chunks((128, 16, 2), (128, 8, 1), on_chip=False) == 128 * 16
    assert cost_model.contiguous_chunks((128, 16, 8), (128, 8, 1), on_chip=False) == 1
    assert cost_model.contiguous_chunks((128, 16, 8), (128, 8, 1), on_chip=True) == 128
    assert cost_model.contiguous_chunks((4, 5), None, on_chip=False) == 20


def test_independent_engines_overlap():
    @nki.jit
    def k(a):
        o = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        y = nl.exp(x)                 # Scalar
        z = nl.multiply(x, 2.0)       # Vector, independent of y: runs at the same time
        nl.store(o, value=nl.add(y, z))
        return o
    b = nki.benchmark(k, platform="trn2")
    b(np.zeros((128, 512), np.float32))
    tr = {t[0]: t for t in b.benchmark_result.trace}
    assert tr["tensor_scalar"][2] == pytest.approx(tr["activation"][2])


def test_tensor_tensor_fast_path_with_one_psum_input():
    @nki.jit
    def k(a, b):
        o = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        p = nisa.nc_matmul(nl.load(a), nl.load(b))           # PSUM
        nl.store(o, value=nl.add(p, nl.load(b)))             # one PSUM input: N cycles
        return o
    b = nki.benchmark(k, platform="trn1")
    b(np.zeros((128, 128), np.float32), np.zeros((128, 512), np.float32))
    tt = [t for t in b.benchmark_result.trace if t[0] == "tensor_tensor"][0]
    assert tt[3] - tt[2] == pytest.approx(512 / 1.12)


def test_partition_broadcast_is_a_tensor_engine_matmul_read_as_psum():
    # AWS's architecture guide: broadcast_to((M, F)) of a 1-partition tile is nc_matmul(ones, src) on the
    # Tensor Engine; the consuming tensor_tensor reads one PSUM operand (N cycles, not 2N)
    @nki.jit
    def k(a, b):
        o = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        bb = nl.load(b).broadcast_to((128, 1024))
        nl.store(o, value=nisa.tensor_tensor(x, bb, op=nl.multiply))
        return o
    bench = nki.benchmark(k, platform="trn1")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 1024), dtype=np.float32)
    b = rng.standard_normal((1, 1024), dtype=np.float32)
    np.testing.assert_allclose(bench(a, b), a * b, rtol=1e-6)
    tr = {t[0]: t for t in bench.benchmark_result.trace}
    bc, tt = tr["broadcast_to"], tr["tensor_tensor"]
    assert bc[1] == "tensor"
    assert bc[3] - bc[2] == pytest.approx(2 * cost_model.matmul_cycles(128, 512, fp32=True) / 2.8)
    assert tt[1] == "vector" and tt[3] - tt[2] == pytest.approx(1024 / 1.12)


def test_engine_left_to_the_compiler_goes_where_it_finishes_first():
    # tensor_copy / memset with no engine (or nisa.unknown_engine): "compiler selects best engine based on
    # engine workload"; with engine= given, it stays there
    def kernel(engine):
        @nki.jit
        def k(a):
            o = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.shared_hbm)
            x = nl.load(a)
            y = nisa.tensor_copy(x, engine=engine)
            z = nisa.tensor_copy(x, engine=engine)
            nl.store(o[:, 0:1024], value=y)
            nl.store(o[:, 1024:2048], value=z)
            return o
        return k
    a = np.arange(128 * 1024, dtype=np.float32).reshape(128, 1024)
    engines = {}
    for eng in (None, nisa.unknown_engine, nisa.vector_engine):
        bench = nki.benchmark(kernel(eng), platform="trn2")
        np.testing.assert_array_equal(bench(a), np.concatenate([a, a], axis=1))
        engines[eng] = [t[1] for t in bench.benchmark_result.trace if t[0] == "tensor_copy"]
    # N = 1024 cycles: Scalar (1.2 GHz) finishes first, then GpSimd (1.2 GHz, idle); Vector is 0.96 GHz
    assert engines[None] == ["scalar", "gpsimd"]
    assert engines[nisa.unknown_engine] == engines[None]
    assert engines[nisa.vector_engine] == ["vector", "vector"]


def test_ready_instruction_runs_in_an_idle_interval_before_an_earlier_waiting_one():
    # the compiler schedules each engine's stream: a Vector instruction whose input is ready is not held
    # behind an earlier Vector instruction still waiting for a long load
    @nki.jit
    def k(big, small):
        o1 = nl.ndarray((128, 8192), dtype=nl.float32, buffer=nl.shared_hbm)
        o2 = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        s = nl.load(small)
        b = nl.load(big)
        nl.store(o1, value=nisa.tensor_scalar(b, op0=nl.multiply, operand0=2.0))    # waits for the big load
        nl.store(o2, value=nisa.tensor_scalar(s, op0=nl.add, operand0=1.0))         # ready long before
        return o1, o2
    bench = nki.benchmark(k, platform="trn2")
    big = np.ones((128, 8192), np.float32)
    small = np.ones((128, 64), np.float32)
    o1, o2 = bench(big, small)
    np.testing.assert_array_equal(o1, 2 * big)
    np.testing.assert_array_equal(o2, small + 1)
    ts = [t for t in bench.benchmark_result.trace if t[0] == "tensor_scalar"]
    assert ts[1][2] < ts[0][2]                 # the later-issued one ran first
    loads = [t for t in bench.benchmark_result.trace if t[0] == "load"]
    assert ts[0][2] == pytest.approx(loads[1][4]) and ts[1][2] == pytest.approx(loads[0][4])


def test_dma_queues_run_in_issue_order_and_a_waiting_store_does_not_hold_back_loads():
    # "DMA transfers within a queue on the same DMA engine are executed in order": loads in issue order;
    # stores (transfers into HBM) are another queue, so a store waiting for compute lets a later load go
    @nki.jit
    def k(a, b):
        o1 = nl.ndarray((128, 4096), dtype=nl.float32, buffer=nl.shared_hbm)
        o2 = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        nl.store(o1, value=nl.exp(x))            # waits for the load and the exp
        y = nl.load(b)                           # issued after the store, runs before it
        nl.store(o2, value=nl.multiply(y, 3.0))
        return o1, o2
    bench = nki.benchmark(k, platform="trn2")
    a = np.zeros((128, 4096), np.float32)
    b = np.ones((128, 64), np.float32)
    o1, o2 = bench(a, b)
    np.testing.assert_array_equal(o1, np.ones_like(a))
    np.testing.assert_array_equal(o2, 3 * b)
    tr = bench.benchmark_result.trace
    loads = [t for t in tr if t[0] == "load"]
    stores = [t for t in tr if t[0] == "store"]
    assert loads[1][2] >= loads[0][2]            # the load queue keeps issue order
    assert loads[1][2] < stores[0][2]            # not held behind the waiting store
    assert stores[1][2] >= stores[0][2]          # the store queue keeps issue order
