"""Bad arguments raise NKI errors with a rule and the offending value, never a raw ``ValueError`` from
NumPy and never a silently truncated or wrapped value: fractional / negative tensor shapes, reduction
axes out of range, a non-numeric ``memset`` value, ``select_reduce`` operands of different sizes, and a
non-integer ``program_id`` axis. Kernels and inputs are ours."""
import numpy as np
import pytest

import torch_neuronx.nki.current.isa as nisa
import torch_neuronx.nki.current.language as nl
import torch_neuronx.nki.language as lnl
from torch_neuronx import nki as legacy
from torch_neuronx.nki import current as nki
from torch_neuronx.nki import errors as E

A = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)


def _sb(t):
    s = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=t)
    return s


@pytest.mark.parametrize("shape", [(128, 4.5), (128, -4), (128, "4")])
def test_a_tensor_shape_must_be_non_negative_integers(shape):
    # int() used to truncate 4.5 to a 4-wide tile with no error; -4 reached NumPy's ValueError
    @nki.jit
    def k(a):
        t = nl.ndarray(shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=1.0)
        return a
    with pytest.raises(E.err_invalid_instruction_argument, match="non-negative integer"):
        k(A)


def test_an_integral_float_dimension_is_that_integer():
    @nki.jit
    def k(a):
        t = nl.ndarray((128, a.shape[1] / 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[:, 0:32])
        o = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=t)
        return o
    np.testing.assert_array_equal(k(A), A[:, :32])


@pytest.mark.parametrize("axis", [5, -3, (1, 2)])
def test_a_reduction_axis_out_of_range_is_an_error_not_wrapped(axis):
    # axis 5 of a 2-D tile was taken modulo the rank: the sum over axis 1, with no error
    @nki.jit
    def k(a):
        o = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=o, data=_sb(a), op=nl.add, axis=axis)
        return a
    with pytest.raises(E.err_reduce_axis_not_trailing_free, match="out of range"):
        k(A)


def test_legacy_nl_reduction_axis_out_of_range():
    @legacy.jit
    def k(a):
        o = lnl.ndarray((128, 1), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(o, lnl.sum(lnl.load(a), axis=2, keepdims=True))
        return o
    with pytest.raises(E.err_reduce_axis_not_trailing_free, match="out of range"):
        k(A)


def test_memset_value_must_be_a_number():
    @nki.jit
    def k(a):
        t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value="x")
        return a
    with pytest.raises(E.err_invalid_instruction_argument, match="value must be a number"):
        k(A)


def test_select_reduce_operands_must_have_dst_elements():
    # nki.isa.select_reduce: "on_true, dst, and predicate must have identical shapes"
    @nki.jit
    def k(a, p):
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.select_reduce(dst=o, predicate=_sb(p), on_true=_sb(a), on_false=0.0)
        return a
    with pytest.raises(E.err_invalid_instruction_argument, match="elements per partition"):
        k(A, np.ones((128, 32), np.float32))


def test_select_reduce_still_selects_with_matching_operands():
    p = (A % 3 == 0).astype(np.float32)

    @nki.jit
    def k(a, p):
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.select_reduce(dst=o, predicate=_sb(p), on_true=_sb(a), on_false=-1.0)
        r = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=r, src=o)
        return r
    np.testing.assert_array_equal(k(A, p), np.where(p != 0, A, -1.0))


@pytest.mark.parametrize("front", ["current", "legacy"])
def test_program_id_axis_must_be_an_integer(front):
    lang, jit = (nl, nki.jit) if front == "current" else (lnl, legacy.jit)

    @jit
    def k(a):
        lang.program_id("x")
        return a
    with pytest.raises(E.err_invalid_program_axis, match="must be an integer"):
        k(A)


def test_tensor_scalar_op1_without_operand1_is_an_error_not_a_zero_operand():
    # nki.isa.tensor_scalar: "op1 and operand1 are optional, but must be None (default values) when
    # unused"; a missing operand1 used to be taken as 0 (x * 0 = 0 with no error)
    @nki.jit
    def k(a):
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=o, data=_sb(a), op0=nl.add, operand0=1.0, op1=nl.multiply)
        return a
    with pytest.raises(E.err_invalid_instruction_argument, match="op1 given without operand1"):
        k(A)

    @nki.jit
    def both(a):
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=o, data=_sb(a), op0=nl.add, operand0=1.0, op1=nl.multiply, operand1=0.5)
        r = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=r, src=o)
        return r
    np.testing.assert_array_equal(both(A), (A + 1.0) * 0.5)


@pytest.mark.parametrize("pattern", [[[64]], [[64, 128], [1, -1]], [64, 128]])
def test_an_access_pattern_entry_must_be_a_step_and_a_count(pattern):
    @nki.jit
    def k(a):
        v = _sb(a).ap(pattern=pattern, offset=0)
        o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=v)
        return o
    with pytest.raises(E.err_invalid_instruction_argument, match=r"\[step, num\] pair|num \(element count\)"):
        k(A)


def test_a_store_of_none_is_an_error_not_nan():
    # np.float32(None) is NaN: nl.store(o, None) wrote NaN into the output with no error
    @legacy.jit
    def k(a):
        o = lnl.ndarray((4, 4), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(o, None)
        return o
    with pytest.raises(E.err_invalid_instruction_argument, match="a tensor or a number"):
        k(A)

    @legacy.jit
    def fill(a):
        o = lnl.ndarray((4, 4), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(o, 3.0)
        return o
    np.testing.assert_array_equal(fill(A), np.full((4, 4), 3.0, np.float32))


@pytest.mark.parametrize("index", [1.5, None, True, [0, 1]])
def test_an_index_of_another_type_is_an_nki_error(index):
    # a float, None, a bool or a list reached slice code (AttributeError: no attribute 'step')
    @legacy.jit
    def k(a):
        t = lnl.ndarray((4, lnl.par_dim(128), 64), dtype=lnl.float32, buffer=lnl.sbuf)
        t[index] = lnl.load(a)
        return a
    with pytest.raises(E.err_invalid_instruction_argument):
        k(A)


def test_fractional_slice_bounds_and_nl_ds_starts_are_errors_integral_ones_work():
    @legacy.jit
    def frac(a):
        o = lnl.ndarray((4, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(o, lnl.load(a[lnl.ds(0.5, 4), :]))       # int() read rows 0..3
        return o
    with pytest.raises(E.err_invalid_instruction_argument, match="not an integer"):
        frac(A)

    @legacy.jit
    def neg(a):
        o = lnl.ndarray((4, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(o, lnl.load(a[lnl.ds(-1, 4), :]))
        return o
    with pytest.raises(E.err_tensor_access_out_of_bound, match="start is negative"):
        neg(A)

    @legacy.jit
    def half(a):
        o = lnl.ndarray((4, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(o, lnl.load(a[a.shape[0] / 32:a.shape[0] / 16, :]))   # 4.0:8.0
        return o
    np.testing.assert_array_equal(half(A), A[4:8])

    @legacy.jit
    def sl(a):
        o = lnl.ndarray((4, 64), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(o, lnl.load(a[0.5:4.5, :]))
        return o
    with pytest.raises(E.err_invalid_instruction_argument, match="not an integer"):
        sl(A)


@pytest.mark.parametrize("front", ["current", "legacy"])
@pytest.mark.parametrize("args", [(2.5,), ("4",), (0, 4, 0)])
def test_loop_bounds_must_be_integers_and_the_step_non_zero(front, args):
    # nl.affine_range(2.5) ran 2 iterations and nl.sequential_range("4") 4 (int() of each bound)
    lang, jit = (nl, nki.jit) if front == "current" else (lnl, legacy.jit)

    @jit
    def k(a):
        for _ in lang.sequential_range(*args):
            pass
        return a
    with pytest.raises(E.err_invalid_instruction_argument):
        k(A)


def _add_rows(a):
    o = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
    i = lnl.program_id(0) * 128 + lnl.arange(128)[:, None]
    j = lnl.arange(a.shape[1])[None, :]
    lnl.store(o[i, j], value=lnl.load(a[i, j]))
    return o


@pytest.mark.parametrize("grid", [2.5, "2", True, None, (2, 1.5)])
def test_a_launch_grid_dimension_must_be_an_integer(grid):
    # kernel[2.5] ran 2 program instances (int() truncated it: x.shape[0] / 128 instead of //), the
    # rows of the missing third left as poisoned NaN; kernel["2"] and kernel[True] ran too
    k = legacy.jit(_add_rows)
    with pytest.raises(TypeError, match="is not an integer; compute it with integer division"):
        k[grid](np.ones((384, 4), np.float32))


@pytest.mark.parametrize("grid", [-1, (2, -1)])
def test_a_launch_grid_dimension_must_not_be_negative(grid):
    # kernel[-1] ran nothing and blamed the kernel: "returned no output tensor"
    k = legacy.jit(_add_rows)
    with pytest.raises(ValueError, match="launch grid dimension -1 is negative"):
        k[grid](np.ones((256, 4), np.float32))


@pytest.mark.parametrize("grid", [3, 3.0, np.int64(3), lnl.spmd_dim(3)])
def test_integer_launch_grids_run_every_program(grid):
    a = np.arange(384 * 4, dtype=np.float32).reshape(384, 4)
    np.testing.assert_array_equal(legacy.jit(_add_rows)[grid](a), a)
