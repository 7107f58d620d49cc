"""APIs that public NKI kernels use at their first line (scans, reductions into registers, selects,
shuffles, engine constants, dtype aliases, compiler decorators, shared constants, SPMD helpers), each
in a kernel of ours checked against NumPy."""
import numpy as np
import pytest

import torch_neuronx.nki.current.isa as nisa
import torch_neuronx.nki.current.language as nl
import torch_neuronx.nki.isa as lisa
import torch_neuronx.nki.language as lnl
from torch_neuronx import nki as legacy
from torch_neuronx.nki import current as nki

F32 = np.float32
RNG = np.random.default_rng(11)


def _rand(*shape):
    return RNG.standard_normal(shape).astype(F32)


def _run(body, *arrays, out_shape=None, out_dtype=F32):
    """Run ``body(o, *sbuf_tiles)`` in a current-front-end kernel: inputs are DMA'd to SBUF, ``body``
    writes the SBUF tile ``o`` (of ``out_shape``), which is returned."""
    shape = out_shape or arrays[0].shape

    @nki.jit
    def k(*ins):
        out = nl.ndarray(shape, dtype=out_dtype, buffer=nl.shared_hbm)
        tiles = []
        for a in ins:
            t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=a)
            tiles.append(t)
        o = nl.ndarray(shape, dtype=out_dtype, buffer=nl.sbuf)
        body(o, *tiles)
        nisa.dma_copy(dst=out, src=o)
        return out
    return k(*arrays)


def test_tensor_tensor_scan_is_a_cumulative_sum():
    x = _rand(128, 64)
    got = _run(lambda o, ones, t: nisa.tensor_tensor_scan(dst=o, data0=ones, data1=t, initial=0.0,
                                                           op0=nl.multiply, op1=nl.add),
               np.ones_like(x), x)
    np.testing.assert_allclose(got, np.cumsum(x, axis=1), rtol=1e-5, atol=1e-5)


def test_tensor_tensor_scan_decay_recurrence():
    # r[i] = a[i] * r[i-1] + b[i] with a per-partition initial state (the Mamba recurrence)
    a = RNG.uniform(0.5, 1.0, (64, 32)).astype(F32)
    b = _rand(64, 32)
    init = _rand(64, 1)
    want = np.empty_like(b)
    r = init[:, 0]
    for i in range(32):
        r = a[:, i] * r + b[:, i]
        want[:, i] = r
    got = _run(lambda o, ta, tb, ti: nisa.tensor_tensor_scan(o, ta, tb, ti, nl.multiply, nl.add), a, b, init)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_reciprocal():
    x = RNG.uniform(0.5, 4.0, (32, 16)).astype(F32)
    np.testing.assert_allclose(_run(lambda o, t: nisa.reciprocal(dst=o, data=t), x), 1 / x, rtol=1e-6)


def test_max8_sorted_descending():
    x = _rand(16, 100)
    got = _run(lambda o, t: nisa.max8(dst=o, src=t), x, out_shape=(16, 8))
    np.testing.assert_array_equal(got, -np.sort(-x, axis=1)[:, :8])


def test_tensor_scalar_reduce_returns_result_and_reduction():
    x = _rand(32, 48)

    def body(o, t):
        red = nl.ndarray((32, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_reduce(dst=t, data=t, op0=nl.multiply, operand0=2.0, reduce_op=nl.add,
                                  reduce_res=red)
        nisa.tensor_copy(dst=o, src=red)
    got = _run(body, x, out_shape=(32, 1))
    np.testing.assert_allclose(got[:, 0], (2 * x).sum(axis=1), rtol=1e-5, atol=1e-4)


def test_tensor_partition_reduce_over_partitions():
    x = _rand(64, 8)
    got = _run(lambda o, t: nisa.tensor_partition_reduce(dst=o, op=nl.add, data=t), x, out_shape=(1, 8))
    np.testing.assert_allclose(got[0], x.sum(axis=0), rtol=1e-5, atol=1e-5)


def test_tensor_copy_predicated_keeps_dst_where_false():
    x = _rand(8, 16)
    pred = (RNG.uniform(size=(8, 16)) > 0.5).astype(np.uint8)

    def body(o, t, p):
        nisa.memset(dst=o, value=-1.0)
        nisa.tensor_copy_predicated(dst=o, src=t, predicate=p)
    got = _run(body, x, pred)
    np.testing.assert_array_equal(got, np.where(pred != 0, x, F32(-1.0)))


def test_nc_stream_shuffle_within_a_quadrant():
    x = _rand(32, 4)
    mask = list(range(31, -1, -1))                       # reverse the 32 partitions of the quadrant
    got = _run(lambda o, t: nisa.nc_stream_shuffle(dst=o, src=t, shuffle_mask=mask), x)
    np.testing.assert_array_equal(got, x[::-1])


def test_select_reduce_with_a_scalar_on_false_and_max_reduction():
    x = _rand(16, 32)
    pred = (RNG.uniform(size=(16, 32)) > 0.3).astype(np.uint8)

    def body(o, t, p):
        red = nl.ndarray((16, 1), dtype=nl.float32, buffer=nl.sbuf)
        sel = nl.ndarray((16, 32), dtype=nl.float32, buffer=nl.sbuf)
        nisa.select_reduce(dst=sel, predicate=p, on_true=t, on_false=-100.0, reduce_res=red,
                           reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_op=nl.maximum)
        nisa.tensor_copy(dst=o[:, 0:32], src=sel)
        nisa.tensor_copy(dst=o[:, 32:33], src=red)
    got = _run(body, x, pred, out_shape=(16, 33))
    sel = np.where(pred != 0, x, F32(-100.0))
    np.testing.assert_array_equal(got[:, :32], sel)
    np.testing.assert_array_equal(got[:, 32], sel.max(axis=1))


def test_tensor_scalar_cumulative_running_sum_of_scaled_values():
    x = _rand(8, 20)
    got = _run(lambda o, t: nisa.tensor_scalar_cumulative(dst=o, src=t, op0=nl.multiply, op1=nl.add, imm0=3.0),
               x)
    np.testing.assert_allclose(got, np.cumsum(3 * x, axis=1), rtol=1e-5, atol=1e-5)


def test_engine_constants_and_dtype_aliases():
    assert nisa.vector_engine == nisa.engine.vector and lisa.scalar_engine == lisa.engine.scalar
    assert nl.fp32.min == np.finfo(F32).min and nl.fp32.max == np.finfo(F32).max
    assert lnl.bf16.max == pytest.approx(3.3895313892515355e38)
    x = _rand(16, 8)
    got = _run(lambda o, t: nisa.tensor_scalar(dst=o, data=t, op0=nl.maximum, operand0=0.0,
                                               engine=nisa.gpsimd_engine), x)
    np.testing.assert_array_equal(got, np.maximum(x, 0))


def test_compiler_decorator_and_tensor_annotation():
    @nki.compiler.skip_middle_end_transformations
    @nki.jit
    def k(a: nki.tensor):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.activation(dst=t, op=nl.exp, data=t)
        nisa.dma_copy(dst=o, src=t)
        return o
    x = _rand(8, 8)
    np.testing.assert_allclose(k(x), np.exp(x), rtol=1e-6)


def test_shared_constant_is_an_hbm_input():
    table = np.arange(32, dtype=F32).reshape(4, 8)

    @nki.jit
    def k(a):
        c = nl.shared_constant(table)
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a)
        nisa.dma_copy(dst=y, src=c)
        nisa.tensor_tensor(dst=x, data1=x, data2=y, op=nl.add)
        nisa.dma_copy(dst=o, src=x)
        return o
    x = _rand(4, 8)
    np.testing.assert_array_equal(k(x), x + table)


def test_dma_transpose_2d():
    x = _rand(32, 64)

    @nki.jit
    def k(a):
        o = nl.ndarray((64, 32), dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((64, 32), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=t, src=a)
        nisa.dma_copy(dst=o, src=t)
        return o
    np.testing.assert_array_equal(k(x), x.T)


def test_view_reinterprets_dtype():
    x = _rand(4, 8)

    @nki.jit
    def k(a):
        o = nl.ndarray((4, 8), dtype=nl.int32, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.dma_copy(dst=o, src=t.view(nl.int32))
        return o
    np.testing.assert_array_equal(k(x), x.view(np.int32))


def test_indirect_load_gathers_rows_by_index_tile():
    table = _rand(64, 16)
    idx = np.array([5, 0, 63, 5, 17, 2, 9, 40], dtype=np.int32).reshape(8, 1)

    @legacy.jit
    def k(t, ix):
        o = lnl.ndarray((8, 16), dtype=t.dtype, buffer=lnl.shared_hbm)
        i = lnl.load(ix)                                   # [8, 1] int32 row indices
        j = lnl.arange(16)[None, :]
        rows = lnl.load(t[i, j])
        lnl.store(o, value=rows)
        return o
    np.testing.assert_array_equal(k(table, idx), table[idx[:, 0]])


def test_loop_reduce_max_over_a_loop():
    x = _rand(4, 128, 32)

    @legacy.jit
    def k(a):
        o = lnl.ndarray((128, 32), dtype=a.dtype, buffer=lnl.shared_hbm)
        acc = lnl.full((128, 32), np.finfo(F32).min, dtype=lnl.float32)
        for i in lnl.affine_range(4):
            acc[...] = lnl.loop_reduce(lnl.load(a[i]), op=np.maximum, loop_indices=[i], name="running_max")
        lnl.store(o, value=acc)
        return o
    np.testing.assert_array_equal(k(x), x.max(axis=0))


def test_spmd_dim_over_nc_grid_covers_every_program():
    x = _rand(4 * 128, 16)

    @legacy.jit
    def k(a):
        o = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        pid = lnl.program_id(0)
        sl = lnl.ds(pid * 128, 128)
        lnl.store(o[sl, :], value=lnl.multiply(lnl.load(a[sl, :]), 2.0))
        return o
    np.testing.assert_array_equal(k[lnl.spmd_dim(lnl.nc(2), 2)](x), 2 * x)


def test_core_barrier_on_an_sbuf_tile_with_two_cores():
    # nki-library's shard-on-I MoE kernel synchronizes both cores of an LNC=2 launch on an SBUF tile
    # (the nki.isa page says shared HBM; AWS's compiler accepts the tile): each core writes its half,
    # meets the other at the barrier, then reads the other core's half back from shared HBM
    @nki.jit(platform_target="trn2")
    def k(a):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        o2 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        me = nl.program_id(0)
        t = nl.ndarray((64, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[me * 64:(me + 1) * 64, :])
        nisa.dma_copy(dst=o[me * 64:(me + 1) * 64, :], src=t)
        flag = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=flag, value=0)
        nisa.core_barrier(flag, (0, 1))
        other = 1 - me
        u = nl.ndarray((64, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=u, src=o[other * 64:(other + 1) * 64, :])
        nisa.dma_copy(dst=o2[other * 64:(other + 1) * 64, :], src=u)
        return o, o2
    a = _rand(128, 8)
    o, o2 = k[2](a)
    np.testing.assert_array_equal(o, a)
    np.testing.assert_array_equal(o2, a)
