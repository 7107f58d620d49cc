"""One kernel per simulator check, each breaking exactly one rule.

Every check must raise the error class named after the AWS error code (all subclasses of NKIError)
with a message naming the code, the rule and the offending shape / buffer.
"""
import numpy as np
import pytest

from torch_neuronx import nki
from torch_neuronx.nki import instructions
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx.nki import errors as E

F32 = np.float32


def _raises(cls, kernel, *args, contains=(), **kwargs):
    with pytest.raises(E.NKIError) as ei:
        kernel(*args, **kwargs)
    err = ei.value
    assert type(err) is cls, f"expected {cls.__name__}, got {type(err).__name__}: {err}"
    msg = str(err)
    assert msg.startswith(f"[{cls.__name__}] rule: ") and cls.rule in msg
    for part in contains:
        assert part in msg, f"{part!r} not in {msg!r}"
    return err


def _out(shape=(128, 512)):
    return nl.ndarray(shape, dtype=nl.float32, buffer=nl.shared_hbm)


# --- 1. partitions <= 128 -------------------------------------------------------------------------
def test_sbuf_tile_256x512_exceeds_partitions():
    @nki.jit
    def k(a):
        _t = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.sbuf)
        o = _out()
        nl.store(o, value=nl.load(a))
        return o
    _raises(E.err_num_partition_exceed_arch_limit, k, np.zeros((128, 512), F32),
            contains=("[256, 512]", "sbuf", "256 partitions > 128"))


def test_matmul_contraction_over_128_partitions():
    @nki.jit
    def k(a, b):
        o = _out((64, 512))
        x = nl.load(a)                      # [256, 64]: K = 256 on the partition axis
        nl.store(o, value=nl.copy(nl.matmul(x, nl.load(b), transpose_x=True)))
        return o
    _raises(E.err_num_partition_exceed_arch_limit, k, np.zeros((256, 64), F32), np.zeros((256, 512), F32),
            contains=("[256, 64]",))


# --- 2. buffers per API ---------------------------------------------------------------------------
def test_store_from_psum_is_accepted():
    # AWS's compiler legalizes a store of a PSUM tile (its published legacy matmul tutorial does it); the
    # simulator stores the matmul result as it is.
    @nki.jit
    def k(a, b):
        o = _out((128, 512))
        res = nl.matmul(nl.load(a), nl.load(b), transpose_x=True)     # PSUM tile
        nl.store(o, value=res)
        return o
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 128)).astype(F32)
    b = rng.standard_normal((128, 512)).astype(F32)
    np.testing.assert_allclose(k(a, b), a.T @ b, rtol=1e-4, atol=1e-3)


def test_load_must_read_hbm():
    @nki.jit
    def k(a):
        o = _out()
        t = nl.load(a)
        nl.store(o, value=nl.load(t))
        return o
    _raises(E.err_unsupported_memory, k, np.zeros((128, 512), F32), contains=("load", "sbuf"))


def test_compute_on_hbm_is_rejected():
    @nki.jit
    def k(a):
        o = _out()
        nl.store(o, value=nl.exp(a))
        return o
    _raises(E.err_unsupported_memory, k, np.zeros((128, 512), F32), contains=("hbm", "[128, 512]"))


def test_nc_matmul_reads_sbuf_only():
    # current front end: nki.isa.nc_matmul reads SBUF (its page); the destination-passing call is the
    # instruction itself, so nothing inserts a copy
    import torch_neuronx.nki.current.isa as cisa
    import torch_neuronx.nki.current.language as cnl
    from torch_neuronx.nki import current as cnki

    @cnki.jit
    def k(a, b):
        o = cnl.ndarray((128, 512), dtype=cnl.float32, buffer=cnl.shared_hbm)
        x = cnl.ndarray((128, 128), dtype=cnl.float32, buffer=cnl.sbuf)
        y = cnl.ndarray((128, 512), dtype=cnl.float32, buffer=cnl.sbuf)
        cisa.dma_copy(dst=x, src=a)
        cisa.dma_copy(dst=y, src=b)
        p = cnl.ndarray((128, 512), dtype=cnl.float32, buffer=cnl.psum)
        cisa.nc_matmul(dst=p, stationary=x, moving=y)
        p2 = cnl.ndarray((128, 512), dtype=cnl.float32, buffer=cnl.psum)
        cisa.nc_matmul(dst=p2, stationary=x, moving=p)                     # moving from PSUM
        return o
    _raises(E.err_unsupported_memory, k, np.zeros((128, 128), F32), np.zeros((128, 512), F32),
            contains=("moving", "psum"))


def test_legacy_nc_matmul_copies_a_psum_operand_to_sbuf():
    # the legacy compiler legalizes a PSUM operand (AWS's flash-attention backward passes the PSUM
    # result of nc_transpose as the stationary)
    @nki.jit
    def k(a, b):
        o = _out((128, 512))
        p = nl.matmul(nl.load(a), nl.load(b), transpose_x=True)          # PSUM
        nl.store(o, value=nl.copy(nisa.nc_matmul(nl.load(a), p)))         # moving from PSUM
        return o
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 128)).astype(F32)
    b = rng.standard_normal((128, 512)).astype(F32)
    np.testing.assert_allclose(k(a, b), a.T @ (a.T @ b), rtol=1e-4, atol=1e-2)


def test_tensor_tensor_with_both_inputs_in_psum():
    @nki.jit
    def k(a, b):
        o = _out((128, 512))
        p1 = nl.matmul(nl.load(a), nl.load(b), transpose_x=True)
        p2 = nl.matmul(nl.load(a), nl.load(b), transpose_x=True)
        nl.store(o, value=nisa.tensor_tensor(p1, p2, nl.add))
        return o
    _raises(E.err_unsupported_memory, k, np.zeros((128, 128), F32), np.zeros((128, 512), F32),
            contains=("both inputs in PSUM",))


def test_gpsimd_cannot_touch_psum():
    @nki.jit
    def k(a, b):
        o = _out((128, 512))
        p = nl.matmul(nl.load(a), nl.load(b), transpose_x=True)
        s = nl.load(b)
        nl.store(o, value=nisa.tensor_tensor(p, s, nl.add, engine=nisa.engine.gpsimd))
        return o
    _raises(E.err_unsupported_memory, k, np.zeros((128, 128), F32), np.zeros((128, 512), F32),
            contains=("GpSimd", "psum"))


def test_matmul_destination_must_be_fp32_psum():
    @nki.jit
    def to_sbuf(a, b):
        o = _out((128, 512))
        dst = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        instructions.nc_matmul(dst, nl.load(a), nl.load(b))                         # destination-passing layer
        nl.store(o, value=dst)
        return o

    @nki.jit
    def to_bf16(a, b):
        o = _out((128, 512))
        dst = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.psum)
        instructions.nc_matmul(dst, nl.load(a), nl.load(b))
        nl.store(o, value=nl.copy(dst))
        return o
    args = np.zeros((128, 128), F32), np.zeros((128, 512), F32)
    _raises(E.err_unsupported_memory, to_sbuf, *args, contains=("dst", "sbuf"))
    _raises(E.err_unsupported_dtype, to_bf16, *args, contains=("float32", "bfloat16"))


# --- 3. matmul shapes -----------------------------------------------------------------------------
def test_matmul_moving_free_size_1024():
    @nki.jit
    def k(a, b):
        o = _out((128, 512))
        r = nl.matmul(nl.load(a), nl.load(b), transpose_x=True)          # moving [128, 1024]
        nl.store(o, value=nl.copy(r[:, 0:512]))
        return o
    _raises(E.err_size_of_dimension_exceed_arch_limit, k, np.zeros((128, 128), F32),
            np.zeros((128, 1024), F32), contains=("moving free size 1024 > 512",))


def test_matmul_stationary_free_size_over_128():
    @nki.jit
    def k(a, b):
        o = _out((128, 512))
        r = nisa.nc_matmul(nl.load(a), nl.load(b))                      # stationary [128, 256]
        nl.store(o, value=nl.copy(r[0:128, :]))
        return o
    _raises(E.err_size_of_dimension_exceed_arch_limit, k, np.zeros((128, 256), F32),
            np.zeros((128, 512), F32), contains=("stationary free size 256 > 128",))


def test_matmul_contraction_mismatch():
    @nki.jit
    def k(a, b):
        o = _out((128, 512))
        nl.store(o, value=nl.copy(nisa.nc_matmul(nl.load(a), nl.load(b))))
        return o
    _raises(E.err_num_partition_mismatch, k, np.zeros((128, 128), F32), np.zeros((64, 512), F32),
            contains=("stationary[128 partitions]", "moving[64 partitions]"))


def test_psum_tile_free_size_over_512():
    @nki.jit
    def k(a):
        _acc = nl.zeros((128, 1024), dtype=nl.float32, buffer=nl.psum)
        o = _out()
        nl.store(o, value=nl.load(a))
        return o
    _raises(E.err_size_of_dimension_exceed_arch_limit, k, np.zeros((128, 512), F32),
            contains=("[128, 1024]", "psum", "free size 1024 x 4 bytes > one 2048-byte bank"))


# --- 4. partitions of operands, scale/bias shape -------------------------------------------------------
def test_partition_mismatch_between_operands():
    @nki.jit
    def k(a, b):
        o = _out()
        nl.store(o, value=nisa.tensor_tensor(nl.load(a), nl.load(b), nl.add))
        return o
    _raises(E.err_num_partition_mismatch, k, np.zeros((128, 512), F32), np.zeros((1, 512), F32),
            contains=("data1[128 partitions]", "data2[1 partitions]"))


def test_partition_broadcast_must_be_explicit():
    @nki.jit
    def k(a, b):
        o = _out()
        nl.store(o, value=nl.load(a) + nl.load(b).broadcast_to((128, 512)))
        return o
    a, b = np.ones((128, 512), F32), np.arange(512, dtype=F32)[None, :]
    np.testing.assert_array_equal(k(a, b), a + b)


def test_activation_scale_must_be_scalar_or_p_by_1():
    @nki.jit
    def k(a, s):
        o = _out()
        nl.store(o, value=nisa.activation(nl.exp, nl.load(a), scale=nl.load(s)))
        return o
    _raises(E.err_activation_scale_scalar_or_vector, k, np.zeros((128, 512), F32), np.ones((128, 2), F32),
            contains=("scale", "[128, 2]"))


def test_activation_bias_partitions_must_match():
    @nki.jit
    def k(a, s):
        o = _out()
        nl.store(o, value=nisa.activation(nl.exp, nl.load(a), bias=nl.load(s)))
        return o
    _raises(E.err_activation_scale_scalar_or_vector, k, np.zeros((128, 512), F32), np.ones((64, 1), F32),
            contains=("bias", "[64, 1]"))


# --- 5. indexing ------------------------------------------------------------------------------------
def test_out_of_bounds_unmasked_access():
    @nki.jit
    def k(a):
        o = nl.ndarray((128, 4000), dtype=nl.float32, buffer=nl.shared_hbm)
        for i in nl.affine_range((4000 + 511) // 512):
            ix = nl.mgrid[0:128, 0:512]
            nl.store(o[ix.p, i * 512 + ix.x], value=nl.load(a[ix.p, i * 512 + ix.x]))
        return o
    _raises(E.err_tensor_access_out_of_bound, k, np.zeros((128, 4000), F32),
            contains=("[128, 4000]", "index range [3584, 4095] exceeds size 4000"))


def test_out_of_bounds_is_fine_when_masked():
    @nki.jit
    def k(a):
        o = nl.ndarray((128, 4000), dtype=nl.float32, buffer=nl.shared_hbm)
        for i in nl.affine_range((4000 + 511) // 512):
            ix = nl.mgrid[0:128, 0:512]
            live = i * 512 + ix.x < 4000
            nl.store(o[ix.p, i * 512 + ix.x], value=nl.load(a[ix.p, i * 512 + ix.x], mask=live), mask=live)
        return o
    a = np.random.default_rng(0).standard_normal((128, 4000), dtype=F32)
    np.testing.assert_array_equal(k(a), a)


def test_slice_past_the_end_is_out_of_bounds_too():
    @nki.jit
    def k(a):
        o = _out((100, 512))
        nl.store(o, value=nl.load(a[0:128, :])[0:100, :])
        return o
    _raises(E.err_tensor_access_out_of_bound, k, np.zeros((100, 512), F32), contains=("[0, 127]",))


def test_1d_arange_index_is_rejected():
    @nki.jit
    def k(a):
        o = _out((128, 1))
        t = nl.load(a)
        nl.store(o, value=nl.exp(t[nl.arange(128), 0]))
        return o
    _raises(E.err_1d_arange_not_supported, k, np.zeros((128, 512), F32), contains=("1-D arange",))


def test_mixing_slices_and_arange_is_rejected():
    @nki.jit
    def k(a):
        o = _out()
        i_p = nl.arange(128)[:, None]
        nl.store(o, value=nl.load(a[i_p, :]))
        return o
    _raises(E.err_unsupported_mixing_basic_advanced_tensor_indexing, k, np.zeros((128, 512), F32))


def test_partition_striding_is_rejected():
    @nki.jit
    def k(a):
        o = _out((64, 512))
        t = nl.load(a)
        nl.store(o, value=nl.exp(t[0:128:2, :]))
        return o
    _raises(E.err_partition_stride_not_supported, k, np.zeros((128, 512), F32), contains=("step 2",))


def test_partition_index_depending_on_free_index_is_rejected():
    @nki.jit
    def k(a):
        o = _out((128, 128))
        t = nl.load(a)
        i, j = nl.mgrid[0:128, 0:128]
        nl.store(o, value=nl.exp(t[j, i]))                # transposed access pattern on SBUF
        return o
    _raises(E.err_partition_stride_not_supported, k, np.zeros((128, 128), F32),
            contains=("dimension 0 of the access is not the partition dimension",))


def test_reduction_over_partition_or_non_trailing_axis():
    @nki.jit
    def k(a, axis):
        o = _out((128, 128))
        t = nl.load(a.reshape((128, 4, 128)))
        nl.store(o, value=nl.sum(t, axis=axis))
        return o

    @nki.jit
    def k_isa(a):
        o = _out((128, 128))
        t = nl.load(a.reshape((128, 4, 128)))
        nl.store(o, value=nisa.tensor_reduce(np.add, t, axis=1))
        return o
    a = np.arange(128 * 512, dtype=F32).reshape(128, 512) % 7
    # nl reductions: AWS's compiler permutes the access pattern, so any free axes may be reduced
    # (AWS's 2D-pooling example reduces axes [2, 4]); the partition axis never.
    np.testing.assert_array_equal(k(a, 1), a.reshape(128, 4, 128).sum(axis=1))
    _raises(E.err_reduce_axis_not_trailing_free, k, a, 0, contains=("axis 0",))
    # nisa.tensor_reduce keeps its page's rule: trailing free axes only
    _raises(E.err_reduce_axis_not_trailing_free, k_isa, a, contains=("axis",))


def test_reduction_over_trailing_axes_is_allowed():
    @nki.jit
    def k(a):
        o = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a.reshape((128, 4, 128)))
        nl.store(o, value=nl.sum(t, axis=2))
        return o
    a = np.random.default_rng(0).standard_normal((128, 512), dtype=F32)
    np.testing.assert_allclose(k(a), a.reshape(128, 4, 128).sum(axis=2), rtol=1e-5, atol=1e-5)


# --- 6. affine_range write-write conflicts ----------------------------------------------------------
def _same_tile_each_iteration(loop):
    @nki.jit
    def k(a):
        o = _out()
        for i in loop(4):
            nl.store(o, value=nl.load(a[:, i * 512:(i + 1) * 512]))   # every iteration writes all of o
        return o
    return k


def test_write_write_conflict_across_affine_range_iterations():
    k = _same_tile_each_iteration(nl.affine_range)
    _raises(E.err_unexpected_output_dependencies, k, np.zeros((128, 2048), F32),
            contains=("iterations 0 and 1", "[128, 512]", "shared_hbm"))


def test_same_writes_in_sequential_range_are_allowed():
    a = np.random.default_rng(0).standard_normal((128, 2048), dtype=F32)
    np.testing.assert_array_equal(_same_tile_each_iteration(nl.sequential_range)(a), a[:, 1536:])


def test_sbuf_conflict_and_psum_accumulation_exception():
    @nki.jit
    def sbuf_acc(a):
        o = _out()
        acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        for i in nl.affine_range(4):
            acc[...] = nl.add(acc, nl.load(a[:, i * 512:(i + 1) * 512]))
        nl.store(o, value=acc)
        return o
    _raises(E.err_unexpected_output_dependencies, sbuf_acc, np.zeros((128, 2048), F32), contains=("sbuf",))

    @nki.jit
    def psum_acc(a, b):
        o = _out()
        acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
        for i in nl.affine_range(4):
            acc += nl.matmul(nl.load(a[i * 128:(i + 1) * 128, :]), nl.load(b[i * 128:(i + 1) * 128, :]),
                             transpose_x=True)
        nl.store(o, value=nl.copy(acc))
        return o
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((512, 128), dtype=F32), rng.standard_normal((512, 512), dtype=F32)
    np.testing.assert_allclose(psum_acc(a, b), a.T @ b, rtol=1e-4, atol=1e-3)


# --- 7. inputs read-only, outputs written ---------------------------------------------------------------
def test_output_never_written():
    @nki.jit
    def k(a):
        o = _out()
        for _ in nl.affine_range(128 // 129):      # a dead loop: the store never runs
            nl.store(o, value=nl.load(a))
        return o
    _raises(E.err_tensor_output_not_written_to, k, np.zeros((128, 512), F32), contains=("[128, 512]",))


def test_kernel_without_output():
    @nki.jit
    def k(a):
        nl.load(a)
    _raises(E.err_tensor_output_not_written_to, k, np.zeros((128, 512), F32), contains=("no output",))


def test_input_written_to():
    @nki.jit
    def k(a):
        nl.store(a, value=nl.exp(nl.load(a)))
        return a
    _raises(E.err_cannot_update_immutable_parameter, k, np.zeros((128, 512), F32),
            contains=("'a' [128, 512]", "hbm"))


def test_input_array_of_caller_is_untouched():
    @nki.jit
    def k(a):
        o = _out()
        nl.store(o, value=nl.load(a) + 1.0)
        return o
    a = np.zeros((128, 512), F32)
    assert np.all(k(a) == 1.0) and np.all(a == 0.0)


# --- 8. poisoned allocations ----------------------------------------------------------------------
def test_poisoned_read_shows_as_nan():
    @nki.jit
    def k(a):
        o = _out()
        t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        t[0:64, :] = nl.load(a[0:64, :])          # half the tile is never initialised
        nl.store(o, value=t)
        return o
    out = k(np.ones((128, 512), F32))
    assert np.all(out[:64] == 1.0) and np.isnan(out[64:]).all()


def test_poisoned_integer_tile_reads_4():
    @nki.jit
    def k(a):
        o = nl.ndarray((128, 8), dtype=nl.int32, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 8), dtype=nl.int32, buffer=nl.sbuf)
        nl.store(o, value=t)
        return o
    assert np.all(k(np.zeros((1, 1), F32)) == 4)


# --- capacities, scope ----------------------------------------------------------------------------------
def test_sbuf_capacity_per_platform():
    @nki.jit(platform_target="trn1")
    def trn1(a):
        o = _out()
        _big = nl.ndarray((128, 50 * 1024), dtype=nl.float32, buffer=nl.sbuf)   # 200 KiB per partition
        nl.store(o, value=nl.load(a))
        return o
    _raises(E.err_buffer_capacity_exceeded, trn1, np.zeros((128, 512), F32), contains=("196608", "trn1"))

    @nki.jit(platform_target="trn2")
    def trn2(a):
        o = _out()
        _big = nl.ndarray((128, 50 * 1024), dtype=nl.float32, buffer=nl.sbuf)   # fits in 224 KiB
        nl.store(o, value=nl.load(a))
        return o
    assert trn2(np.ones((128, 512), F32)).shape == (128, 512)


def test_psum_holds_eight_banks():
    # nine [128, 512] fp32 tiles (2 KiB each) live at once: written, then all read
    @nki.jit
    def k(a):
        o = _out()
        banks = [nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(9)]
        acc = nl.load(a)
        for b in banks:
            acc = nl.add(acc, b)
        nl.store(o, value=acc)
        return o
    _raises(E.err_buffer_capacity_exceeded, k, np.zeros((128, 512), F32), contains=("psum", "16384"))


def test_psum_tile_is_free_after_its_last_use():
    # AWS's compiler allocates PSUM by live range: a tile still named by a Python variable but never
    # used again does not occupy a bank (nki-library's MoE kernels keep `tmp` from the previous set)
    @nki.jit
    def k(a):
        o = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        acc[...] = nl.multiply(x, 0.0)
        for _rep in range(3):                # a Python loop: every pass allocates eight fresh banks
            banks = []
            for _ in range(8):
                tmp = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
                tmp[...] = nl.add(x, 1.0)
                banks.append(tmp)
            for b in banks:
                acc[...] = nl.add(acc, b)
        nl.store(o, value=acc)
        return o
    a = np.random.rand(128, 512).astype(F32)
    np.testing.assert_allclose(k(a), 24 * (a + 1), rtol=1e-6)


def test_api_outside_kernel():
    with pytest.raises(E.err_nki_api_outside_of_nki_kernel):
        nl.zeros((128, 512), dtype=nl.float32)


def test_shared_hbm_inside_loop():
    @nki.jit
    def k(a):
        for _i in nl.affine_range(2):
            o = _out()
        return o
    _raises(E.err_shared_hbm_must_in_kernel_level, k, np.zeros((1, 1), F32))


def test_every_error_class_is_an_nkierror_named_after_its_code():
    assert len(E.ALL_ERRORS) >= 20
    for cls in E.ALL_ERRORS:
        assert issubclass(cls, E.NKIError) and cls.__name__ == cls.code and cls.__name__.startswith("err_")


# --- the remaining enforced rules, one kernel each -------------------------------------------------
import torch_neuronx.nki.current.isa as cisa  # noqa: E402
import torch_neuronx.nki.current.language as cnl  # noqa: E402
from torch_neuronx.nki import current as cnki  # noqa: E402


def _a():
    return np.ones((128, 512), F32)


@pytest.mark.parametrize(
    "operand, dtype, error",
    [
        ("bias", "int32", E.err_activation_bias_invalid_type),
        ("scale", "bfloat16", E.err_activation_scale_invalid_type),
    ],
)
def test_activation_bias_or_scale_vector_of_a_wrong_dtype(operand, dtype, error):
    @nki.jit
    def k(a):
        o = _out()
        t = nl.load(a)
        v = nl.zeros((128, 1), dtype=getattr(nl, dtype))
        nl.store(o, value=nisa.activation(op=nl.exp, data=t, **{operand: v}))
        return o
    _raises(error, k, _a(), contains=(dtype,))


def test_item_assignment_into_an_index_expression():
    @nki.jit
    def k(a):
        i = nl.arange(128)[:, None]
        i[0] = 1
        return a
    _raises(E.err_cannot_assign_to_index, k, _a())


def test_if_on_an_arange_expression():
    @nki.jit
    def k(a):
        o = _out()
        j = nl.arange(512)[None, :]
        if j > 256:
            nl.store(o, value=nl.load(a))
        return o
    _raises(E.err_control_flow_condition_depending_on_arange, k, _a())


def test_python_and_of_two_masks_keeps_the_last_mask_with_a_warning():
    # AWS's nc_match_replace8 test writes mask=(ix < n // 2 and iy < m // 2) and its golden values hold
    # when the expression is the second mask (Python's `and` once the first mask is taken as true)
    @nki.jit
    def k(a):
        o = _out()
        ix, iy = nl.mgrid[0:128, 0:512]
        t = nl.load(a)
        z = nl.zeros((128, 512), dtype=nl.float32)
        z[ix, iy] = nl.add(t[ix, iy], 1.0, mask=(ix < 64 and iy < 256))
        nl.store(o, value=z)
        return o
    a = np.random.default_rng(0).standard_normal((128, 512)).astype(F32)
    with pytest.warns(E.NKIWarning, match=r"keeps only the last mask.*use `m1 & m2`"):
        got = k(a)
    cols = np.arange(512)[None, :] < 256                  # every row: the first mask (ix < 64) is dropped
    np.testing.assert_array_equal(got, np.where(cols, a + 1, 0).astype(F32))


@pytest.mark.parametrize("spelling", ["if", "or", "not", "if_and"])
def test_masks_in_control_flow_or_or_not_raise(spelling):
    @nki.jit
    def k(a):
        o = _out()
        ix, iy = nl.mgrid[0:128, 0:512]
        m1, m2 = ix < 64, iy < 256
        if spelling == "if":
            if m1:
                pass
        elif spelling == "or":
            _m = m1 or m2
        elif spelling == "not":
            _m = not m1
        else:
            if m1 and m2:
                pass
        nl.store(o, value=nl.load(a))
        return o
    _raises(E.err_control_flow_condition_depending_on_arange, k, _a())


def test_range_over_a_tile_value():
    @nki.jit
    def k(a):
        o = _out()
        n = nl.load(a[0:1, 0:1])
        for _i in range(n):
            nl.store(o, value=nl.load(a))
        return o
    _raises(E.err_dynamic_control_flow_not_supported, k, _a())


def test_core_barrier_over_two_cores_in_a_one_core_launch():
    @cnki.jit
    def k(a):
        o = cnl.ndarray(a.shape, dtype=a.dtype, buffer=cnl.shared_hbm)
        t = cnl.ndarray(a.shape, dtype=a.dtype, buffer=cnl.sbuf)
        cisa.dma_copy(dst=t, src=a)
        cisa.dma_copy(dst=o, src=t)
        cisa.core_barrier(o, cores=(0, 2))          # a logical NeuronCore has cores 0 and 1 only
        return o
    _raises(E.err_core_barrier_mismatch, k, _a(), contains=("cores=(0, 2)",))


def test_load_transpose2d_of_a_3d_tensor():
    @nki.jit
    def k(a):
        o = _out((4, 4))
        nl.store(o, value=nl.load_transpose2d(a)[:, :, 0])
        return o
    _raises(E.err_exceed_max_supported_dimension, k, np.ones((4, 4, 2), F32), contains=("rank 2",))


def test_block_tensor_used_as_an_operand_without_its_block_index():
    @nki.jit
    def k(a):
        o = _out()
        t = nl.ndarray((2, nl.par_dim(128), 4), dtype=nl.float32, buffer=nl.sbuf)
        t[0] = nl.load(a[:, 0:4])
        t[1] = nl.load(a[:, 0:4])
        nl.store(o[:, 0:8], value=nl.exp(t))
        return o
    _raises(E.err_failed_to_infer_tile_from_local_tensor, k, _a())


def test_hbm_tensor_created_with_zeros():
    @nki.jit
    def k(a):
        o = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        return o
    _raises(E.err_hbm_tensor_with_init_value_not_supported, k, _a())


def test_dynamic_index_tile_with_a_free_size_of_two():
    @nki.jit
    def k(a, idx):
        o = _out((128, 512))
        i = nl.load(idx)                        # [128, 2] int32: one index per partition expected
        nl.store(o, value=nl.load(a[i, nl.arange(512)[None, :]]))
        return o
    _raises(E.err_indirect_indices_free_dim, k, _a(), np.zeros((128, 2), np.int32))


def test_program_id_of_an_axis_the_grid_does_not_have():
    @nki.jit
    def k(a):
        o = _out()
        _ = nl.program_id(1)
        nl.store(o, value=nl.load(a))
        return o
    _raises(E.err_invalid_program_axis, k[2], _a(), contains=("program_id(1)",))


def test_block_dimension_in_the_current_front_end():
    @cnki.jit
    def k(a):
        _t = cnl.ndarray((2, nl.par_dim(128), 512), dtype=cnl.float32, buffer=cnl.sbuf)
        return a
    _raises(E.err_leading_dimension_of_tensor_must_be_partition, k, _a())


def test_nested_kernel_called_with_a_grid():
    @nki.jit
    def inner(a):
        o = _out()
        nl.store(o, value=nl.load(a))
        return o

    @nki.jit
    def k(a):
        return inner[2](a)
    _raises(E.err_nested_kernel_with_spmd_grid, k, _a())


def test_copy_into_a_smaller_destination():
    @nki.jit
    def k(a):
        o = _out((128, 4))
        nl.store(o, value=nl.load(a))               # a [128, 8] tile into [128, 4]
        return o
    _raises(E.err_store_dst_shape_smaller_than_other_shape, k, np.ones((128, 8), F32))


def test_mask_that_does_not_cover_the_access():
    @nki.jit
    def k(a):
        o = _out()
        i = nl.arange(3)[:, None]
        nl.store(o, value=nl.load(a), mask=(i < 2))
        return o
    _raises(E.err_unsupported_expression_in_mask, k, _a())


def test_neuroncore_v4_instruction_on_trn2():
    @cnki.jit(platform_target="trn2")
    def k(a):
        o = cnl.ndarray(a.shape, dtype=a.dtype, buffer=cnl.shared_hbm)
        t = cnl.ndarray(a.shape, dtype=a.dtype, buffer=cnl.sbuf)
        cisa.dma_copy(dst=t, src=a)
        cisa.activate2(dst=t, op=cnl.exp, data=t, imm0=1.0, imm1=0.0, op0=cnl.multiply, op1=cnl.add)
        cisa.dma_copy(dst=o, src=t)
        return o
    _raises(E.err_unsupported_on_target, k, _a(), contains=("NeuronCore-v4",))


# Classes defined for completeness of AWS's error list whose rule the simulator does not check:
# annotated assignments are Python annotations (never evaluated on locals), and a legacy
# nt.mutable_tensor parameter written and not returned is written back to the caller's array.
NOT_ENFORCED = {"err_annotation_shape_mismatch", "err_mutable_parameter_not_returned"}


def test_every_enforced_error_class_has_a_source_and_a_failing_kernel_here():
    import os
    import re
    here = os.path.dirname(__file__)
    text = "".join(open(os.path.join(here, f)).read() for f in os.listdir(here) if f.endswith(".py"))
    missing = [c.__name__ for c in E.ALL_ERRORS
               if c.__name__ not in NOT_ENFORCED and not re.search(rf"E\.{c.__name__}\b", text)]
    assert not missing, f"error classes with no test naming them: {missing}"
    for c in E.ALL_ERRORS:
        assert re.match(r"aws-neuron/[\w-]+@[0-9a-f]{7}:\S+", c.source), (c.__name__, c.source)


# --- rules of the nki.isa pages that AWS's corpora never break (checked on the three corpora) ---------
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_bitvec_operators_need_integer_tiles(dtype):
    # AWS's tensor_tensor / tensor_scalar / tensor_reduce pages: "For bitvec operators, the input/output
    # data types must be integer types"
    @nki.jit
    def k(a):
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        x = nisa.tensor_tensor(t, t, op=nl.bitwise_xor)
        nl.store(o, value=nisa.tensor_scalar(x, np.left_shift, 1))
        return o
    a = np.arange(128 * 64, dtype=dtype).reshape(128, 64)
    if dtype == np.float32:
        _raises(E.err_unsupported_dtype, k, a, contains=("bitvec operator bitwise_xor", "float32"))
    else:
        np.testing.assert_array_equal(k(a), np.left_shift(np.bitwise_xor(a, a), 1))


def test_bitvec_reduction_of_a_float_tile():
    @nki.jit
    def k(a):
        o = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(o, value=nisa.tensor_reduce(np.bitwise_or, nl.load(a), axis=1))
        return o
    _raises(E.err_unsupported_dtype, k, np.ones((128, 64), F32), contains=("bitwise_or",))


@pytest.mark.parametrize("n", [4, 8])
def test_find_index8_needs_8_to_16384_data_elements(n):
    # nc_find_index8 page: "The data tensor must have between 8 and 16,384 elements per partition"
    @nki.jit
    def k(a, v):
        o = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
        nl.store(o, value=nisa.nc_find_index8(data=nl.load(a), vals=nl.load(v)))
        return o
    a = np.tile(np.arange(n, dtype=F32)[::-1], (128, 1))
    v = np.tile(np.array([0, 1, 2, 3, 0, 1, 2, 3], F32), (128, 1))
    if n < 8:
        _raises(E.err_invalid_instruction_argument, k, a, v, contains=("4 elements per partition", "8 to 16,384"))
    else:
        want = np.tile(np.array([7, 6, 5, 4, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF], np.uint32), (128, 1))
        np.testing.assert_array_equal(k(a, v), want)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_an_indirect_dma_index_tile_must_be_integer(dtype):
    # a row index is read as an integer (dma_copy page: "one row index per partition"; DGE deep dive:
    # index tensor "dtype uint32"): a float tile would address other rows on a NeuronCore
    @nki.jit
    def k(a, idx):
        o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        it = nl.load(idx)
        ip, jf = nl.arange(128)[:, None], nl.arange(64)[None, :]
        nl.store(o, value=nl.load(a[it[ip, 0], jf]))
        return o
    a = np.random.default_rng(1).standard_normal((128, 64)).astype(F32)
    rows = np.arange(128)[::-1].copy()
    if dtype == np.float32:
        _raises(E.err_unsupported_dtype, k, a, rows.astype(F32).reshape(128, 1),
                contains=("index tile", "integer dtype"))
    else:
        np.testing.assert_array_equal(k(a, rows.astype(np.int32).reshape(128, 1)), a[rows])
