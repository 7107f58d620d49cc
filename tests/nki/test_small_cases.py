"""Small kernels of the kinds that public NKI kernels are written in, each checked against NumPy (or
against the error AWS's compiler gives): destination-passing calls of the current front end, calls
that must not swallow an argument, access patterns, size-1 axes kept by integer indexing, masked
``bn_stats``, and patterns AWS's compiler legalizes (never rejected here).

Kernels and inputs are ours; each mirrors one pattern of AWS's published kernels.
"""
import numpy as np
import pytest

import torch_neuronx.nki.current.isa as nisa
import torch_neuronx.nki.current.language as nl
import torch_neuronx.nki.isa as lisa
import torch_neuronx.nki.language as lnl
from torch_neuronx import nki as legacy
from torch_neuronx.nki import current as nki
from torch_neuronx.nki import errors as E

F32 = np.float32
RNG = np.random.default_rng(7)


def _rand(*shape):
    return RNG.standard_normal(shape).astype(F32)


# --- destinations are written, never dropped ---------------------------------------------------------
def test_tensor_copy_writes_its_dst_2x2():
    @nki.jit
    def k(a):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=c, src=t)
        nisa.dma_copy(dst=o, src=c)
        return o
    a = np.array([[1.0, 2.0], [3.0, 4.0]], F32)
    np.testing.assert_array_equal(k(a), a)


def test_tensor_tensor_writes_its_dst_128x512():
    @nki.jit
    def k(a, b):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a)
        nisa.dma_copy(dst=y, src=b)
        s = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=s, data1=x, data2=y, op=nl.add)
        nisa.dma_copy(dst=o, src=s)
        return o
    a, b = _rand(128, 512), _rand(128, 512)
    np.testing.assert_array_equal(k(a, b), a + b)


@pytest.mark.parametrize("positional", [False, True])
def test_nc_matmul_writes_its_psum_dst(positional):
    @nki.jit
    def k(a, b):
        o = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        st = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)      # [K=128, M=64]
        mv = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)      # [K=128, N=256]
        nisa.dma_copy(dst=st, src=a)
        nisa.dma_copy(dst=mv, src=b)
        ps = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.psum)
        if positional:
            nisa.nc_matmul(ps, st, mv)
        else:
            nisa.nc_matmul(dst=ps, stationary=st, moving=mv)
        r = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=r, src=ps)
        nisa.dma_copy(dst=o, src=r)
        return o
    a, b = _rand(128, 64), _rand(128, 256)
    np.testing.assert_allclose(k(a, b), a.T @ b, rtol=1e-5, atol=1e-4)


def test_memset_by_keyword():
    @nki.jit
    def k(a):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.memset(dst=t, value=2.5)
        nisa.dma_copy(dst=o, src=t)
        return o
    np.testing.assert_array_equal(k(np.zeros((16, 8), F32)), np.full((16, 8), 2.5, F32))


@pytest.mark.parametrize("call", [
    lambda t, c: nisa.tensor_copy(dst=c, src=t, bogus=1),
    lambda t, c: nisa.tensor_tensor(dst=c, data1=t, data2=t, op=nl.add, out=c),
    lambda t, c: nisa.activation(dst=c, op=nl.exp, data=t, dtype=nl.float32),
    lambda t, c: lisa.tensor_copy(t, dst=c),
    lambda t, c: lnl.exp(t, out=c),
])
def test_an_unknown_keyword_is_a_type_error(call):
    @nki.jit
    def k(a):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        call(t, c)
        nisa.dma_copy(dst=o, src=c)
        return o
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        k(np.zeros((4, 4), F32))


def test_profile_takes_the_options_aws_tested_kernels_pass(tmp_path):
    # nki-samples' profile test passes num_execs and profile_nth; they change nothing in the simulator.
    # The working directory need not exist (AWS's legacy profiling example names one that may not)
    wd = str(tmp_path / "not" / "yet")
    @nki.profile(working_directory=wd, save_neff_name="k.neff", overwrite=False, save_trace_name="k.ntff",
                 num_execs=3, profile_nth=2)
    def k(a):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(o, value=nl.load(a) * 2.0)
        return o
    a = np.arange(8, dtype=F32).reshape(2, 4)
    np.testing.assert_array_equal(k(a), 2 * a)
    assert k.benchmark_result.latency_us > 0
    import json
    import os
    with open(os.path.join(wd, "k.ntff"), encoding="utf-8") as f:
        assert json.load(f)["traceEvents"]


def test_tensor_placeholder_arguments_run_on_zeros_in_benchmark_and_profile_only(tmp_path):
    # AWS's legacy matmul tutorial benchmarks with nt.tensor[[K, M], dtype] placeholders as arguments;
    # a run that computes values (jit, baremetal, simulate_kernel) refuses them
    import torch_neuronx.nki.typing as nt

    @legacy.jit
    def k(a):
        o = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        lnl.store(o, value=lnl.load(a) + 1.0)
        return o
    out = legacy.benchmark(k)(nt.tensor[[128, 64], lnl.bfloat16])
    assert out.shape == (128, 64) and str(out.dtype) == "bfloat16"
    np.testing.assert_array_equal(out.astype(F32), np.ones((128, 64), F32))
    prof = legacy.profile(k, working_directory=str(tmp_path))(nt.tensor[[128, 64], lnl.float32])
    np.testing.assert_array_equal(prof, np.ones((128, 64), F32))
    with pytest.raises(TypeError, match="needs a shape and a dtype"):
        legacy.benchmark(k)(nt.tensor[128, 64])
    ph = nt.tensor[[128, 64], lnl.float32]
    for run in (k, legacy.baremetal(k.fn), legacy.jit(k.fn, mode="simulation"),
                lambda x: legacy.simulate_kernel(k, x)):
        with pytest.raises(TypeError, match="kernel argument 'a' is the placeholder .*accepted only by "
                                            "nki.benchmark and nki.profile"):
            run(ph)
    with pytest.raises(TypeError, match="is the placeholder"):
        k(a=ph)                                        # as a keyword too


def test_jit_rejects_an_unknown_option():
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_option'"):
        nki.jit(lambda a: a, no_such_option=1)


# --- access patterns (.ap) ----------------------------------------------------------------------------
def test_access_pattern_reads_every_other_column():
    @nki.jit
    def k(a):
        o = nl.ndarray((128, 256), dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 256), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.ap([[512, 128], [2, 256]], offset=1))    # odd columns of a [128, 512]
        nisa.dma_copy(dst=o, src=t)
        return o
    a = _rand(128, 512)
    np.testing.assert_array_equal(k(a), a[:, 1::2])


# --- integer index on a free axis: dropped, or kept at size 1 where the view would be < 2-D --------
def test_integer_index_on_free_axis_keeps_size_one_axis_as_bias():
    @legacy.jit
    def k(a, b):
        o = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        x = lnl.load(a)
        buf = lnl.load(b)                                   # [128, 4]
        col = buf[:, 2]                                     # [128, 1], as on NKI
        assert tuple(col.shape) == (128, 1)
        lnl.store(o, value=lisa.activation(lnl.exp, x, bias=col))
        return o
    a, b = _rand(128, 64), _rand(128, 4)
    np.testing.assert_allclose(k(a, b), np.exp(a + b[:, 2:3]), rtol=1e-5)


def test_integer_index_shapes_follow_the_current_language_guide():
    """AWS's current NKI language guide (aws-neuron/aws-neuron-sdk@81ce03a:nki/get-started/
    nki-language-guide.rst, "The partition dimension is special" and "Tensor Indexing"): on SBUF an
    integer on the partition dim keeps it at size 1, an integer on a free dim drops it unless the result
    would be < 2-D (then the last free dim stays at 1); HBM drops indexed dims. The guide's own examples,
    shapes and values."""
    shapes = {}

    @nki.jit
    def k(a, h_in):
        t = nl.ndarray((128, 64, 32), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        h = nl.ndarray((4, 128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=h, src=h_in)
        views = {"t[0, :, :]": t[0, :, :], "t[:, :, 0]": t[:, :, 0], "t[:, 0]": t[:, 0],
                 "t[:, 0, 10]": t[:, 0, 10], "t[0, 0, 10]": t[0, 0, 10], "h[0, :, :]": h[0, :, :]}
        shapes.update({n: tuple(v.shape) for n, v in views.items()})
        o1 = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o1, src=t[:, :, 0])
        o2 = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o2, src=t[:, 0, 10])
        o3 = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o3, src=h[2, :, :])
        return o1, o2, o3
    a, h = _rand(128, 64, 32), _rand(4, 128, 32)
    o1, o2, o3 = k(a, h)
    assert shapes == {"t[0, :, :]": (1, 64, 32), "t[:, :, 0]": (128, 64), "t[:, 0]": (128, 32),
                      "t[:, 0, 10]": (128, 1), "t[0, 0, 10]": (1, 1), "h[0, :, :]": (128, 32)}
    np.testing.assert_array_equal(o1, a[:, :, 0])
    np.testing.assert_array_equal(o2, a[:, 0, 10:11])
    np.testing.assert_array_equal(o3, h[2])


# --- bn_stats with a mask in the input's index space -------------------------------------------------
@pytest.mark.parametrize("shape", [(1, 8), (128, 512)])
def test_bn_stats_with_a_mask_in_input_index_space(shape):
    p, f = shape

    @legacy.jit
    def k(a):
        o = lnl.ndarray((p, 2), dtype=lnl.float32, buffer=lnl.shared_hbm)
        ip = lnl.arange(p)[:, None]
        jf = lnl.arange(f)[None, :]
        x = lnl.load(a[ip, jf], mask=(ip < p))
        stats = lisa.bn_stats(x[ip, jf], mask=(ip < p))
        mv = lisa.bn_aggr(stats)
        lnl.store(o, value=mv)
        return o
    a = _rand(p, f)
    got = k(a)
    np.testing.assert_allclose(got[:, 0], a.mean(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, 1], a.var(axis=1), rtol=1e-4, atol=1e-6)


# --- patterns AWS's compiler legalizes ----------------------------------------------------------------
def test_matmul_with_a_psum_operand():
    @legacy.jit
    def k(a, b, c):
        o = lnl.ndarray((128, 128), dtype=lnl.float32, buffer=lnl.shared_hbm)
        ab = lnl.matmul(lnl.load(a), lnl.load(b), transpose_x=True)       # PSUM [128, 128]
        lnl.store(o, value=lnl.matmul(ab, lnl.load(c), transpose_x=True))  # PSUM operand
        return o
    a, b, c = _rand(128, 128), _rand(128, 128), _rand(128, 128)
    np.testing.assert_allclose(k(a, b, c), (a.T @ b).T @ c, rtol=1e-4, atol=1e-3)


def test_nl_add_broadcasts_one_partition():
    @legacy.jit
    def k(a, b):
        o = lnl.ndarray((128, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(o, value=lnl.add(lnl.load(a), lnl.load(b)))   # [1, 64] + [128, 64]
        return o
    a, b = _rand(1, 64), _rand(128, 64)
    np.testing.assert_array_equal(k(a, b), a + b)


def test_python_operator_does_not_broadcast_partitions():
    # AWS's known-issues page: tile operators need equal partition counts; nl.add broadcasts.
    @legacy.jit
    def k(a, b):
        o = lnl.ndarray((128, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(o, value=lnl.load(a) + lnl.load(b))
        return o
    with pytest.raises(E.err_num_partition_mismatch):
        k(_rand(1, 64), _rand(128, 64))


def test_pooling_reduction_over_axes_2_and_4_of_an_access_pattern():
    # 2x2 average pooling as AWS's 2D-pooling example writes it: reduce axes [2, 4] of a 5-D view.
    @legacy.jit
    def k(a):
        c, h, w = a.shape
        o = lnl.ndarray((c, h // 2, w // 2), dtype=a.dtype, buffer=lnl.shared_hbm)
        t = lnl.load(a)
        i0, i1, i2, i3, i4 = lnl.mgrid[0:c, 0:h // 2, 0:2, 0:w // 2, 0:2]
        s = lnl.sum(t[i0, 2 * i1 + i2, 2 * i3 + i4], axis=[2, 4])
        lnl.store(o, value=lnl.multiply(s, 0.25))
        return o
    a = _rand(16, 8, 12)
    want = a.reshape(16, 4, 2, 6, 2).mean(axis=(2, 4))
    np.testing.assert_allclose(k(a), want, rtol=1e-5, atol=1e-6)


def test_affine_select_with_a_psum_on_true_tile():
    # causal mask of a score tile still in PSUM (AWS's legacy flash attention does this)
    @legacy.jit
    def k(q, kt):
        o = lnl.ndarray((128, 128), dtype=lnl.float32, buffer=lnl.shared_hbm)
        s = lnl.matmul(lnl.load(q), lnl.load(kt), transpose_x=True)       # PSUM [128, 128]
        i, j = lnl.mgrid[0:128, 0:128]
        m = lisa.affine_select(pred=(i - j >= 0), on_true_tile=s[i, j], on_false_value=-1e4,
                               dtype=lnl.float32)
        lnl.store(o, value=m)
        return o
    q, kt = _rand(128, 128), _rand(128, 128)
    s = q.T @ kt
    want = np.where(np.tril(np.ones((128, 128), bool)), s, np.float32(-1e4))
    np.testing.assert_allclose(k(q, kt), want, rtol=1e-4, atol=1e-3)


def test_accumulating_matmuls_into_an_uninitialised_psum_tile():
    # `acc = nl.ndarray(..., psum)` then `acc += nisa.nc_matmul(...)`: the first matmul of the
    # accumulation group starts from zero (AWS's attention tutorial, versions 8a-11, does this)
    @legacy.jit
    def k(a, b):
        o = lnl.ndarray((128, 256), dtype=lnl.float32, buffer=lnl.shared_hbm)
        acc = lnl.ndarray((128, 256), dtype=lnl.float32, buffer=lnl.psum)
        for i in lnl.affine_range(4):
            acc[...] += lisa.nc_matmul(lnl.load(a[i * 128:(i + 1) * 128, :]), lnl.load(b[i * 128:(i + 1) * 128, :]))
        lnl.store(o, value=lnl.copy(acc))
        return o
    a, b = _rand(512, 128), _rand(512, 256)
    np.testing.assert_allclose(k(a, b), a.T @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("entry", ["jit", "simulate_kernel"])
def test_affine_loop_writes_distinct_columns_of_a_bf16_tile(entry):
    # simulate_kernel keeps bf16 values in fp32 (AWS's legacy simulator); column i of a bf16 tile is
    # still its own element, so iterations writing different columns do not conflict
    @legacy.jit
    def k(a):
        o = lnl.ndarray((128, 4), dtype=lnl.float32, buffer=lnl.shared_hbm)
        res = lnl.ndarray((lnl.par_dim(128), 4), dtype=lnl.bfloat16)
        ip = lnl.arange(128)[:, None]
        iff = lnl.arange(64)[None, :]
        for i in lnl.affine_range(4):
            x = lnl.load(a[ip, i * 64 + iff], dtype=lnl.bfloat16)
            res[ip, i] = lisa.tensor_reduce(np.max, data=x, axis=(1,), dtype=lnl.bfloat16, negate=True)
        lnl.store(o, value=res)
        return o
    a = RNG.uniform(size=(128, 256)).astype(F32)
    got = k(a) if entry == "jit" else legacy.simulate_kernel(k, a)
    np.testing.assert_allclose(got, -a.reshape(128, 4, 64).max(-1), rtol=1e-2)


def test_reshape_takes_the_shape_by_keyword():
    @legacy.jit
    def k(a):
        n, c, h, w = a.shape
        o = lnl.ndarray((n * c, h * w), dtype=a.dtype, buffer=lnl.shared_hbm)
        flat = a.reshape(shape=(n * c, h, w))             # AWS's signature: reshape(self, shape)
        lnl.store(o.reshape((n * c, h, w)), value=lnl.load(flat))
        return o
    a = _rand(2, 3, 4, 5)
    np.testing.assert_array_equal(k(a), a.reshape(6, 20))


def test_nc_version_is_ordered_and_lazy_initialization_is_taken():
    @legacy.jit(platform_target="trn2")
    def k(a):
        o = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        fill = 2.0 if lisa.get_nc_version() >= lisa.nc_version.gen3 else 3.0
        t = lnl.full(a.shape, fill, dtype=a.dtype, buffer=lnl.sbuf, lazy_initialization=True)
        lnl.store(o, value=lnl.add(t, lnl.load(a)))
        return o
    a = _rand(8, 8)
    np.testing.assert_array_equal(k(a), a + 2.0)


def test_float_to_int_conversion_truncates_toward_zero():
    # int32 tile / int stays int32 (NKI type promotion); the fp32 quotient converts toward zero, which
    # AWS's nearest-neighbour resize relies on for floor(pos / width)
    @legacy.jit
    def k(a):
        o = lnl.ndarray(a.shape, dtype=lnl.int32, buffer=lnl.shared_hbm)
        lnl.store(o, value=lnl.load(a) / 38)
        return o
    a = np.array([[2236, 2241, 37, 38, -77]], np.int32)
    np.testing.assert_array_equal(k(a), np.trunc(a / 38).astype(np.int32))


def test_indirect_load_with_oob_skip_keeps_the_destination():
    # rows whose indirect index is out of bounds are not transferred: their destination keeps -1
    @legacy.jit
    def k(a):
        o = lnl.ndarray((64, 16), dtype=a.dtype, buffer=lnl.shared_hbm)
        ix, iy = lnl.mgrid[0:64, 0:16]
        idx = lisa.iota(3 * lnl.arange(64)[:, None], dtype=np.int32)       # 0, 3, ..., 189 (> 127)
        t = lisa.memset(shape=(64, 16), value=-1, dtype=a.dtype)
        lisa.dma_copy(src=a[idx, iy], dst=t[ix, iy], oob_mode=lisa.oob_mode.skip)
        lnl.store(o, value=t)
        return o
    a = _rand(128, 16)
    want = np.full((64, 16), -1, F32)
    want[:43] = a[3 * np.arange(43)]
    np.testing.assert_array_equal(k(a), want)


def test_dma_transpose_takes_dge_mode():
    @legacy.jit(platform_target="trn2")
    def k(a):
        o = lnl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=lnl.shared_hbm)
        lnl.store(o, value=lisa.dma_transpose(a[:, :], dge_mode=lisa.dge_mode.hwdge))
        return o
    a = _rand(32, 64)
    np.testing.assert_array_equal(k(a), a.T)


def test_nki_object_dataclass_takes_unannotated_class_attributes_by_keyword():
    from dataclasses import dataclass

    @dataclass
    class Section(nl.NKIObject):
        index = None
        offset = 0

    s = Section(index=3)
    assert (s.index, s.offset) == (3, 0)


def test_current_front_end_writes_an_output_parameter_it_returns():
    # nki-library's kernels take their outputs as parameters (q_out), write and return them
    @nki.jit
    def k(a, out):
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.activation(dst=t, op=nl.exp, data=t)
        nisa.dma_copy(dst=out, src=t)
        return out

    @nki.jit
    def k_not_returned(a, out):
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.dma_copy(dst=out, src=t)
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=t)
        return o
    a = _rand(8, 16)
    np.testing.assert_allclose(k(a, np.zeros_like(a)), np.exp(a), rtol=1e-6)
    with pytest.raises(E.err_cannot_update_immutable_parameter, match="without returning it"):
        k_not_returned(a, np.zeros_like(a))


def test_a_returned_sbuf_tile_comes_back_with_its_values():
    @legacy.jit
    def k(a):
        return lnl.exp(lnl.load(a))                        # an SBUF tile
    a = _rand(16, 8)
    np.testing.assert_allclose(k(a), np.exp(a), rtol=1e-6)


def test_psum_tiles_at_explicit_addresses_may_share_banks():
    # nki-library's attention places many PSUM tiles at four bank addresses; they are not charged to the
    # automatic pool (8 banks), but each must lie inside PSUM
    @nki.jit
    def k(a):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        tiles = [nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum, address=(0, (i % 4) * 2048))
                 for i in range(16)]
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.tensor_copy(dst=tiles[15], src=t)
        nisa.tensor_copy(dst=t, src=tiles[15])
        nisa.dma_copy(dst=o, src=t)
        return o

    @nki.jit
    def k_outside(a):
        nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum, address=(0, 8 * 2048))
        return a
    a = _rand(128, 512)
    np.testing.assert_array_equal(k(a), a)
    with pytest.raises(E.err_buffer_capacity_exceeded, match="free offset 16384"):
        k_outside(a)


def test_placed_tensors_reusing_an_address_in_turn_give_each_its_values():
    # a PSUM bank reused by tile after tile (write, read, then the next tile), as nki-library's kernels
    # do, is a correct kernel: each tile is dead before the next one overwrites its bytes
    @nki.jit
    def k(a):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        for _i in range(3):
            p = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum, address=(0, 2048))
            nisa.tensor_scalar(dst=p, data=t, op0=nl.add, operand0=1.0)
            nisa.tensor_copy(dst=t, src=p)
        nisa.dma_copy(dst=o, src=t)
        return o
    a = _rand(128, 512)
    np.testing.assert_allclose(k(a), a + 3, rtol=1e-6)


def test_placed_tensors_alive_at_the_same_address_are_a_lifetime_conflict():
    # two tiles placed on overlapping bytes and both alive: on a NeuronCore the second write replaces
    # the first tile's data (AWS's direct-allocation guide, "Lifetime Conflicts"); the simulator, which
    # keeps a copy per tensor, would return a + 1 where the hardware returns a + 2
    @nki.jit
    def k(a, p_off=0, f_off=1024):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        x = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
        y = nl.ndarray((64, 512), dtype=nl.float32, buffer=nl.sbuf, address=(p_off, f_off))
        nisa.tensor_scalar(dst=x, data=t, op0=nl.add, operand0=1.0)
        nisa.tensor_scalar(dst=y, data=t[0:64], op0=nl.add, operand0=2.0)
        nisa.tensor_copy(dst=t, src=x)                  # x's bytes [1024, 2048) were overwritten by y
        nisa.dma_copy(dst=o, src=t)
        return o
    a = _rand(128, 512)
    with pytest.raises(E.err_lifetime_conflict, match="partition 0 byte 1024"):
        k(a)
    with pytest.raises(E.err_lifetime_conflict, match="partition 64 byte 1024"):
        k(a, p_off=64)
    np.testing.assert_allclose(k(a, f_off=2048), a + 1, rtol=1e-6)   # y right after x: no overlap


def test_dma_modes_by_integer_value():
    @nki.jit
    def k(a):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a, dge_mode=3)            # dge_mode.none, as nki-library writes it
        nisa.dma_copy(dst=o, src=t)
        return o

    @nki.jit
    def k_bad(a):
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a, dge_mode=9)
        return t
    a = _rand(4, 4)
    np.testing.assert_array_equal(k(a), a)
    with pytest.raises(E.err_invalid_instruction_argument, match="dge_mode=9"):
        k_bad(a)


def test_legacy_tensor_scalar_cumulative_into_dst():
    @legacy.jit
    def k(a):
        o = lnl.ndarray(a.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
        d = lnl.ndarray(a.shape, dtype=lnl.float32, buffer=lnl.sbuf)
        lisa.tensor_scalar_cumulative(src=lnl.load(a), dst=d, op0=np.multiply, op1=np.add, imm0=2.0)
        lnl.store(o, value=d)
        return o
    a = _rand(8, 12)
    np.testing.assert_allclose(k(a), np.cumsum(2 * a, axis=1), rtol=1e-5, atol=1e-5)


def test_tile_plus_index_expression_is_a_runtime_offset():
    # AWS's tensor_copy_dynamic_src examples index with offsets[0, i] + iy: a one-element tile read when
    # the instruction runs, plus the index expression; both operand orders
    @legacy.jit
    def k(a, off):
        o = lnl.ndarray((128, 4), dtype=a.dtype, buffer=lnl.shared_hbm)
        t = lnl.load(a)
        offs = lnl.load(off)
        r = lnl.ndarray((128, 4), dtype=a.dtype, buffer=lnl.sbuf)
        ix, iy = lnl.mgrid[0:128, 0:1]
        for j in lnl.affine_range(2):
            r[ix, j] = lisa.tensor_copy_dynamic_src(t[ix, offs[0, j] + iy])
            r[ix, 2 + j] = lisa.tensor_copy_dynamic_src(t[ix, iy + offs[0, j]])
        lnl.store(o, value=r)
        return o
    a = _rand(128, 8)
    off = np.array([[5, 2, 0, 0]], np.int32)
    out = k(a, off)
    np.testing.assert_array_equal(out, a[:, [5, 2, 5, 2]])


def test_tile_offset_of_more_than_one_element_is_refused():
    @legacy.jit
    def k(a, off):
        o = lnl.ndarray((128, 1), dtype=a.dtype, buffer=lnl.shared_hbm)
        t = lnl.load(a)
        offs = lnl.load(off)
        ix, iy = lnl.mgrid[0:128, 0:1]
        lnl.store(o, value=lisa.tensor_copy_dynamic_src(t[ix, offs + iy]))
        return o
    with pytest.raises(E.err_invalid_instruction_argument, match="one-element tile"):
        k(_rand(128, 8), np.zeros((1, 4), np.int32))


def test_legacy_shared_identity_matrix_is_loaded_from_hbm():
    @legacy.jit
    def k(a):
        o = lnl.ndarray(a.shape, dtype=lnl.float32, buffer=lnl.shared_hbm)
        ident = lnl.load(lnl.shared_identity_matrix(n=128, dtype=lnl.float32))
        lnl.store(o, value=lisa.nc_matmul(ident, lnl.load(a)))
        return o
    a = _rand(128, 64)
    np.testing.assert_allclose(k(a), a, rtol=1e-6)


def test_access_pattern_with_a_runtime_scalar_offset_on_a_reshaped_view():
    # .ap(..., scalar_offset=<[1, 1] tile>, indirect_dim=1) on a (1, N) view of a 1-D HBM tensor
    @nki.jit
    def k(v, start):
        n = v.shape[0]
        o = nl.ndarray((1, 8), dtype=v.dtype, buffer=nl.shared_hbm)
        s = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=start)
        t = nl.ndarray((1, 8), dtype=v.dtype, buffer=nl.sbuf)
        v2 = v.reshape((1, n))
        nisa.dma_copy(dst=t, src=v2.ap(pattern=[[n, 1], [1, 8]], offset=2, scalar_offset=s, indirect_dim=1))
        nisa.dma_copy(dst=o, src=t)
        return o
    v = np.arange(32, dtype=np.int32)
    np.testing.assert_array_equal(k(v, np.array([[5]], np.int32)), v[7:15][None, :])


def test_truth_value_of_a_tensor_per_front_end():
    # an optional kernel parameter tested with `if t:` is true in both front ends (nki-library; AWS's
    # legacy-API tensor_scalar_cumulative test); a legacy on-chip tile keeps the errors page's
    # err_ambiguous_tensor_truth_value (its value is only known when the kernel runs)
    @nki.jit
    def k(a, b=None):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        src = b if b else a
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=src)
        nisa.dma_copy(dst=o, src=t)
        return o

    @legacy.jit
    def k_legacy(a, b=None):
        o = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        lnl.store(o, value=lnl.load(b if b else a))
        return o

    @legacy.jit
    def k_legacy_tile(a):
        o = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        t = lnl.load(a)
        lnl.store(o, value=lnl.exp(t) if t else t)
        return o
    a, b = _rand(4, 4), _rand(4, 4)
    np.testing.assert_array_equal(k(a, b), b)
    np.testing.assert_array_equal(k(a), a)
    np.testing.assert_array_equal(k_legacy(a, b), b)
    np.testing.assert_array_equal(k_legacy(a), a)
    with pytest.raises(E.err_ambiguous_tensor_truth_value):
        k_legacy_tile(a)


def test_truth_value_of_an_on_chip_tile_in_the_current_front_end():
    # a current-front-end tile is a specialization-time object, true like any Python object
    # (nki-library's MoE kernels test an optional SBUF tile with `if params.expert_index:`)
    @nki.jit
    def k(a, use=None):
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        sel = t if use else None
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        if sel:
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=o, src=t)
        return o
    a = _rand(4, 4)
    np.testing.assert_allclose(k(a, True), 2 * a, rtol=1e-6)
    np.testing.assert_allclose(k(a), a, rtol=1e-6)


def test_quantize_mx_scale_is_the_ocp_rule_and_x4_arrays_round_trip():
    # scale exponent floor(log2(amax)) - Emax (8 for e4m3fn), the OCP rule of AWS's hardware golden in
    # nki-library; the x4 data comes back as packed storage that nl.float8_e4m3fn_x4's NumPy dtype views
    @nki.jit(platform_target="trn3")
    def k(a):
        x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a)
        q = nl.ndarray((32, 2), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        s = nl.ndarray((32, 2), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.memset(dst=s, value=0)
        nisa.quantize_mx(dst=q, src=x, dst_scale=s)
        oq = nl.ndarray((32, 2), dtype=nl.float8_e4m3fn_x4, buffer=nl.shared_hbm)
        os_ = nl.ndarray((32, 2), dtype=nl.uint8, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=oq, src=q)
        nisa.dma_copy(dst=os_, src=s)
        return oq, os_
    import ml_dtypes
    a = (_rand(32, 8) * 3).astype(ml_dtypes.bfloat16)
    q, s = k(a)
    amax = np.abs(a.astype(F32)).reshape(4, 8, 2, 4).max(axis=(1, 3))
    e = np.floor(np.log2(amax)).astype(np.int32) - 8
    rows = [0, 1, 2, 3]                      # scales of the 4 groups of 8 partitions, quadrant 0
    np.testing.assert_array_equal(s[rows].astype(np.int32), e + 127)
    assert np.zeros(1, dtype=nl.float8_e4m3fn_x4).dtype == nl.float8_e4m3fn_x4
    vals = q.view(np.uint8).reshape(32, 2, 4).view(ml_dtypes.float8_e4m3fn).astype(F32).reshape(32, 8)
    scale = np.repeat(np.repeat(np.ldexp(1.0, e), 8, axis=0), 4, axis=1)
    want = np.clip(a.astype(F32) / scale, -448, 448).astype(ml_dtypes.float8_e4m3fn).astype(F32)
    np.testing.assert_array_equal(vals, want)


def test_quantize_mx_writes_only_its_scale_partitions_so_two_calls_pack_into_one_tile():
    # AWS's MXFP deep dive packs the scales of two quantize_mx calls into one tile, the second through a
    # view starting at partition 4; each call writes partitions 0-3 of every 32-partition quadrant of its
    # view and leaves the others alone (they keep the memset value here)
    @nki.jit(platform_target="trn3")
    def k(a, b):
        x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a)
        y = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=y, src=b)
        qa = nl.ndarray((64, 2), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        qb = nl.ndarray((64, 2), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        s = nl.ndarray((64, 2), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.memset(dst=s, value=7)
        nisa.quantize_mx(dst=qa, src=x, dst_scale=s)
        nisa.quantize_mx(dst=qb, src=y, dst_scale=s[4:, :])
        os_ = nl.ndarray((64, 2), dtype=nl.uint8, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=os_, src=s)
        return os_
    import ml_dtypes
    a = (_rand(64, 8) + 0.5).astype(ml_dtypes.bfloat16)
    b = (_rand(64, 8) * 40 + 1.0).astype(ml_dtypes.bfloat16)
    s = k(a, b).astype(np.int32)

    def exps(v):   # [8 groups of 8 partitions, 2 groups of 4 columns] -> biased E8M0 exponent
        amax = np.abs(v.astype(F32)).reshape(8, 8, 2, 4).max(axis=(1, 3))
        return np.floor(np.log2(amax)).astype(np.int32) - 8 + 127
    want = np.full((64, 2), 7, np.int32)
    want[[0, 1, 2, 3, 32, 33, 34, 35]] = exps(a)
    want[[4, 5, 6, 7, 36, 37, 38, 39]] = exps(b)
    np.testing.assert_array_equal(s, want)


def test_out_of_bounds_access_pattern_is_refused_only_when_accessed():
    # nki-library's output projection builds `w.ap(...)` for every index and skips the ones past the
    # end with a Python guard: creating the view is legal, accessing it is err_tensor_access_out_of_bound
    def kernel(use_last):
        @nki.jit
        def k(a):
            t = nl.ndarray((4, 8), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=a)
            o = nl.ndarray((4, 3), dtype=a.dtype, buffer=nl.shared_hbm)
            r = nl.ndarray((4, 3), dtype=a.dtype, buffer=nl.sbuf)
            for j in range(4):                       # column offsets 0, 2, 4, 6: the last ends past 8
                v = t.ap(pattern=[[8, 4], [1, 3]], offset=2 * j)
                if j < 3 or use_last:
                    nisa.tensor_copy(dst=r, src=v)
            nisa.dma_copy(dst=o, src=r)
            return o
        return k
    a = _rand(4, 8)
    np.testing.assert_array_equal(kernel(False)(a), a[:, 4:7])
    with pytest.raises(E.err_tensor_access_out_of_bound):
        kernel(True)(a)


def test_access_pattern_reinterpreting_a_tile_counts_partitions_in_its_own_elements():
    # nki-library's rmsnorm_quant stores an fp32 [P, 1] scale tile as 4 bytes per row through
    # `.ap(pattern=[[4, P], [1, 4]], dtype=nl.float8_e4m3)`: the partition step is 4 one-byte elements
    @nki.jit
    def k(a):
        t = nl.ndarray((16, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        o = nl.ndarray((16, 4), dtype=nl.uint8, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=t.ap(pattern=[[4, 16], [1, 4]], dtype=nl.uint8))
        return o
    a = _rand(16, 1)
    np.testing.assert_array_equal(k(a), a.view(np.uint8).reshape(16, 4))


def test_access_pattern_viewing_fp8_bytes_as_x4_counts_partitions_in_x4_elements():
    # nki-library's MXFP8 output projection views an fp8 [D, S*4] tile as [D, S] float8_e4m3fn_x4
    @nki.jit(platform_target="trn3")
    def k(a):
        t = nl.ndarray((8, 16), dtype=nl.float8_e4m3fn, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        o = nl.ndarray((8, 2), dtype=nl.float8_e4m3fn_x4, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=t.ap(pattern=[[4, 8], [1, 2]], offset=1, dtype=nl.float8_e4m3fn_x4))
        return o
    import ml_dtypes
    a = _rand(8, 16).astype(ml_dtypes.float8_e4m3fn)
    want = np.ascontiguousarray(a).view(np.uint32)[:, 1:3]
    np.testing.assert_array_equal(np.asarray(k(a)).view(np.uint32).reshape(8, 2), want)


def test_register_load_drives_a_dynamic_loop():
    # nki-library's dynamic-shape add loads its tile count into a register (register_load on the Sync
    # engine) and loops over it with nl.dynamic_range
    @nki.jit
    def k(a, n):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        cnt = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=cnt, src=n)
        reg = nisa.register_alloc(0)
        nisa.register_load(reg, cnt)
        t = nl.ndarray((4, 8), dtype=a.dtype, buffer=nl.sbuf)
        nisa.memset(dst=t, value=0.0)
        for _i in nl.dynamic_range(reg):
            nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
        back = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.register_store(back, reg)
        r = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=t)
        nisa.dma_copy(dst=r, src=back)
        return o, r
    o, r = k(np.zeros((4, 8), F32), np.array([[3]], dtype=np.int32))
    np.testing.assert_array_equal(o, np.full((4, 8), 3.0, F32))
    assert int(r[0, 0]) == 3
